"""Bad input, fuzzed with hypothesis: only clear errors, never a traceback, nothing half written.

Targets: the trace importers, the tree loader, the events reader, the script
loader, and the CLI (``sessions``, ``billing``, ``view``, ``import``, ``resume``,
``run --script``) over random argv and damaged session files. Inputs are mostly
*mutations of real data* (the shared Jaeger/OTLP fixtures, a recorded session,
the built-in script), which reach much deeper than random bytes.
"""

from __future__ import annotations

import copy
import contextlib
import gzip
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from otel_agents.llm.scripts import Script, ScriptError, load_script, parse_script
from otel_agents.persistence.events_file import EventsFileError, EventsWriter, read_event_lines, repair_torn_tail
from otel_agents.tracing.decoding import ImportFormatError
from otel_agents.tracing.trace_text import decode_trace_text
from otel_agents.persistence.store import SessionStore, StoreError, decode_payload
from otel_agents.tracing.spandata import SpanData
from reliability_helpers import invoke, session_id_of, snapshot
from support.shared_fixtures import fixture_files, require_fixtures
from support.stderr_lines import error_lines

FIXTURE_FILES = [p for p in fixture_files("*/*.json") if p.exists()]
BUILTIN_SCRIPT = Path(__file__).resolve().parents[2] / "otel_agents" / "llm" / "scripts" / "jack-and-jill.json"

