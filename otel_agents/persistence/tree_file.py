"""``tree.json.gz``'s payload: the one place its bytes are decoded (and its payload shaped for writing).

The file holds ``{"version": 1, "session": ..., "meta": ...}``, or, for a tree too deep
to nest in JSON, version 2 with each run stored as a flat list of its nodes (tree_flat.py:
no depth limit). Its gzip members are tree_encoding.py's business; what they hold is
decoded here and checked to be shaped as ``build_tree`` makes it, so every reader (the
saved-session loader, the views, billing, the writer that resumes a session) gets the
same payload or the same one-line :class:`StoreError`. ``tests/test_layers.py`` checks
that no other module decompresses or parses it.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any, Mapping

import orjson

from otel_agents.persistence.gc_pause import collector_paused
from otel_agents.persistence.tree_encoding import TreeEncoder, decompress_tree
from otel_agents.persistence.tree_flat import FlatError, deeper_than, flat_session, unflatten_session
from otel_agents.persistence.tree_shape import ShapeError, check_session_shape

TREE_FILE = "tree.json.gz"
TREE_VERSION = 1  # every node nested in its parent: what trees of ordinary depth are written as
FLAT_TREE_VERSION = 2  # runs as flat node lists: trees nested deeper than NESTED_LEVELS
READABLE_TREE_VERSIONS = (TREE_VERSION, FLAT_TREE_VERSION)
# Tree levels written nested: each is two JSON levels (a list and an object), and orjson
# refuses more than 255; the rest is for what a node holds (records, attributes).
NESTED_LEVELS = 60


class StoreError(ValueError):
    """A session file that cannot be read or written; the message is one line (store.py re-exports it)."""


class UnknownTreeVersion(StoreError):
    """A tree.json.gz written by another otel-agents: not damage, and never guessed at."""


def decode_payload(data: bytes, where: str, encoder: TreeEncoder | None = None) -> dict[str, Any]:
    """The payload ``data`` (a tree.json.gz's bytes) holds; StoreError naming ``where`` otherwise.

    ``encoder``: the next writer's, which remembers the file's members (a resumed session
    then compresses only what its new runs changed).
    """
    # A large tree is millions of acyclic objects: automatic collections would walk them again and again.
    with collector_paused():
        return _decode(data, where, encoder)


def _decode(data: bytes, where: str, encoder: TreeEncoder | None) -> dict[str, Any]:
    try:
        raw = encoder.decompress(data) if encoder is not None else decompress_tree(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise StoreError(f"{where} is truncated or corrupt ({type(exc).__name__}: {exc})") from None
    try:
        payload = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise StoreError(f"{where} does not hold valid JSON ({exc})") from None
    if not isinstance(payload, dict):
        raise StoreError(f"{where} does not hold a tree payload object")
    version = payload.get("version")
    if type(version) is not int or version not in READABLE_TREE_VERSIONS:
        raise UnknownTreeVersion(f"{where} has tree version {version!r}; this otel-agents reads versions 1 and 2")
    if not isinstance(payload.get("session"), dict):
        raise StoreError(f"{where} has no session node")
    try:
        if version == FLAT_TREE_VERSION:
            unflatten_session(payload["session"], "session")
        check_session_shape(payload["session"])
    except (ShapeError, FlatError) as exc:
        raise StoreError(f"{where} is damaged: {exc}") from None
    return payload


def read_payload(path: Path, encoder: TreeEncoder | None = None) -> dict[str, Any]:
    """:func:`decode_payload` of the file at ``path``; a missing or unreadable file is a StoreError too."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise StoreError(f"{path} does not exist") from None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from None
    return decode_payload(data, str(path), encoder)


def make_payload(tree: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    """What tree.json.gz holds: the session as it is, or, nested deeper than JSON allows,
    with its runs as flat node lists (version 2)."""
    if deeper_than(tree, NESTED_LEVELS):
        return {"version": FLAT_TREE_VERSION, "session": flat_session(tree), "meta": meta}
    return {"version": TREE_VERSION, "session": tree, "meta": meta}
