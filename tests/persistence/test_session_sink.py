"""SessionSink fed plain SpanData directly: order tolerance, idempotence, records, derived files, the ledger once."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_agents.persistence.events_file import read_event_lines
from otel_agents.persistence.journal import is_record_event, read_journal, spans_from_journal
from otel_agents.persistence.ledger_read import read_records
from otel_agents.persistence.saved import load_saved
from otel_agents.persistence.session_sink import CheckpointPolicy, SessionSink
from otel_agents.persistence.store import SessionStore
from otel_agents.persistence.timestamps import parse_iso_ts
from otel_agents.persistence.tree import build_tree
from otel_agents.persistence.tree_span_fields import span_operation
from otel_agents.tracing import semconv as sc

PROMPTS = ["Create Jack and Jill for a cafe discussion", "And then?"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A real two-run session recorded by the live recorder: its spans (journal form), record lines, files."""
    import subprocess
    import sys

    home = tmp_path_factory.mktemp("home")
    env = {"OTEL_AGENTS_HOME": str(home), "OTEL_TRACES_EXPORTER": "none", "PATH": "/usr/bin:/bin"}
    import os

    env = {**os.environ, **env}
    for number, prompt in enumerate(PROMPTS):
        command = [sys.executable, "-m", "otel_agents", "run", "--script", "jack-and-jill", prompt] if not number else \
            [sys.executable, "-m", "otel_agents", "resume", _only_session(home), prompt]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    store = SessionStore(home / "sessions" / _only_session(home))
    lines = read_event_lines(store.events_path)
    spans = spans_from_journal(read_journal(store.journal_path), lines)
    return {"store": store, "spans": spans, "lines": lines, "ledger": read_records(home / "billing.jsonl")}


def _only_session(home: Path) -> str:
    (session,) = [p.name for p in (home / "sessions").iterdir() if p.is_dir()]
    return session


def _steps(spans, lines):
    """Starts, ends and records at the times they happened (a live run's order)."""
    steps = [(s.start_ns, 0, "start", s) for s in spans]
    steps += [(s.end_ns, 2, "end", s) for s in spans if s.end_ns is not None]
    steps += [(parse_iso_ts(l.ts), 1, "record", l) for l in lines]
    steps.sort(key=lambda step: step[:2])
    return [(kind, item) for _, _, kind, item in steps]


def _feed(sink: SessionSink, steps) -> None:
    for kind, item in steps:
        if kind == "start":
            sink.start(item)
        elif kind == "end":
            sink.end(item)
        else:
            sink.record(item.record, parse_iso_ts(item.ts), item.trace_id, item.span_id)


def _sink(directory: Path, session_id: str, **kwargs) -> SessionSink:
    return SessionSink(SessionStore.create(directory / "sessions", session_id), session_id,
                       warn=pytest.fail, **kwargs)


def _rebuilt(sink: SessionSink):
    store = sink.store
    return spans_from_journal(read_journal(store.journal_path), read_event_lines(store.events_path))


def _by_id(spans):
    return {s.span_id: s for s in spans}


def test_fed_in_time_order_it_writes_what_the_live_recorder_wrote(saved, tmp_path):
    store = saved["store"]
    sink = _sink(tmp_path, store.session_id, billing_file=tmp_path / "billing.jsonl")
    _feed(sink, _steps(saved["spans"], saved["lines"]))
    sink.close()
    assert sink.store.events_path.read_bytes() == store.events_path.read_bytes()
    assert _by_id(_rebuilt(sink)) == _by_id(saved["spans"])
    assert sink.store.load_tree() == store.load_tree() == build_tree(saved["spans"], store.session_id)
    # Each run's records were derived when its root ended: the ledger the two live runs wrote.
    assert read_records(tmp_path / "billing.jsonl") == saved["ledger"]
    meta = sink.store.read_meta()
    assert meta["runs"] == 2 and meta["status"] == "ok" and meta["billed"] and meta["writer"] is None


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_any_order_of_starts_ends_and_records_gives_the_same_session(saved, seed):
    """Ends before starts, children after parents, records before their spans: the same spans and tree."""
    steps = _shuffled(_steps(saved["spans"], saved["lines"]), random.Random(seed))
    with tempfile.TemporaryDirectory() as directory:
        sink = _sink(Path(directory), saved["store"].session_id)
        _feed(sink, steps)
        sink.close()
        assert _by_id(_rebuilt(sink)) == _by_id(saved["spans"])
        assert sink.store.load_tree() == build_tree(saved["spans"], saved["store"].session_id)
        assert sink.store.events_path.read_bytes() == saved["store"].events_path.read_bytes()