# OTEL_AGENTS_FUZZ_EXAMPLES=N runs N examples per property (a longer hunt than the default run).
_EXAMPLES = int(os.environ.get("OTEL_AGENTS_FUZZ_EXAMPLES") or 0)
FUZZ = settings(max_examples=_EXAMPLES or 60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FUZZ_CLI = settings(max_examples=_EXAMPLES or 40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# --------------------------------------------------------------------------- strategies

# Small numbers only: a fuzzed script must not make the scripted model sleep for long.
scalars = (st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([2**63, -(2**63) - 1, 10**30])
           | st.floats(-2, 2, allow_nan=False) | st.text(max_size=12)
           | st.sampled_from(["", "0", "ffffffffffffffff", "0" * 32, "AAAAAAAAAAA=", "ERROR", "CLIENT",
                              "msg_000001", "agent_001", "task", "discuss", "main", "chat x", "-1", "1e400"]))
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def _slots(value: Any, path: tuple = ()) -> list[tuple]:
    """Every place in a JSON document (as a path of keys/indexes), the root included."""
    out = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _slots(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _slots(item, path + (index,))
    return out


def _get(doc: Any, path: tuple) -> Any:
    for key in path:
        doc = doc[key]
    return doc


@st.composite
def mutated(draw, document: Any, rounds: int = 3) -> Any:
    """The document with a few places replaced, removed, duplicated or retyped."""
    doc = copy.deepcopy(document)
    for _ in range(draw(st.integers(1, rounds))):
        slots = _slots(doc)
        path = draw(st.sampled_from(slots))
        action = draw(st.sampled_from(["replace", "delete", "duplicate", "wrap", "empty"]))
        if not path:
            if action == "replace":
                doc = draw(json_values)
            continue
        parent, key = _get(doc, path[:-1]), path[-1]
        if action == "replace":
            parent[key] = draw(json_values)
        elif action == "delete":
            del parent[key]
        elif action == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
        elif action == "wrap":
            parent[key] = [parent[key]]
        elif action == "empty":
            parent[key] = type(parent[key])() if isinstance(parent[key], (dict, list, str)) else None
    return doc


def one_line(message: str) -> None:
    assert message and "\n" not in message and "Traceback" not in message, message


# --------------------------------------------------------------------------- importers


def _fixture_docs() -> list[tuple[str, Any]]:
    return [(p.name, json.loads(p.read_text())) for p in FIXTURE_FILES]


def check_import(data: bytes | str) -> None:
    try:
        spans = decode_trace_text(data, "fuzzed.json")
    except ImportFormatError as exc:
        one_line(str(exc))
        assert str(exc).startswith("fuzzed.json:"), str(exc)  # it names the file and the place
        return
    assert spans and all(isinstance(s, SpanData) for s in spans)


def test_the_fixtures_import_unchanged():
    """The seeds of the mutations are good input: a mutation's failure is the mutation's doing."""
    require_fixtures()
    assert len(FIXTURE_FILES) >= 6
    for path in FIXTURE_FILES:
        assert decode_trace_text(path.read_bytes(), path.name)


@FUZZ
@given(data=st.data())
def test_importers_refuse_mutated_fixtures_clearly(data):
    require_fixtures()
    name, doc = data.draw(st.sampled_from(_fixture_docs()))
    check_import(json.dumps(data.draw(mutated(doc))))


@FUZZ
@given(data=st.data())
def test_importers_refuse_cut_and_garbled_files_clearly(data):
    require_fixtures()
    raw = FIXTURE_FILES[data.draw(st.integers(0, len(FIXTURE_FILES) - 1))].read_bytes()
    kind = data.draw(st.sampled_from(["cut", "flip", "lines", "bytes"]))
    if kind == "cut":
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    elif kind == "flip":
        at = data.draw(st.integers(0, len(raw) - 1))
        raw = raw[:at] + bytes([data.draw(st.integers(0, 255))]) + raw[at + 1:]
    elif kind == "lines":  # as JSON lines, one of them damaged
        compact = json.dumps(json.loads(raw)).encode()
        raw = compact + b"\n" + compact[: data.draw(st.integers(0, len(compact)))] + b"\n"
    else:
        raw = data.draw(st.binary(max_size=200))
    check_import(raw)


# --------------------------------------------------------------------------- tree loader


@pytest.fixture(scope="module")
def recorded_home(tmp_path_factory) -> tuple[Path, str]:
    """A home holding one real session (the built-in demo), recorded once for the whole module."""
    home = tmp_path_factory.mktemp("fuzz-home") / "home"
    result = invoke(["run", "Create Jack and Jill for a cafe discussion"], env=_env(home))
    assert result.exit_code == 0, result.output
    return home, session_id_of(result.stderr)


def _env(home: Path) -> dict[str, str]:
    return {"OTEL_AGENTS_HOME": str(home), "OTEL_TRACES_EXPORTER": "none", "OTEL_SDK_DISABLED": None,
            "OTEL_EXPORTER_OTLP_ENDPOINT": None, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": None,
            "OTEL_AGENTS_PRICES": None, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def _payload(recorded_home) -> dict[str, Any]:
    home, session_id = recorded_home
    return json.loads(gzip.decompress((home / "sessions" / session_id / "tree.json.gz").read_bytes()))


def check_tree_bytes(data: bytes) -> None:
    try:
        payload = decode_payload(data, "tree.json.gz")
    except StoreError as exc:
        one_line(str(exc))
        assert "tree.json.gz" in str(exc)
        return
    assert isinstance(payload, dict) and isinstance(payload["session"], dict)


@FUZZ
@given(data=st.data())
def test_the_tree_loader_refuses_damaged_files_clearly(data, recorded_home):
    good = gzip.compress(json.dumps(_payload(recorded_home)).encode())
    kind = data.draw(st.sampled_from(["cut", "flip", "bytes", "gzip of bytes", "gzip of json"]))
    if kind == "cut":
        check_tree_bytes(good[: data.draw(st.integers(0, len(good) - 1))])
    elif kind == "flip":
        at = data.draw(st.integers(0, len(good) - 1))
        check_tree_bytes(good[:at] + bytes([good[at] ^ data.draw(st.integers(1, 255))]) + good[at + 1:])
    elif kind == "bytes":
        check_tree_bytes(data.draw(st.binary(max_size=100)))
    elif kind == "gzip of bytes":
        check_tree_bytes(gzip.compress(data.draw(st.binary(max_size=100))))
    else:
        check_tree_bytes(gzip.compress(json.dumps(data.draw(json_values)).encode()))


def test_a_missing_or_unreadable_tree_is_a_store_error(tmp_path):
    store = SessionStore(tmp_path / "s")
    (tmp_path / "s").mkdir()
    with pytest.raises(StoreError, match="does not exist"):
        store.load_tree()
    store.tree_path.mkdir()  # a directory where the file should be
    with pytest.raises(StoreError, match="cannot read"):
        store.load_tree()


# --------------------------------------------------------------------------- events reader


@FUZZ
@given(data=st.data())
def test_the_events_reader_reads_whole_lines_or_names_the_bad_one(data, recorded_home, tmp_path_factory):
    home, session_id = recorded_home
    good = (home / "sessions" / session_id / "events.jsonl").read_bytes()
    lines = good.splitlines(keepends=True)
    kind = data.draw(st.sampled_from(["cut", "damage a line", "bytes", "mutate a record"]))
    path = Path(tempfile.mkdtemp(dir=tmp_path_factory.getbasetemp())) / "events.jsonl"
    complete = None
    if kind == "cut":  # a crash mid-write: every complete line survives, the torn one is skipped
        ends = [i for i, byte in enumerate(good) if byte == ord("\n")]
        # Anywhere, or just before/after a newline (a write cut right at the end of its record).
        if data.draw(st.booleans()):
            cut = data.draw(st.integers(0, len(good)))
        else:
            cut = min(len(good), data.draw(st.sampled_from(ends)) + data.draw(st.integers(0, 1)))
        path.write_bytes(good[:cut])
        complete = good[:cut].count(b"\n")
    elif kind == "damage a line":
        index = data.draw(st.integers(0, len(lines) - 1))
        lines[index] = data.draw(st.binary(max_size=40)) + b"\n"
        path.write_bytes(b"".join(lines))
    elif kind == "bytes":
        path.write_bytes(data.draw(st.binary(max_size=200)))
    else:
        index = data.draw(st.integers(0, len(lines) - 1))
        record = json.loads(lines[index])
        lines[index] = json.dumps(data.draw(mutated(record))).encode() + b"\n"
        path.write_bytes(b"".join(lines))
    warnings: list[str] = []
    try:
        read = read_event_lines(path, warnings.append)
    except EventsFileError as exc:
        one_line(str(exc))
        assert str(exc).startswith(f"{path}:"), str(exc)
        assert complete is None  # a cut file is never an error
        return
    for message in warnings:
        one_line(message)
    if complete is not None:
        tail = path.read_bytes().rsplit(b"\n", 1)[-1]
        whole_tail = _is_record(tail)
        assert len(read) == complete + (1 if whole_tail else 0)
        assert len(warnings) == (1 if tail and not whole_tail else 0)
        # The writer's repair before its next append must keep exactly what readers were shown.
        repair_torn_tail(path)
        assert read_event_lines(path, warnings.append) == read


def _is_record(raw: bytes) -> bool:
    try:
        value = json.loads(raw)
    except ValueError:
        return False
    return isinstance(value, dict) and "event_type" in value and "message_id" in value


def test_a_whole_last_record_without_its_newline_survives_the_next_append(tmp_path):
    """A write cut just before its newline (EFBIG/ENOSPC): readers accept the record, so the writer must keep it."""
    path = tmp_path / "events.jsonl"
    first = {"message_id": "msg_000001", "event_type": "agent_created", "agent_id": "agent_001", "name": "main"}
    second = {"message_id": "msg_000002", "event_type": "transcript_entry", "agent_id": "agent_001",
              "role": "user", "content": "hi"}
    path.write_bytes(json.dumps(first).encode() + b"\n" + json.dumps(second).encode())
    shown = [line.record for line in read_event_lines(path, lambda m: None)]
    assert [r["message_id"] for r in shown] == ["msg_000001", "msg_000002"]
    writer = EventsWriter(path, warn=lambda m: None)
    writer.append({"message_id": "msg_000003", "event_type": "transcript_entry", "agent_id": "agent_001",
                   "role": "assistant", "content": "hello"}, 1_700_000_000_000_000_000, None, None)
    writer.close()
    after = [line.record["message_id"] for line in read_event_lines(path, lambda m: None)]
    assert after == ["msg_000001", "msg_000002", "msg_000003"]


# --------------------------------------------------------------------------- script loader


def _script_doc() -> dict[str, Any]:
    return json.loads(BUILTIN_SCRIPT.read_text())


def check_script(doc: Any) -> Script | None:
    try:
        script = parse_script(doc, "fuzzed.json")
    except ScriptError as exc:
        one_line(str(exc))
        assert str(exc).startswith("fuzzed.json"), str(exc)
        return None
    assert isinstance(script, Script)
    return script


@FUZZ
@given(data=st.data())
def test_the_script_loader_refuses_mutated_scripts_clearly(data):
    check_script(data.draw(mutated(_script_doc(), rounds=4)))


@FUZZ
@given(json_values)
def test_the_script_loader_refuses_random_documents_clearly(doc):
    check_script(doc)


@FUZZ
@given(st.binary(max_size=120) | st.text(max_size=120).map(str.encode))
def test_load_script_refuses_unreadable_files_clearly(raw):
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "script.json"
        path.write_bytes(raw)
        try:
            load_script(str(path))
        except ScriptError as exc:
            one_line(str(exc))
            assert str(path) in str(exc)


# --------------------------------------------------------------------------- the CLI


def _fresh_home(recorded_home, scratch: Path) -> Path:
    home = scratch / "home"
    shutil.copytree(recorded_home[0], home, symlinks=True)
    return home


def check_cli(args: list[str], home: Path, scratch: Path, allowed: frozenset[int] = frozenset({0, 2}),
              writes_on: frozenset[int] = frozenset({0})):
    """An allowed exit code, no traceback; a refusal (exit 2) says why and changed nothing.

    ``scratch`` holds the home and every path a fuzzed argv can name (it is the working
    directory while the command runs, so relative paths land there too); it must be unchanged
    unless the exit code is in ``writes_on`` (a run that ran and then failed in the model
    has a session to save: exit 1 for ``run`` and ``resume``).
    """
    before = snapshot(scratch)
    with contextlib.chdir(scratch):  # a fuzzed relative path lands in scratch, never in the repository
        result = invoke(args, env=_env(home), input="")
    if currently_in_test_context():  # statistics for --hypothesis-show-statistics
        event(f"{args[0]} exit {result.exit_code}")
    where = f"argv={args!r}\n{result.output}"
    assert result.exception is None or isinstance(result.exception, SystemExit), f"{where}\n{result.exception!r}"
    assert "Traceback" not in result.output, where
    assert result.exit_code in allowed, where
    if result.exit_code not in writes_on:
        assert snapshot(scratch) == before, f"a failing command changed files: {where}"
    if result.exit_code == 2:  # a one-line refusal, or the usage text of a group called without a command
        assert "Error" in result.stderr or result.output.startswith("Usage:"), where
    return result


def _tokens(session_id: str, scratch: Path) -> list[str]:
    files = [str(scratch / "inputs" / p.name) for p in FIXTURE_FILES[:3]]
    return [
        session_id, session_id[:-1], "20260101-000000-000000", "../" + session_id, "", "-", "--", ".",
        "--json", "--help", "--sessions-dir", "--billing-file", str(scratch / "nowhere"), str(scratch),
        "--by", "session", "agent", "model", "day", "week", "--since", "--until", "2026-01-01", "2026-13-01",
        "yesterday", "--session", "--format", "csv", "jsonl", "xml", "--dry-run", "-o", str(scratch / "out.txt"),
        "agents", "dialog", "perspective", "transcript", "trace", "heard", "context", "main", "Jack", "Jill",
        "main/Jill", "agent_002", "agent_999", "msg_000001", "msg_999999", "0000000000000000", "ffffffffffffffff",
        "--model", "--api-base", "--max-turns", "--max-attempts", "--timeout", "0", "-1", "nan", "1e9",
        "--script", "no-such-script", "--otlp-file", str(scratch / "spans.jsonl"), "-v", "--trace-llm",
        "list", "show", "verify", "rm", "summary", "export", "rebuild", *files,
    ]


VIEWS = ["agents", "dialog", "perspective", "transcript", "trace", "heard", "context"]


def _scratch(tmp_path_factory) -> Path:
    scratch = Path(tempfile.mkdtemp(dir=tmp_path_factory.getbasetemp()))
    (scratch / "inputs").mkdir()
    for path in FIXTURE_FILES:  # copies: a fuzzed command must never write into the shared fixtures
        shutil.copy(path, scratch / "inputs" / path.name)
    return scratch


@FUZZ_CLI
@given(data=st.data())
def test_random_argv_gets_only_clear_errors(data, recorded_home, tmp_path_factory):
    scratch = _scratch(tmp_path_factory)
    home = _fresh_home(recorded_home, scratch)
    session_id = recorded_home[1]
    tokens = _tokens(session_id, scratch)
    heads = [["sessions"], ["billing"], ["view"], ["import"], ["resume"],
             ["sessions", "list"], ["sessions", "show"], ["sessions", "verify"], ["sessions", "rm"],
             ["billing", "summary"], ["billing", "export"], ["billing", "rebuild"],
             ["view", session_id], ["resume", session_id]]
    heads += [["view", session_id, name] for name in VIEWS]
    command = data.draw(st.sampled_from(heads))
    argv = data.draw(st.lists(st.sampled_from(tokens) | st.text(max_size=6), max_size=5))
    allowed, writes_on = frozenset({0, 2}), frozenset({0})
    if command[0] == "resume":
        # A valid resume really runs (scripted model); running out of turns is exit 1 after a saved run.
        argv = argv + ["--max-turns", "3"]
        allowed, writes_on = frozenset({0, 1, 2}), frozenset({0, 1})
    check_cli(command + argv, home, scratch, allowed, writes_on)
    shutil.rmtree(scratch)


@FUZZ_CLI
@given(data=st.data())
def test_import_of_mutated_traces_is_all_or_nothing(data, recorded_home, tmp_path_factory):
    require_fixtures()
    scratch = _scratch(tmp_path_factory)
    home = _fresh_home(recorded_home, scratch)
    name, doc = data.draw(st.sampled_from(_fixture_docs()))
    path = scratch / "fuzzed.json"
    path.write_text(json.dumps(data.draw(mutated(doc))))
    result = check_cli(["import", str(path)], home, scratch)
    if result.exit_code == 0:
        # What was imported is a readable session: shown, viewed and verified without complaint.
        for line in result.stdout.splitlines():
            session_id = line.split()[1].rstrip(":")
            check_cli(["sessions", "show", session_id], home, scratch)
            check_cli(["view", session_id, "agents"], home, scratch)
            check_cli(["sessions", "verify", session_id], home, scratch, frozenset({0}))
    shutil.rmtree(scratch)


SESSION_FILES = ["tree.json.gz", "events.jsonl", "spans.jsonl", "meta.json"]


@FUZZ_CLI
@given(data=st.data())
def test_damaged_session_files_get_only_clear_errors(data, recorded_home, tmp_path_factory):
    scratch = _scratch(tmp_path_factory)
    home = _fresh_home(recorded_home, scratch)
    session_id = recorded_home[1]
    directory = home / "sessions" / session_id
    name = data.draw(st.sampled_from(SESSION_FILES))
    target = directory / name
    raw = target.read_bytes()
    asked, chat = _a_call_of(directory)  # before the damage: what view context is asked about
    kind = data.draw(st.sampled_from(["cut", "flip", "mutate", "remove"]))
    if kind == "cut":
        target.write_bytes(raw[: data.draw(st.integers(0, len(raw) - 1))])
    elif kind == "flip":
        at = data.draw(st.integers(0, len(raw) - 1))
        target.write_bytes(raw[:at] + bytes([raw[at] ^ data.draw(st.integers(1, 255))]) + raw[at + 1:])
    elif kind == "remove":
        target.unlink()
    elif name == "tree.json.gz":
        target.write_bytes(gzip.compress(json.dumps(data.draw(mutated(_payload(recorded_home)))).encode()))
    else:
        lines = raw.splitlines(keepends=True) if name != "meta.json" else [raw]
        index = data.draw(st.integers(0, len(lines) - 1))
        lines[index] = json.dumps(data.draw(mutated(json.loads(lines[index])))).encode() + b"\n"
        target.write_bytes(b"".join(lines))
    command = data.draw(st.sampled_from([
        ["sessions", "show", session_id], ["sessions", "list"], ["sessions", "verify", session_id],
        ["view", session_id, "agents"], ["view", session_id, "dialog", "Jack", "Jill"],
        ["view", session_id, "perspective", "Jill"], ["billing", "rebuild", "--dry-run"],
        ["resume", session_id, "hello again", "--max-turns", "3"],
        ["view", session_id, "context", asked], ["view", session_id, "context", chat],
    ]))
    # verify names disagreements with exit 1; a resumed run may end in a runtime error (exit 1).
    allowed = frozenset({0, 1, 2}) if command[1] == "verify" or command[0] == "resume" else frozenset({0, 2})
    writes_on = frozenset({0, 1}) if command[0] == "resume" else frozenset({0})
    check_cli(command, home, scratch, allowed, writes_on)
    shutil.rmtree(scratch)


def _a_call_of(directory: Path) -> tuple[str, str]:
    """The last assistant entry's message id and the first chat span's id of a saved session."""
    records = [json.loads(line) for line in (directory / "events.jsonl").read_text().splitlines()]
    asked = [r["message_id"] for r in records if r.get("role") == "assistant"][-1]
    spans = [json.loads(line) for line in (directory / "spans.jsonl").read_text().splitlines()]
    chat = next(s["start"] for s in spans if str(s.get("name", "")).startswith("chat "))
    return asked, chat


def _waits_long(doc: Any) -> bool:
    """A retry_after the scripted model would honour for more than a moment."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key == "retry_after" and not (isinstance(value, (int, float)) and value <= 0.2) and value is not None:
                return True
            if _waits_long(value):
                return True
    elif isinstance(doc, list):
        return any(_waits_long(v) for v in doc)
    return False


@settings(FUZZ_CLI, max_examples=_EXAMPLES or 25)  # each example may be a whole run
@given(data=st.data())
def test_run_with_a_fuzzed_script_file_is_a_run_or_a_clear_error(data, tmp_path_factory):
    scratch = _scratch(tmp_path_factory)
    home = scratch / "home"
    doc = data.draw(mutated(_script_doc(), rounds=4))
    assume(not _waits_long(doc))  # keep each run quick
    path = scratch / "fuzzed-script.json"
    path.write_text(json.dumps(doc))
    result = check_cli(["run", "--script", str(path), "--max-turns", "8", "hello"], home, scratch,
                       frozenset({0, 1, 2}), frozenset({0, 1}))
    if result.exit_code == 1:  # the run went wrong in a way the runtime names (too many turns, a failed call)
        assert error_lines(result.stderr), result.output
    shutil.rmtree(scratch)


# --------------------------------------------------------------------------- found by fuzzing
# Each damage below once produced a traceback; kept as fixed examples so that a fresh checkout
# (no hypothesis database) fails on them every time until they are fixed.


def _edit_events(change, kind: str | None = None):
    """Change the first record (of ``kind``, if given) of events.jsonl."""
    def apply(directory: Path) -> None:
        path = directory / "events.jsonl"
        lines = path.read_text().splitlines()
        index = next(i for i, line in enumerate(lines) if kind is None or json.loads(line)["event_type"] == kind)
        record = json.loads(lines[index])
        change(record)
        lines[index] = json.dumps(record)
        path.write_text("\n".join(lines) + "\n")
    return apply


def _edit_first_tool_call(change):
    """Change the first tool call of the first entry of events.jsonl that has one."""
    def apply(directory: Path) -> None:
        path = directory / "events.jsonl"
        lines = path.read_text().splitlines()
        index = next(i for i, line in enumerate(lines) if json.loads(line).get("tool_calls"))
        record = json.loads(lines[index])
        change(record["tool_calls"][0])
        lines[index] = json.dumps(record)
        path.write_text("\n".join(lines) + "\n")
    return apply


def _edit_meta(change):
    def apply(directory: Path) -> None:
        path = directory / "meta.json"
        meta = json.loads(path.read_text())
        change(meta)
        path.write_text(json.dumps(meta))
    return apply


def _first_llm_op(session):
    return session["runs"][0]["turns"][0]["ops"][0]


def _first_llm_entry(session):
    return _first_llm_op(session)["accounting"][0]


def _edit_journal(change):
    def apply(directory: Path) -> None:
        path = directory / "spans.jsonl"
        lines = path.read_text().splitlines()
        index = next(i for i, line in enumerate(lines) if '"start"' in line)
        line = json.loads(lines[index])
        change(line)
        lines[index] = json.dumps(line)
        path.write_text("\n".join(lines) + "\n")
    return apply


def _edit_tree(change):
    def apply(directory: Path) -> None:
        path = directory / "tree.json.gz"
        payload = json.loads(gzip.decompress(path.read_bytes()))
        change(payload["session"])
        path.write_bytes(gzip.compress(json.dumps(payload).encode()))
    return apply


def _set(key, value):
    return lambda d: d.__setitem__(key, value)


DAMAGE = {
    "events: message_id is a list": (_edit_events(_set("message_id", [])), ["sessions", "verify", "{sid}"]),
    "events: agent_id is a list": (_edit_events(_set("agent_id", ["agent_001"])), ["view", "{sid}", "agents"]),
    "events: ts is not a timestamp": (_edit_events(lambda r: r.__setitem__("ts", r["ts"].replace(".", "/"))),
                                      ["resume", "{sid}", "hi"]),
    "journal: kind is a list": (_edit_journal(_set("kind", ["INTERNAL"])), ["resume", "{sid}", "hi"]),
    "tree: an event without ts (verify)": (_edit_tree(lambda s: s["runs"][0]["events"][0].pop("ts")),
                                           ["sessions", "verify", "{sid}"]),
    "tree: an event without ts (resume)": (_edit_tree(lambda s: s["runs"][0]["events"][0].pop("ts")),
                                           ["resume", "{sid}", "hi"]),
    "tree: runs is not a list (show)": (_edit_tree(_set("runs", {"a": 1})), ["sessions", "show", "{sid}"]),
    "tree: runs is not a list (rebuild)": (_edit_tree(_set("runs", {"a": 1})), ["billing", "rebuild", "--dry-run"]),
    "tree: an op without kind": (_edit_tree(lambda s: s["runs"][0]["turns"][0]["ops"][0].pop("kind")),
                                 ["sessions", "show", "{sid}"]),
    "tree: no totals": (_edit_tree(lambda s: s.pop("totals")), ["sessions", "show", "{sid}"]),
    # Found on 2026-11-22 with OTEL_AGENTS_FUZZ_EXAMPLES up to 2,000:
    "meta: runs is a list": (_edit_meta(_set("runs", [1])), ["sessions", "list"]),
    "meta: a total is a list": (_edit_meta(lambda m: m["totals"].__setitem__("cost_usd", [0.1])), ["sessions", "list"]),
    "events: an agent named 1": (_edit_events(_set("name", 1), "agent_created"), ["view", "{sid}", "agents"]),
    "events: substance is a list": (_edit_events(_set("substance", []), "transcript_entry"),
                                    ["view", "{sid}", "perspective", "main"]),
    "events: content is a list of parts": (
        _edit_events(_set("content", [{"type": "text", "text": "Be brief."}]), "transcript_entry"),
        ["view", "{sid}", "perspective", "main"]),
    "journal: a trace id that is not hex": (_edit_journal(lambda line: line.__setitem__("trace", "g" * 32)),
                                            ["resume", "{sid}", "hi"]),
    "journal: the run's script is a list": (
        _edit_journal(lambda line: line["attrs"].__setitem__("otel_agents.run.script", ["x"])),
        ["resume", "{sid}", "hi"]),
    "tree: an attempt without its cost": (_edit_tree(lambda s: _first_llm_entry(s).pop("cost_usd")),
                                          ["sessions", "verify", "{sid}"]),
    "tree: an entry type is a list": (_edit_tree(lambda s: _first_llm_entry(s).__setitem__("type", ["llm"])),
                                      ["sessions", "show", "{sid}"]),
    "tree: a span total is a list": (
        _edit_tree(lambda s: s["runs"][0]["turns"][0]["attributes"].__setitem__(
            "otel_agents.totals.self.cost_usd", [0.1])),
        ["sessions", "verify", "{sid}"]),
    # Found by the suite's own run in CI on 2026-11-22 (KeyError in verify):
    "tree: an operation without its end": (
        _edit_tree(lambda s: _first_llm_op(s).pop("ended_ns")), ["sessions", "verify", "{sid}"]),
    # Found with OTEL_AGENTS_FUZZ_EXAMPLES=3000 on 2026-11-22 (AttributeError in the perspective view):
    "events: a tool call's function is a list": (
        _edit_first_tool_call(lambda call: call.__setitem__("function", [call["function"]])),
        ["view", "{sid}", "perspective", "main"]),
    # Found by the suite's own run in CI on 2026-11-22 (IndexError ordering records in resume):
    "tree: a record's message id is empty": (
        _edit_tree(lambda s: s["runs"][0]["events"][0]["record"].__setitem__("message_id", "")),
        ["resume", "{sid}", "hello again", "--max-turns", "3"]),
    # Found with view context among the fuzzed commands, 2026-11-22 (KeyError rebuilding a message):
    "events: a transcript entry without its role (context)": (
        _edit_events(lambda r: r.pop("role"), "transcript_entry"), ["view", "{sid}", "context", "msg_000004"]),
    "events: a transcript entry without its role (transcript)": (
        _edit_events(lambda r: r.pop("role"), "transcript_entry"), ["view", "{sid}", "transcript", "main"]),
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_known_damage_gets_a_clear_error(case, recorded_home, tmp_path_factory):
    damage, command = DAMAGE[case]
    scratch = _scratch(tmp_path_factory)
    home = _fresh_home(recorded_home, scratch)
    session_id = recorded_home[1]
    damage(home / "sessions" / session_id)
    args = [part.format(sid=session_id) for part in command]
    # Recovering (exit 0, e.g. resume from the other files) or refusing (exit 2) are both fine;
    # verify may also name the damage as a disagreement (exit 1). A traceback is not.
    allowed = frozenset({0, 1, 2}) if command[:2] == ["sessions", "verify"] else frozenset({0, 2})
    check_cli(args, home, scratch, allowed)


SCRIPT_DAMAGE = {
    "fail_first_attempt.status is a list": lambda d: d["agents"]["main"][3]["fail_first_attempt"].__setitem__(
        "status", [429]),
    "root.name is null": lambda d: d["root"].__setitem__("name", None),
    "hooks is true": lambda d: d.__setitem__("hooks", True),
    "tool_calls is a number": lambda d: d["agents"]["main"][0].__setitem__("tool_calls", 5),
}


@pytest.mark.parametrize("case", list(SCRIPT_DAMAGE))
def test_known_bad_scripts_are_refused_clearly(case, tmp_path_factory):
    doc = _script_doc()
    SCRIPT_DAMAGE[case](doc)
    check_script(doc)
    scratch = _scratch(tmp_path_factory)
    path = scratch / "bad-script.json"
    path.write_text(json.dumps(doc))
    # Refused (exit 2, nothing written) or read with a sensible default and run (exit 0): never a traceback.
    check_cli(["run", "--script", str(path), "hello"], scratch / "home", scratch, frozenset({0, 2}))
