"""tree_file.py is the one decoder of tree.json.gz: nothing else in the package decompresses or parses it."""

from __future__ import annotations

import ast
import gzip
from pathlib import Path

import orjson
import pytest

from otel_agents.persistence.tree_encoding import encode_payload
from otel_agents.persistence.tree_file import (
    TREE_FILE, StoreError, UnknownTreeVersion, decode_payload, make_payload, read_payload,
)

PACKAGE = Path(__file__).resolve().parents[2] / "otel_agents"
DECODER = "otel_agents/persistence/tree_file.py"
# What the decoder calls: the gzip members' codec (it compresses for writers, decompresses for the decoder
# only) and the flat form of deep trees (version 2).
CODECS = ("otel_agents/persistence/tree_encoding.py", "otel_agents/persistence/tree_flat.py")
# Calls that decode tree.json.gz's bytes or its version-2 form.
DECODING_CALLS = {"decompress", "decompressobj", "decode_payload", "unflatten_session", "unflatten", "GzipFile"}
# Modules whose gzip is not tree.json.gz: OTLP request bodies (Content-Encoding: gzip). They must
# not name the tree file either, which test_other_gzip_users_never_name_the_tree_file checks.
OTHER_GZIP = ("otel_agents/collect/http_receiver.py",)
COMPRESSION_MODULES = {"gzip"}  # zlib is also a checksum (views/cache.py): its decompress calls are what count


def decoding_sites(source: str, where: str) -> list[str]:
    """Imports of gzip, calls that decompress or decode a tree, and the file's name, as ``where:line: what``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names if a.name in COMPRESSION_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module in COMPRESSION_MODULES:
            found.append((node.lineno, f"from {node.module} import ..."))
        elif isinstance(node, ast.Call):
            function = node.func
            name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
            if name in DECODING_CALLS:
                found.append((node.lineno, f"{name}(...)"))
        elif isinstance(node, ast.Constant) and node.value == TREE_FILE:
            found.append((node.lineno, f"the file name {TREE_FILE!r} spelled out"))
    return [f"{where}:{line}: {what}" for line, what in sorted(found)]


def test_the_check_finds_a_second_decoder():
    """The check itself: each way a module could read the tree on its own is reported."""
    source = (
        "import gzip\nfrom zlib import decompress\nimport orjson\n"  # the zlib import itself is not flagged
        "def read(path):\n    return orjson.loads(gzip.decompress(path.read_bytes()))\n"
        "def raw(data):\n    return decompress(data)\n"
        "def other(d, store):\n    return store.decode_payload(d, 'x')\n"
        "NAME = 'tree.json.gz'\n"
    )
    assert [site.split(": ", 1)[1] for site in decoding_sites(source, "m.py")] == [
        "import gzip", "decompress(...)", "decompress(...)", "decode_payload(...)",
        "the file name 'tree.json.gz' spelled out",
    ]


def test_only_tree_file_decodes_tree_json_gz():
    sites = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).as_posix()
        if relative == DECODER or relative in CODECS or relative in OTHER_GZIP:
            continue
        sites += decoding_sites(path.read_text(encoding="utf-8"), relative)
    # views/loading.py names the file without importing the store (a test checks the two names agree).
    allowed = {site for site in sites if site.startswith("otel_agents/views/loading.py:")
               and site.endswith(f"the file name {TREE_FILE!r} spelled out")}
    assert [site for site in sites if site not in allowed] == []
    assert len(allowed) == 1


def test_other_gzip_users_never_name_the_tree_file():
    for relative in OTHER_GZIP:
        source = (PACKAGE.parent / relative).read_text(encoding="utf-8")
        assert TREE_FILE not in source and "tree_file" not in source and "decode_payload" not in source


def test_the_codec_decompresses_only_for_the_decoder():
    """tree_encoding.py's ``TreeEncoder.decompress`` is called by tree_file.py alone."""
    callers = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).as_posix()
        if relative == DECODER or relative in OTHER_GZIP:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "decompress" and relative not in CODECS):
                callers.append(f"{relative}:{node.lineno}")
    assert callers == []


def test_a_payload_round_trips_and_each_damage_is_one_line(tmp_path):
    from otel_agents.persistence.tree import build_tree

    payload = make_payload(build_tree([], "s"), {"id": "s"})
    data = encode_payload(payload)
    assert decode_payload(data, "t") == orjson.loads(orjson.dumps(payload))
    path = tmp_path / TREE_FILE
    with pytest.raises(StoreError, match="does not exist"):
        read_payload(path)
    for bad, message in [
        (b"not gzip", "truncated or corrupt"),
        (data[: len(data) // 2], "truncated or corrupt"),
        (gzip.compress(b"{"), "does not hold valid JSON"),
        (gzip.compress(b"[]"), "does not hold a tree payload object"),
        (gzip.compress(orjson.dumps({"version": 1})), "has no session node"),
    ]:
        path.write_bytes(bad)
        with pytest.raises(StoreError, match=message) as info:
            read_payload(path)
        assert "\n" not in str(info.value) and not isinstance(info.value, UnknownTreeVersion)


@pytest.mark.parametrize("version", [3, "1", None, 0])
def test_an_unknown_version_is_its_own_error(version):
    with pytest.raises(UnknownTreeVersion, match=f"tree version {version!r}"):
        decode_payload(gzip.compress(orjson.dumps({"version": version, "session": {}})), "t")
