"""Processes killed mid-run: the journal and events.jsonl recover everything that ended, unfinished work
is shown interrupted by every reader without writing, the owner's repair (or resume) records it and
bills the crashed run exactly once, and the session verifies."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from otel_agents.cli import cli
from otel_agents.persistence.repair import flush_unbilled
from otel_agents.persistence.saved import SOURCE_CHECKPOINT, SOURCE_JOURNAL, SOURCE_TREE, load_saved
from otel_agents.persistence.events_file import read_event_lines
from otel_agents.persistence.journal import read_journal, spans_from_journal
from otel_agents.persistence.ledger_read import read_records
from otel_agents.persistence.ownership import take
from otel_agents.persistence.store import SessionStore, make_payload
from otel_agents.persistence.session_meta import effective_status, make_meta
from otel_agents.persistence.tree import build_tree
from otel_agents.persistence.tree_walk import iter_nodes, iter_ops, iter_records
from otel_agents.persistence.verify import compare_ledger, compare_records, verify_session

KILLER = Path(__file__).with_name("kill_after_spans.py")
PROMPT = "Create Jack and Jill for a cafe discussion"

CRASHING_RUN = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from pathlib import Path
    from otel_agents.llm.client import LLMClient
    from otel_agents.llm.scripts import load_script
    from otel_agents.persistence.recorder import CheckpointPolicy, SessionRecorder
    from otel_agents.persistence.store import SessionStore
    from otel_agents.runtime.scenario import build_session
    from otel_agents.runtime.tools import make_tool
    from otel_agents.tracing.setup import TracingOptions, configure_tracing

    script_path, sessions_dir, billing = sys.argv[1:4]

    def crash() -> str:
        '''Dies like a process killed by the OOM killer.'''
        os.kill(os.getpid(), signal.SIGKILL)

    tracing = configure_tracing(TracingOptions(batch=False))
    session = build_session(load_script(script_path), telemetry=tracing.telemetry,
                            llm=LLMClient(tracing.telemetry), tools=[make_tool(crash)])
    print(session.id, flush=True)
    store = SessionStore.create(Path(sessions_dir), session.id)
    recorder = SessionRecorder(store, session.id, billing_file=Path(billing),
                               policy=CheckpointPolicy(growth=0, min_bytes=0, during_runs=True))
    tracing.add_processor(recorder)
    tracing.add_listener(recorder)
    asyncio.run(session.run("Ask the helper, then crash"))
    """
)


def invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_killed_run_is_recovered_from_the_journal_and_billed_once(tmp_path, home, monkeypatch):
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    script = {
        "name": "crash-mid-run",
        "agents": {
            "main": [
                {"tool_calls": [{"name": "task", "arguments": {"name": "Helper", "system_prompt": "Help.",
                                                               "user_prompt": "Say hi."}}]},
                {"tool_calls": [{"name": "crash", "arguments": {}}]},
                "never said",
            ],
            "Helper": ["hi from the helper"],
        },
    }
    script_path = tmp_path / "crash.json"
    script_path.write_text(json.dumps(script))
    sessions_dir, billing = home / "sessions", home / "billing.jsonl"
    proc = subprocess.run(
        [sys.executable, "-c", CRASHING_RUN, str(script_path), str(sessions_dir), str(billing)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    session_id = proc.stdout.strip()
    store = SessionStore(sessions_dir / session_id)
    assert not billing.exists()  # the run never reached its end
    # The last checkpoint (the helper's end) lacks what ended after it: the task call, main's second attempt.
    checkpoint = store.load_tree()
    assert {ref.label: ref.op["status"] for ref in iter_ops(checkpoint)}["1-2"] == "in_progress"
    assert compare_records(checkpoint, read_event_lines(store.events_path)) != []

    # Readers: the open spans are interrupted, ended at the session's last sign of life; nothing is written.
    before = snapshot(home)
    warnings: list[str] = []
    artifacts = load_saved(store.directory, warnings.append)
    assert artifacts.source == SOURCE_JOURNAL and not artifacts.recovered and artifacts.interrupted == 3
    assert warnings == []
    tree = artifacts.tree
    run = tree["runs"][0]
    last_seen = max(node["ended_ns"] or node["started_ns"] for _, node in iter_nodes(tree))
    assert run["status"] == "interrupted" and run["ended_ns"] == last_seen
    assert tree["status"] == "interrupted" and tree["success"] is False
    by_label = {ref.label: ref.op for ref in iter_ops(tree)}
    assert by_label["1-1"]["status"] == by_label["1-2"]["status"] == "ok"  # the task call did end
    assert by_label["1-2-2"]["session"]["agent_name"] == "Helper" and by_label["1-2-2"]["status"] == "ok"
    assert by_label["2-1"]["kind"] == "llm" and by_label["2-1"]["status"] == "ok"
    crash = by_label["2-2"]
    assert crash["kind"] == "tool" and crash["status"] == "interrupted" and crash["accounting"] == []
    assert crash["error"].startswith("interrupted:")
    assert [t["status"] for t in run["turns"]] == ["ok", "interrupted"]
    assert compare_records(tree, read_event_lines(store.events_path)) == []
    assert artifacts.records == [line.record for line in read_event_lines(store.events_path)]
    assert effective_status(store.read_meta(), store.directory) == "interrupted"
    shown = invoke("sessions", "show", session_id)
    assert shown.exit_code == 0 and "2-2 " in shown.stdout and "interrupted" in shown.stdout
    verified = invoke("sessions", "verify", session_id)
    assert verified.exit_code == 0 and "interrupted, recoverable (3 spans without an end)" in verified.stdout
    assert snapshot(home) == before

    # The owner's repair records the ends readers showed and bills the run once.
    repaired = invoke("sessions", "repair", session_id)
    assert repaired.exit_code == 0, repaired.stderr
    assert "recorded 3 span(s)" in repaired.stdout and "billed 5 ledger record(s)" in repaired.stdout
    assert store.load_tree() == tree and store.read_meta()["status"] == "interrupted"
    ledger = read_records(billing)
    assert len(ledger) == 5  # main's two attempts, the task call, the helper's attempt, the crash call
    by_path = {r["path"]: r for r in ledger}
    assert by_path["2-2"]["status"] == "interrupted" and "interrupted" in by_path["2-2"]["error"]
    assert by_path["1-2"]["status"] == "ok" and by_path["1-1"]["cost_usd"] > 0
    assert flush_unbilled(tree, billing) == 0  # already billed: nothing twice
    assert "nothing to repair" in invoke("sessions", "repair", session_id).stdout
    assert len(read_records(billing)) == 5
    assert verify_session(tree, read_event_lines(store.events_path), read_records(billing)) == []
    verified = invoke("sessions", "verify", session_id)
    assert verified.exit_code == 0 and "interrupted" not in verified.stdout


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Size and modification time of every file under ``root``: what a reader must leave alone."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def killed_runs(tmp_path_factory):
    """The demo run SIGKILLed at every third span end (and the last), each in its own home."""
    root = tmp_path_factory.mktemp("killed")
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("OTEL_")}
    env.update({"OTEL_TRACES_EXPORTER": "none", "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    proc = subprocess.run([sys.executable, str(KILLER), str(root), "3", "--", PROMPT],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    children = [json.loads(line) for line in proc.stdout.splitlines()]
    assert children[0]["n"] == 0 and children[0]["exit"] == 0, (root / "kill-0" / "stderr").read_text()
    return children


def _one_session(home: Path) -> SessionStore:
    (directory,) = (home / "sessions").iterdir()
    return SessionStore(directory)


def test_the_kill_points_cover_the_whole_run(killed_runs):
    total = killed_runs[0]["span_ends"]
    points = [c["n"] for c in killed_runs[1:]]
    assert total >= 40 and points[0] == 1 and points[-1] == total and len(points) >= total // 3
    assert all(c["signal"] == signal.SIGKILL for c in killed_runs[1:])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the recorder process is Linux-only")
def test_a_killed_run_leaves_no_recorder_process_behind(killed_runs):
    """The recorder ran in its own process; with the run's process killed it wrote what it had and ended."""
    for child in killed_runs[1:]:
        meta = _one_session(Path(child["home"])).read_meta()
        writer = meta["writer"]
        assert meta["status"] == "running" and isinstance(writer["recorder"], int), child["n"]
        assert writer["recorder"] != writer["pid"]
        directory = _one_session(Path(child["home"])).directory
        assert effective_status(meta, directory) == "interrupted", child["n"]  # neither process lives


def _expected_status(end: dict) -> str:
    attrs = end.get("attrs", {})
    if end.get("status") == "ERROR" or attrs.get("otel_agents.tool.status") in {"failed", "denied"}:
        return "failed"
    return "ok"


def test_after_a_kill_at_any_span_end_the_session_recovers_exactly(killed_runs):
    for child in killed_runs[1:]:
        home = Path(child["home"])
        where = f"killed at span end {child['n']}"
        store = _one_session(home)
        billing = home / "billing.jsonl"
        assert not billing.exists(), where  # the run never reached its end, so nothing was billed
        journal = read_journal(store.journal_path, pytest.fail)
        lines = read_event_lines(store.events_path, pytest.fail)
        starts = {line["start"]: line for line in journal if "start" in line}
        ends = {line["end"]: line for line in journal if "end" in line}
        # The span being ended when the process died never reached the journal (the killer ran first).
        assert len(ends) == child["n"] - 1, where
        # No id is duplicated anywhere.
        assert sum("start" in line for line in journal) == len(starts), where
        assert len({line.record["message_id"] for line in lines}) == len(lines), where

        # Every reader shows the session interrupted and writes nothing.
        storage = ["--sessions-dir", str(home / "sessions"), "--billing-file", str(billing)]
        before = snapshot(home)
        for command in (["sessions", "list", "--json", *storage], ["sessions", "show", store.session_id, *storage],
                        ["view", *storage, store.session_id, "agents"], ["billing", "summary", *storage]):
            result = invoke(*command)
            assert result.exit_code == 0, (where, command, result.stderr)
        listed = json.loads(invoke("sessions", "list", "--json", *storage).stdout)
        assert [s["status"] for s in listed] == ["interrupted"], where
        # `show` summarises it as `list` does (title, last write, counts from the journal), not as meta.json began.
        shown = json.loads(invoke("sessions", "show", store.session_id, "--json", *storage).stdout)["meta"]
        same = ("title", "updated", "runs", "status", "agents", "totals")
        assert {k: shown[k] for k in same} == {k: listed[0][k] for k in same}, where
        # meta.json is as the run began (no totals yet); the listing says what the journal holds.
        assert store.read_meta()["totals"]["llm_calls"] == 0, where
        verified = invoke("sessions", "verify", store.session_id, *storage)
        assert verified.exit_code == 0 and "interrupted, recoverable" in verified.stdout, (where, verified.stdout)
        warnings: list[str] = []
        artifacts = load_saved(store.directory, warnings.append)
        tree = artifacts.tree
        assert artifacts.source == SOURCE_JOURNAL and tree is not None, where
        assert snapshot(home) == before, where
        # The tree holds exactly the records of events.jsonl, on their spans, at their times.
        assert compare_records(tree, lines) == [], where
        assert Counter(r.record["message_id"] for r in iter_records(tree)) == Counter(
            line.record["message_id"] for line in lines), where
        # Every span is in the tree: ended ones with their end, the others interrupted at the last sign of life.
        nodes = {node["span_id"]: node for _, node in iter_nodes(tree)}
        assert set(nodes) == set(starts), where
        last_seen = max([line["ns"] for line in journal if "ns" in line]
                        + [__import__("otel_agents.persistence.timestamps", fromlist=["x"]).parse_iso_ts(l.ts)
                           for l in lines])
        for span_id, node in nodes.items():
            if span_id in ends:
                assert node["ended_ns"] == ends[span_id]["ns"] and node["status"] != "interrupted", where
            else:
                assert node["ended_ns"] == last_seen and node["status"] == "interrupted", where
                assert node["started_ns"] == starts[span_id]["ns"], where
        assert tree["runs"][0]["status"] == "interrupted", where
        assert artifacts.interrupted == len(starts) - len(ends), where

        # Repair: the interrupted ends are recorded, the run billed once, however often it is asked for.
        repaired = invoke("sessions", "repair", store.session_id, *storage)
        assert repaired.exit_code == 0, (where, repaired.stderr)
        calls = {f"{line['trace']}:{sid}": sid for sid, line in starts.items()
                 if line["name"].split(" ")[0] in {"chat", "execute_tool"}}
        assert (f"billed {len(calls)} ledger record(s)" in repaired.stdout) == bool(calls), (where, repaired.stdout)
        assert "nothing to repair" in invoke("sessions", "repair", store.session_id, *storage).stdout, where
        assert flush_unbilled(tree, billing) == 0, where
        assert load_saved(store.directory, pytest.fail).tree == tree, where
        ledger = read_records(billing) if billing.exists() else []
        # The ledger against the journal: each attempt and tool call that ended, billed as it ended;
        # each that never ended, billed as interrupted, with nothing charged.
        assert sorted(r["record_id"] for r in ledger) == sorted(calls), where
        assert tree["runs"][0]["call_path"] == "main", where  # from the run span's start: it never ended
        for record in ledger:
            span_id = calls[record["record_id"]]
            # Each record names its agent's call path, the root's included, though the run never ended.
            assert record["call_path"] and record["call_path"].split("/")[-1] == record["agent_name"], (where, record)
            if span_id in ends:
                end = ends[span_id]
                assert record["status"] == _expected_status(end), where
                if record["type"] == "llm" and record["status"] == "ok":
                    attrs = {**starts[span_id].get("attrs", {}), **end.get("attrs", {})}
                    assert record["tokens"]["input"] == attrs["gen_ai.usage.input_tokens"], where
                    assert record["cost_usd"] == attrs["gen_ai.usage.cost"], where
            else:
                assert record["status"] == "interrupted" and "interrupted" in record["error"], where
                assert record["cost_usd"] is None if record["type"] == "llm" else record["chars_out"] == 0, where
        meta = store.read_meta()
        assert meta["status"] == "interrupted" and meta["billed"] is True, where
        # What the listing said before the repair is what the repair wrote.
        summary = ("title", "created", "runs", "status", "agents", "totals")
        assert {k: listed[0][k] for k in summary} == {k: meta[k] for k in summary}, where
        verified = invoke("sessions", "verify", store.session_id, *storage)
        assert verified.exit_code == 0 and "interrupted, recoverable" not in verified.stdout, (where, verified.stdout)


def test_a_killed_session_resumes_without_duplicate_ids(killed_runs):
    """The middle kill point, resumed: new runs add to the recovered tree, each id is used once."""
    child = killed_runs[len(killed_runs) // 2]
    home = Path(child["home"])
    store = _one_session(home)
    storage = ["--sessions-dir", str(home / "sessions"), "--billing-file", str(home / "billing.jsonl")]
    resumed = invoke("resume", store.session_id, "Are you still there?", *storage)
    assert resumed.exit_code == 0, resumed.stderr
    lines = read_event_lines(store.events_path, pytest.fail)
    assert len({line.record["message_id"] for line in lines}) == len(lines)
    journal = read_journal(store.journal_path, pytest.fail)
    assert len({line["start"] for line in journal if "start" in line}) == sum("start" in line for line in journal)
    tree = load_saved(store.directory, pytest.fail).tree
    assert [r["status"] for r in tree["runs"]] == ["interrupted", "ok"]
    meta = store.read_meta()
    # The session carried on to a good end: it reads ok (nothing asks for another resume); the killed
    # run keeps its own status wherever runs are shown.
    assert meta["status"] == "ok" and meta["runs"] == 2
    assert store.load_tree()["runs"][0]["status"] == "interrupted"
    listed = json.loads(invoke("sessions", "list", "--json", *storage).stdout)
    assert [s["status"] for s in listed] == ["ok"]
    assert "interrupted" in invoke("sessions", "show", store.session_id, *storage).stdout
    ledger = [r for r in read_records(home / "billing.jsonl") if r["session_id"] == store.session_id]
    assert len({r["record_id"] for r in ledger}) == len(ledger)
    assert invoke("sessions", "verify", store.session_id, *storage).exit_code == 0


# --------------------------------------------------------------------------- load_saved' choices


@pytest.fixture
def two_runs(record):
    recorded = record(prompts=[PROMPT, "And then?"])
    return recorded, recorded.store, recorded.store.load_tree()


def _stale_checkpoint(recorded, store):
    """tree.json.gz as a checkpoint written during run 2 would be: run 1 only, meta still running."""
    spans = [s for s in recorded.spans() if s.trace_id == store.load_tree()["runs"][0]["trace_id"]]
    tree = build_tree(spans, recorded.session.id)
    meta = make_meta(tree, created_ns=1, updated_ns=2, running=True)
    meta["writer"]["pid"] = 2**22 + 12345  # a process that no longer exists
    store.save_tree(make_payload(tree, meta))
    store.write_meta(meta)
    return tree


def test_a_cleanly_closed_session_loads_its_checkpoint_as_it_is(two_runs):
    recorded, store, final = two_runs
    meta = store.read_meta()
    assert meta["billed"] is True and meta["status"] == "ok"
    assert set(meta["checkpoint"]["files"]) == {"tree.json.gz", "spans.jsonl", "events.jsonl"}
    artifacts = load_saved(store.directory, pytest.fail, owned=True, repair=True)
    assert artifacts.source == SOURCE_CHECKPOINT and artifacts.tree == final and not artifacts.recovered
    # ... which is exactly what the journal rebuilds.
    rebuilt = spans_from_journal(read_journal(store.journal_path, pytest.fail), read_event_lines(store.events_path))
    assert build_tree(rebuilt, store.session_id) == final
    # A line more in the journal (here a repeated context line, which changes no span) is no longer
    # known to be in the checkpoint: the careful path runs, finds the same tree and marks it again.
    journal = store.journal_path.read_bytes()
    store.journal_path.write_bytes(journal + journal.splitlines(keepends=True)[0])
    artifacts = load_saved(store.directory, pytest.fail, owned=True, repair=True)
    assert artifacts.source == SOURCE_JOURNAL and artifacts.tree == final and not artifacts.recovered
    assert store.read_meta()["updated"] == meta["updated"]  # nothing happened to the session itself
    assert load_saved(store.directory, pytest.fail, owned=True, repair=True).source == SOURCE_CHECKPOINT


@pytest.mark.parametrize("change", ["events", "tree", "running", "no mark", "other version"])
def test_a_checkpoint_not_known_to_be_current_takes_the_careful_path(two_runs, change):
    recorded, store, final = two_runs
    meta = store.read_meta()
    if change in ("events", "tree"):  # rewritten in place, same size: the modification time says so
        path = store.events_path if change == "events" else store.tree_path
        stat = path.stat()
        path.write_bytes(path.read_bytes())
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # whatever the clock's grain
    elif change == "running":
        store.write_meta({**meta, "status": "running", "writer": {"pid": 2**22 + 12345, "host": "elsewhere"}})
    elif change == "no mark":
        store.write_meta({k: v for k, v in meta.items() if k != "checkpoint"})
    else:
        store.write_meta({**meta, "checkpoint": {**meta["checkpoint"], "tree_version": 99}})
    artifacts = load_saved(store.directory, lambda message: None)
    assert artifacts.source == SOURCE_JOURNAL and artifacts.tree == final


def test_a_checkpoint_behind_the_journal_is_brought_up_to_date(two_runs):
    recorded, store, final = two_runs
    _stale_checkpoint(recorded, store)
    warnings: list[str] = []
    artifacts = load_saved(store.directory, warnings.append, owned=True, repair=True)
    assert artifacts.tree == final and artifacts.recovered
    assert store.load_tree() == final and store.read_meta()["status"] == "ok"
    assert store.read_meta()["created"] == "1970-01-01T00:00:00.000000001Z"  # the session's creation is kept
    assert len(warnings) == 1
    # Marked current, but not billed: whoever loads next still bills what the crash left.
    assert load_saved(store.directory, pytest.fail, owned=True, repair=True).source == SOURCE_CHECKPOINT
    assert not store.read_meta().get("billed")
    # Without repair, nothing is written.
    _stale_checkpoint(recorded, store)
    before = store.tree_path.read_bytes()
    assert load_saved(store.directory, warnings.append).tree == final
    assert store.tree_path.read_bytes() == before


def test_a_live_writer_s_session_is_read_but_never_rewritten(two_runs):
    recorded, store, final = two_runs
    stale = _stale_checkpoint(recorded, store)
    with take(store.directory):  # a live writer (its own open file description)
        artifacts = load_saved(store.directory, pytest.fail)
        assert artifacts.live and artifacts.tree == final and not artifacts.recovered
    assert store.load_tree() == stale


def test_a_checkpoint_that_contradicts_the_streams_is_left_for_a_person(two_runs):
    recorded, store, final = two_runs
    path = store.events_path
    lines = path.read_bytes().splitlines()
    record = orjson.loads(lines[3])
    record["content"] = "something else"
    lines[3] = orjson.dumps(record)
    path.write_bytes(b"\n".join(lines) + b"\n")
    before = store.tree_path.read_bytes()
    warnings: list[str] = []
    artifacts = load_saved(store.directory, warnings.append, owned=True, repair=True)
    assert not artifacts.recovered and store.tree_path.read_bytes() == before
    assert len(warnings) == 1 and "contradicts events.jsonl" in warnings[0] and record["message_id"] in warnings[0]
    assert invoke("sessions", "verify", store.session_id).exit_code == 1


def test_without_a_usable_journal_the_checkpoint_stands_in(two_runs):
    recorded, store, final = two_runs
    journal = store.journal_path.read_bytes()
    store.journal_path.write_bytes(journal.replace(b"\n", b"\n{oops\n", 1))
    warnings: list[str] = []
    artifacts = load_saved(store.directory, warnings.append, owned=True, repair=True)
    assert artifacts.source == SOURCE_TREE and artifacts.tree == final
    assert len(warnings) == 1 and "spans.jsonl:2" in warnings[0] and "using tree.json.gz" in warnings[0]
    store.journal_path.unlink()
    artifacts = load_saved(store.directory, warnings.append, owned=True, repair=True)
    assert artifacts.source == SOURCE_TREE and "spans.jsonl does not exist" in warnings[-1]
    # A torn last line is only the end of a crashed write: the journal is still used.
    store.journal_path.write_bytes(journal + b'{"end": "abc')
    artifacts = load_saved(store.directory, warnings.append, owned=True, repair=True)
    assert artifacts.source == SOURCE_JOURNAL and artifacts.tree == final
    assert "skipped a torn last line" in warnings[-1]


def test_a_damaged_checkpoint_is_not_overwritten(two_runs):
    recorded, store, final = two_runs
    store.tree_path.write_bytes(b"not gzip")
    warnings: list[str] = []
    artifacts = load_saved(store.directory, warnings.append, owned=True, repair=True)
    assert artifacts.tree == final and store.tree_path.read_bytes() == b"not gzip"
    assert len(warnings) == 1 and "tree.json.gz" in warnings[0] and "left as is" in warnings[0]


def test_a_journal_that_disagrees_with_what_the_checkpoint_shows_ended_never_replaces_it(two_runs):
    recorded, store, final = two_runs
    lines = store.journal_path.read_bytes().splitlines()
    index = next(i for i, raw in enumerate(lines) if b'"end"' in raw and b"input_tokens" in raw)
    line = orjson.loads(lines[index])
    line["attrs"]["gen_ai.usage.input_tokens"] += 1000  # a forged count for an attempt the checkpoint has
    lines[index] = orjson.dumps(line)
    store.journal_path.write_bytes(b"\n".join(lines) + b"\n")
    before = store.tree_path.read_bytes()
    warnings: list[str] = []
    artifacts = load_saved(store.directory, warnings.append, owned=True, repair=True)
    assert not artifacts.recovered and store.tree_path.read_bytes() == before
    assert len(warnings) == 1 and f"span {line['end']}" in warnings[0] and "differs from spans.jsonl" in warnings[0]


def test_a_renamed_session_directory_is_not_rewritten_under_its_new_name(two_runs):
    recorded, store, final = two_runs
    moved = SessionStore(store.directory.with_name("renamed-session"))
    store.directory.rename(moved.directory)
    before = moved.tree_path.read_bytes()
    warnings: list[str] = []
    load_saved(moved.directory, warnings.append, owned=True, repair=True)
    assert moved.tree_path.read_bytes() == before
    assert len(warnings) == 1 and "names session" in warnings[0]