def _shuffled(steps, rng: random.Random):
    """Starts and ends in any order, records among them in their own order (Telemetry's), each
    before its span's end (it is emitted on the open span)."""
    others = [step for step in steps if step[0] != "record"]
    records = [step for step in steps if step[0] == "record"]
    rng.shuffle(others)
    out = []
    while others or records:
        if records and (not others or rng.random() < 0.4):
            out.append(records.pop(0))
            continue
        kind, item = others.pop(0)
        if kind == "end":
            last = max((i for i, (_, line) in enumerate(records) if line.span_id == item.span_id), default=-1)
            out += records[:last + 1]
            del records[:last + 1]
        out.append((kind, item))
    return out


def test_records_before_their_spans_are_written_once(saved, tmp_path):
    steps = _steps(saved["spans"], saved["lines"])
    records_first = [s for s in steps if s[0] == "record"] + [s for s in steps if s[0] != "record"]
    sink = _sink(tmp_path, saved["store"].session_id)
    _feed(sink, records_first)
    sink.close()
    assert sink.store.events_path.read_bytes() == saved["store"].events_path.read_bytes()
    for line in read_journal(sink.store.journal_path):  # end lines leave the records out: stored once
        for name, time_ns, attributes in line.get("events", []):
            assert not is_record_event(_event(name, time_ns, attributes)), line["end"]
    assert _by_id(_rebuilt(sink)) == _by_id(saved["spans"])


def _event(name, time_ns, attributes):
    from otel_agents.tracing.spandata import EventData

    return EventData(name, time_ns, attributes)


def test_second_starts_and_ends_of_a_span_id_are_ignored(saved, tmp_path):
    once = _sink(tmp_path / "once", saved["store"].session_id, billing_file=tmp_path / "once.jsonl")
    _feed(once, _steps(saved["spans"], saved["lines"]))
    once.close()
    twice = _sink(tmp_path / "twice", saved["store"].session_id, billing_file=tmp_path / "twice.jsonl")
    doubled = []
    for kind, item in _steps(saved["spans"], saved["lines"]):
        doubled += [(kind, item)] if kind == "record" else [(kind, item), (kind, item)]
    _feed(twice, doubled)
    twice.close()
    assert twice.store.journal_path.read_bytes() == once.store.journal_path.read_bytes()
    assert twice.store.load_tree() == once.store.load_tree()
    assert read_records(tmp_path / "twice.jsonl") == read_records(tmp_path / "once.jsonl") == saved["ledger"]


def test_an_end_without_its_start_is_journaled_whole(saved, tmp_path):
    sink = _sink(tmp_path, saved["store"].session_id)
    _feed(sink, [step for step in _steps(saved["spans"], saved["lines"]) if step[0] != "start"])
    sink.close()
    assert _by_id(_rebuilt(sink)) == _by_id(saved["spans"])
    assert sink.store.load_tree() == build_tree(saved["spans"], saved["store"].session_id)


def test_a_runs_end_writes_meta_and_bills_that_run_once(saved, tmp_path):
    billing = tmp_path / "billing.jsonl"
    sink = _sink(tmp_path, saved["store"].session_id, billing_file=billing, policy=CheckpointPolicy(growth=1e9))
    steps = _steps(saved["spans"], saved["lines"])
    roots = [item for kind, item in steps if kind == "end" and item.parent_span_id is None
             and span_operation(item) == sc.OP_INVOKE_AGENT]
    assert len(roots) == 2
    first_end = steps.index(("end", roots[0]))
    _feed(sink, steps[:first_end + 1])
    meta = sink.store.read_meta()
    assert meta["runs"] == 1 and meta["status"] == "ok" and not sink.store.tree_path.exists()  # no tree yet (policy)
    first_run = read_records(billing)
    assert first_run and {r["run"] for r in first_run} == {1}
    sink.end(roots[0])  # the same end again: nothing more derived
    assert read_records(billing) == first_run
    _feed(sink, steps[first_end + 1:])
    assert sink.stats.checkpoints == 0  # run ends wrote meta.json only: the tree waits for close
    sink.close()
    assert sink.stats.checkpoints == 1 and read_records(billing) == saved["ledger"]
    # A sink resuming the saved session and fed the same spans again writes and bills nothing more.
    journal = sink.store.journal_path.read_bytes()
    again = SessionSink(sink.store, billing_file=billing, resume=True, from_journal=True, warn=pytest.fail)
    _feed(again, [step for step in steps if step[0] != "record"])
    again.close()
    assert sink.store.journal_path.read_bytes() == journal and read_records(billing) == saved["ledger"]


def test_deferred_run_end_writes_still_add_each_run_to_the_settled_summary(saved, tmp_path):
    """The recorder process writes a run's end once its pipe is empty, often after the next run began.
    Each run is still added to the summary of the runs before it at its end: the whole tree is built
    only for the first run's start (no meta.json yet) and end, never again at later run ends."""
    sink = _sink(tmp_path, saved["store"].session_id, policy=CheckpointPolicy(growth=1e9))
    sink.defer_run_end_writes = True
    builds = []
    whole_tree = sink.tree
    sink.tree = lambda: builds.append(1) or whole_tree()
    roots = {s.span_id for s in saved["spans"] if s.parent_span_id is None and span_operation(s) == sc.OP_INVOKE_AGENT}
    assert len(roots) == 2
    for step in _steps(saved["spans"], saved["lines"]):
        _feed(sink, [step])
        kind, item = step
        if kind == "start" and item.span_id in roots:
            sink.idle()  # the previous run's end is written only now, with this run open
    sink.idle()
    assert len(builds) == 2
    drop = {"updated", "checkpoint", "writer"}
    written = orjson.loads(sink.store.meta_path.read_bytes())
    whole = sink._meta(whole_tree())
    assert written["runs"] == 2 and {k: v for k, v in written.items() if k not in drop} == {
        k: v for k, v in whole.items() if k not in drop}


def test_checkpoints_at_sub_agent_ends_follow_the_policy(saved, tmp_path):
    every = _sink(tmp_path / "every", saved["store"].session_id, policy=CheckpointPolicy(growth=0, min_bytes=0, during_runs=True))
    trees = []
    original = every.checkpoint

    def checkpoint(tree=None):
        written = original(tree)
        trees.append((written, build_tree(every.spans(), every.session_id)))
        return written

    every.checkpoint = checkpoint
    _feed(every, _steps(saved["spans"], saved["lines"]))
    sub_agent_ends = sum(1 for s in saved["spans"] if span_operation(s) == sc.OP_INVOKE_AGENT and s.parent_span_id)
    assert len(trees) >= sub_agent_ends + 2  # every sub-agent end and both run ends
    assert all(written == whole for written, whole in trees)  # each the tree of every span seen so far
    every.close()
    meta = orjson.loads(every.store.meta_path.read_bytes())
    assert meta["checkpoint"]["files"]["tree.json.gz"] is not None


def test_no_tree_is_written_while_a_run_is_open_unless_the_policy_asks(saved, tmp_path):
    """By default a due checkpoint waits for a moment when no run is open: one written mid-run is
    behind its streams at the next span, so readers would rebuild from the journal anyway."""
    sink = _sink(tmp_path, saved["store"].session_id, policy=CheckpointPolicy(growth=0, min_bytes=0))
    steps = _steps(saved["spans"], saved["lines"])
    roots = [item for kind, item in steps if kind == "end" and item.parent_span_id is None
             and span_operation(item) == sc.OP_INVOKE_AGENT]
    first_end = steps.index(("end", roots[0]))
    sub_agent_ended = False
    for step in steps[:first_end]:
        _feed(sink, [step])
        kind, item = step
        sub_agent_ended |= kind == "end" and item.parent_span_id is not None and span_operation(item) == sc.OP_INVOKE_AGENT
        assert not sink.store.tree_path.exists(), step  # due at every end, but a run is open
    assert sub_agent_ended and sink.stats.checkpoints == 0
    _feed(sink, [steps[first_end]])  # the run's end, none open: the due checkpoint is written now
    assert sink.stats.checkpoints == 1
    loaded = load_saved(sink.store.directory, warn=pytest.fail, owned=True)
    assert loaded.source == "checkpoint" and loaded.tree == sink.tree()
    _feed(sink, steps[first_end + 1:])
    sink.close()
    assert sink.store.load_tree() == build_tree(saved["spans"], saved["store"].session_id)


def test_a_batch_hands_its_lines_to_the_kernel_once_at_its_end(saved, tmp_path):
    """Inside ``batch()`` nothing is flushed line by line; at its end every line is on disk, and a
    checkpoint inside a batch flushes first, so its mark covers the files as they then are."""
    sink = _sink(tmp_path, saved["store"].session_id, policy=CheckpointPolicy(growth=1e9))
    steps = _steps(saved["spans"], saved["lines"])
    store = sink.store
    _feed(sink, steps[:3])  # opens both files, each line flushed as it is written
    sizes = (store.journal_path.stat().st_size, store.events_path.stat().st_size)
    assert sizes == (sink._journal.bytes_written, sink._events.bytes_written) and all(sizes)
    with sink.batch():
        _feed(sink, steps[3:8])  # a few lines: less than the file buffer holds
        assert sink._journal.bytes_written > sizes[0]
        assert (store.journal_path.stat().st_size, store.events_path.stat().st_size) == sizes  # held back
        _feed(sink, steps[8:40])
    assert (store.journal_path.stat().st_size, store.events_path.stat().st_size) == (
        sink._journal.bytes_written, sink._events.bytes_written)
    with sink.batch():
        _feed(sink, steps[40:])
        sink.checkpoint()
        loaded = load_saved(store.directory, warn=pytest.fail, owned=True)
        assert loaded.source == "checkpoint"  # the mark matches the files: nothing was left in a buffer
    sink.close()
    assert _by_id(_rebuilt(sink)) == _by_id(saved["spans"])
