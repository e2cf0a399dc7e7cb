"""The live SessionRecorder on real runs: files written, agreement, checkpoints, failures."""

from __future__ import annotations

import json
import os

import pytest

from otel_agents.persistence.events_file import read_event_lines
from otel_agents.persistence.journal import read_journal, spans_from_journal
from otel_agents.persistence.ledger_read import read_records
from otel_agents.persistence.recorder import CheckpointPolicy
from otel_agents.persistence.tree import build_tree
from otel_agents.persistence.tree_walk import iter_ops
from otel_agents.persistence.verify import verify_session
from otel_agents.runtime.tools import make_tool

EVERY_SUB_AGENT = CheckpointPolicy(growth=0, min_bytes=0, during_runs=True)  # the naive policy: rewrite at each sub-agent end


def test_demo_session_directory_agrees_with_itself_and_the_ledger(record):
    recorded = record()
    store = recorded.store
    assert sorted(p.name for p in store.directory.iterdir()) == [
        "events.jsonl", "meta.json", "pricing.json", "spans.jsonl", "tree.json.gz"]  # pricing.json: issue 23
    tree = store.load_tree()
    lines = read_event_lines(store.events_path)
    ledger = read_records(recorded.billing_file)
    assert verify_session(tree, lines, ledger) == []
    # One ledger record per LLM attempt and tool call, failed ones included.
    ops = [ref.op for ref in iter_ops(tree) if ref.op["kind"] in {"llm", "tool"}]
    assert len(ledger) == len(ops) == 20
    assert {r["record_id"] for r in ledger} == {f"{tree['runs'][0]['trace_id']}:{op['span_id']}" for op in ops}
    assert sum(r["status"] == "failed" for r in ledger) == 2  # the 429 attempt and the denied task
    # The saved tree is the live tree at the end.
    assert tree == recorded.recorder.tree()
    meta = store.read_meta()
    assert meta["id"] == recorded.session.id and meta["status"] == "ok" and meta["writer"] is None
    assert meta["title"] == "Create Jack and Jill for a cafe discussion"
    assert meta["runs"] == 1 and meta["totals"] == tree["totals"]["inclusive"]
    assert recorded.warnings == []


def test_each_run_is_billed_once_at_its_end(record):
    recorded = record(prompts=["Create Jack and Jill for a cafe discussion", "And then?"])
    ledger = read_records(recorded.billing_file)
    assert sorted({r["run"] for r in ledger}) == [1, 2]
    assert len({r["record_id"] for r in ledger}) == len(ledger)
    assert [r for r in ledger if r["run"] == 2][0]["path"] == "1-1"
    assert recorded.recorder.stats.ledger_records_written == len(ledger) == 21
    assert verify_session(recorded.store.load_tree(), read_event_lines(recorded.store.events_path), ledger) == []


def test_tree_is_checkpointed_when_a_sub_agent_finishes(record, scripts):
    """A tool that runs after the first sub-agent returned sees that sub-agent on disk."""
    seen = {}

    def peek() -> str:
        """Look at the saved tree."""
        tree = seen["store"].load_tree()
        run = tree["runs"][0]
        seen["status"] = run["status"]
        seen["sessions"] = [ref.op["session"]["agent_name"] for ref in iter_ops(tree) if ref.op["kind"] == "session"]
        seen["open_ops"] = [ref.label for ref in iter_ops(tree) if ref.op["status"] == "in_progress"]
        return "peeked"

    script = scripts.fan_out(1, "peek-after-sub-agent")
    script["agents"]["main"].insert(1, {"tool_calls": [{"name": "peek", "arguments": {}}]})
    recorded = record(script, ["go"], tools=[make_tool(peek)], policy=EVERY_SUB_AGENT,
                      prepare=lambda store: seen.setdefault("store", store))
    assert recorded.utterances == ["Everyone answered."]
    assert seen["status"] == "in_progress"
    assert seen["sessions"] == ["Helper0"]
    assert seen["open_ops"] == ["1-2"]  # the task call that was returning when the sub-agent ended
    assert recorded.recorder.stats.checkpoints == 2  # the sub-agent end, the run end


def _bytes_written(record, scripts, n, policy):
    recorded = record(scripts.fan_out(n), ["go"], policy=policy, max_turns=n + 2)
    stats = recorded.recorder.stats
    assert stats.last_tree_bytes == recorded.store.tree_path.stat().st_size
    return stats.tree_bytes_written, stats.last_tree_bytes, stats.checkpoints


def test_bytes_written_grow_linearly_with_session_length(record, scripts):
    small, small_final, small_writes = _bytes_written(record, scripts, 10, CheckpointPolicy())
    large, large_final, large_writes = _bytes_written(record, scripts, 40, CheckpointPolicy())
    # The tree itself is linear in the session (4x the sub-agents): a little under 4x compressed,
    # as the fixed head and the repeated sub-agent shapes compress better in a longer tree.
    assert 2.8 <= large_final / small_final <= 4.5
    assert large / small <= 1.3 * 4
    assert large <= 4 * large_final  # the geometric bound: (1 + 1/growth) + 1 final writes
    assert large_writes < 40 / 2  # coalesced: far fewer writes than sub-agent ends
    # The naive policy is what this guards against: quadratic.
    naive_small, _, _ = _bytes_written(record, scripts, 10, EVERY_SUB_AGENT)
    naive_large, _, naive_writes = _bytes_written(record, scripts, 40, EVERY_SUB_AGENT)
    assert naive_writes == 41
    assert naive_large / naive_small > 8


def test_disk_full_on_events_warns_once_and_the_run_goes_on(record):
    def disk_full(store):
        os.symlink("/dev/full", store.events_path)

    recorded = record(prepare=disk_full)
    assert recorded.utterances[0].startswith("Jack and Jill met")
    assert len(recorded.warnings) == 1
    warning = recorded.warnings[0]
    assert "No space left on device" in warning and recorded.session.id in warning and "goes on" in warning
    # Recording stopped at the failure: nothing half-written.
    assert not recorded.store.tree_path.exists()
    assert recorded.recorder.stats.checkpoints == 0
    # Billing is a separate destination and still works.
    assert len(read_records(recorded.billing_file)) == 20


def test_unwritable_tree_warns_once_and_the_run_goes_on(record):
    def block_tree(store):
        store.tree_path.mkdir()  # a directory where the tree file should go

    recorded = record(prepare=block_tree)
    assert recorded.utterances[0].startswith("Jack and Jill met")
    assert len(recorded.warnings) == 1 and "tree.json.gz" in recorded.warnings[0]


def test_unwritable_billing_file_warns_once_and_the_session_is_saved(record, home):
    billing = home / "billing-dir"
    billing.mkdir(parents=True)
    recorded = record(prompts=["one", "two"], billing_file=billing)
    assert len(recorded.utterances) == 2
    assert len(recorded.warnings) == 1 and "billing ledger" in recorded.warnings[0]
    assert recorded.store.load_tree()["runs"][1]["status"] == "ok"


def test_the_ledger_is_read_while_idle_and_run_ends_read_only_what_was_appended_since(record, home, monkeypatch):
    """A ledger holds every session's history: a run's end must not read all of it each time."""
    from otel_agents.persistence import sink_ledger
    from otel_agents.persistence.ledger import append_records

    monkeypatch.setattr(sink_ledger, "LEDGER_READ_AHEAD_BYTES", 4096)
    billing = home / "billing.jsonl"
    history = [{"record_id": f"{n:032x}:{n:016x}", "session_id": "an-older-one", "type": "llm", "note": "x" * 300}
               for n in range(200)]
    append_records(billing, history)
    size = billing.stat().st_size
    slices = []

    def ready(recorder):
        while recorder.idle():  # the recorder process's idle moments before the first message
            slices.append(recorder.stats.ledger_bytes_read)
        assert recorder.stats.ledger_bytes_read == size

    recorded = record(prompts=["Create Jack and Jill for a cafe discussion", "And then?"], billing_file=billing,
                      ready=ready)
    assert len(slices) > 5 and slices == sorted(slices)  # a slice per idle moment, never all at once
    assert recorded.recorder.stats.ledger_bytes_read == size  # both run ends read nothing already read
    ledger = read_records(billing)
    assert ledger[:200] == history
    assert recorded.recorder.stats.ledger_records_written == len(ledger) - 200 == 21
    tree = recorded.store.load_tree()
    assert verify_session(tree, read_event_lines(recorded.store.events_path), ledger) == []


@pytest.fixture
def run_end_summaries(monkeypatch):
    """After every run's end: meta.json as written, the whole tree's summary, and whether a tree was built."""
    from otel_agents.persistence.recorder import SessionRecorder

    seen = []
    original_write, original_tree = SessionRecorder._write_after_run, SessionRecorder.tree
    builds = []

    def tree(self):
        builds.append(1)
        return original_tree(self)

    def write_after_run(self):
        builds.clear()
        original_write(self)
        built = bool(builds)
        whole = self._meta(original_tree(self))  # what a summary of the whole tree says now
        seen.append((self.store.read_meta(), whole, built))

    monkeypatch.setattr(SessionRecorder, "tree", tree)
    monkeypatch.setattr(SessionRecorder, "_write_after_run", write_after_run)
    return seen


def _same_summary(written, whole):
    drop = {"updated", "checkpoint"}
    return {k: v for k, v in written.items() if k not in drop} == {k: v for k, v in whole.items() if k not in drop}


def test_a_runs_end_summary_equals_the_whole_trees_without_building_it(record, run_end_summaries):
    prompts = ["Create Jack and Jill for a cafe discussion", "And then?", "Once more", "Last one"]
    recorded = record(prompts=prompts, policy=CheckpointPolicy(growth=1e9))  # run ends write meta.json only
    assert len(run_end_summaries) == 4
    for written, whole, built in run_end_summaries:
        assert _same_summary(written, whole)
        assert "checkpoint" not in written  # the tree on disk does not hold this run yet
    # The first run's end had no settled runs before it to add to; after that, no tree was built.
    assert [built for _, _, built in run_end_summaries] == [True, False, False, False]
    assert run_end_summaries[-1][0]["runs"] == 4
    assert run_end_summaries[-1][0]["totals"]["llm_calls"] > run_end_summaries[0][0]["totals"]["llm_calls"]
    assert recorded.store.read_meta()["totals"] == recorded.store.load_tree()["totals"]["inclusive"]


def test_an_outside_event_between_runs_makes_the_next_run_end_summarise_the_whole_tree(record, run_end_summaries):
    def between(session):
        session.external(session.root, "The cafe closes early today.")  # a trace of its own, not a run

    recorded = record(prompts=["Create Jack and Jill for a cafe discussion", "And then?", "Once more"],
                      policy=CheckpointPolicy(growth=1e9), between=between)
    assert all(_same_summary(written, whole) for written, whole, _ in run_end_summaries)
    assert [built for _, _, built in run_end_summaries] == [True, True, True]
    tree = recorded.store.load_tree()
    assert [op["name"] for op in tree["ops"]] == ["external_input main"] * 2


def test_a_resumed_sessions_run_end_adds_to_its_saved_summary(record, home, run_end_summaries):
    first = record(prompts=["Create Jack and Jill for a cafe discussion", "And then?"])
    run_end_summaries.clear()
    recorder, store = _resume(first, home, "Once more", resume=True)
    ((written, whole, built),) = run_end_summaries
    assert _same_summary(written, whole) and written["runs"] == 3
    assert not built  # the saved tree was not decoded for it


def _resume(first, home, prompt, **recorder_kwargs):
    """A second process's view: a new provider and session continuing ``first``'s directory."""
    import asyncio

    from otel_agents.llm.client import LLMClient
    from otel_agents.llm.scripts import load_script
    from otel_agents.persistence.recorder import SessionRecorder
    from otel_agents.persistence.store import SessionStore
    from otel_agents.runtime.scenario import build_session
    from otel_agents.tracing.setup import TracingOptions, configure_tracing

    messages, agents = first.session.counters
    tracing = configure_tracing(TracingOptions(batch=False))
    session = build_session(load_script("jack-and-jill"), telemetry=tracing.telemetry, llm=LLMClient(tracing.telemetry),
                            session_id=first.session.id, runs=first.session.runs, message_counter=messages,
                            agent_counter=agents)
    store = SessionStore.create(home / "sessions", session.id)
    recorder = SessionRecorder(store, session.id, billing_file=first.billing_file, warn=pytest.fail, **recorder_kwargs)
    tracing.add_processor(recorder)
    tracing.add_listener(recorder)
    asyncio.run(session.run(prompt))
    recorder.close()
    tracing.shutdown()
    return recorder, store


@pytest.mark.parametrize("base_from", ["checkpoint", "journal"])
def test_resumed_recorder_keeps_the_saved_runs(record, home, base_from):
    first = record()
    saved = first.store.load_tree()
    created = first.store.read_meta()["created"]
    if base_from == "journal":  # a checkpoint not known to be current: the earlier runs come from the journal
        first.store.write_meta({k: v for k, v in first.store.read_meta().items() if k != "checkpoint"})
    ledger_before = read_records(first.billing_file)
    offered = []

    def append(path, records):
        from otel_agents.persistence.ledger import append_records

        offered.extend(records)
        return append_records(path, records)

    recorder, store = _resume(first, home, "Once more", resume=True, append_ledger=append)
    assert recorder.stats.base_spans == (len(first.spans()) if base_from == "journal" else 0)
    tree = store.load_tree()
    assert [r["index"] for r in tree["runs"]] == [1, 2]
    assert tree["runs"][0] == saved["runs"][0]
    assert store.read_meta()["created"] == created  # the session's, not the resuming process's
    ledger = read_records(first.billing_file)
    # Only the new run was billed at its end: run 1's records were not offered again.
    assert {r["run"] for r in offered} == {2}
    assert recorder.stats.ledger_records_written == len(offered) == len(ledger) - len(ledger_before)
    assert verify_session(tree, read_event_lines(store.events_path), ledger) == []
    # The journal now holds both runs: the tree rebuilt from it is the saved tree.
    rebuilt = spans_from_journal(read_journal(store.journal_path, pytest.fail), read_event_lines(store.events_path))
    assert build_tree(rebuilt, first.session.id) == tree


def test_a_resumed_recorder_decodes_the_saved_tree_while_idle(record, home):
    """The recorder process calls idle() whenever its pipe is empty: the saved tree is decoded
    then, not at the first checkpoint. Shown by removing tree.json.gz after an idle moment:
    the final checkpoint still holds the earlier run."""
    from otel_agents.persistence.recorder import SessionRecorder
    from otel_agents.persistence.store import SessionStore

    first = record()
    saved = first.store.load_tree()
    store = SessionStore(first.store.directory)
    recorder = SessionRecorder(store, first.session.id, billing_file=first.billing_file, resume=True,
                               warn=pytest.fail)
    recorder.idle()
    store.tree_path.unlink()
    recorder.close()
    assert store.load_tree()["runs"] == saved["runs"]


def test_a_resumed_recorder_compresses_only_what_changed_since_the_saved_tree(record, home):
    """A resumed session's tree is written whole at its close: the members of the saved tree,
    read through the recorder's encoder, are copied: with no new run, only the meta (its time) is new."""
    from otel_agents.persistence.recorder import SessionRecorder
    from otel_agents.persistence.store import SessionStore
    from otel_agents.persistence.tree_encoding import payload_pieces

    first = record(prompts=["Create Jack and Jill for a cafe discussion", "And then?", "Once more"])
    saved = first.store.load_tree()
    store = SessionStore(first.store.directory)
    recorder = SessionRecorder(store, first.session.id, billing_file=first.billing_file, resume=True,
                               warn=pytest.fail)
    recorder.idle()  # the saved tree is read here
    recorder.close()
    payload = store.load_payload()
    assert payload["session"]["runs"] == saved["runs"]
    _, _, tail = payload_pieces(payload)
    assert recorder.stats.tree_json_compressed == len(tail)


def test_resumed_recorder_with_an_explicit_base_tree(record, home):
    first = record()
    saved = first.store.load_tree()
    _, store = _resume(first, home, "Once more", base_tree=saved)
    tree = store.load_tree()
    assert [r["index"] for r in tree["runs"]] == [1, 2] and tree["runs"][0] == saved["runs"][0]
    assert verify_session(tree, read_event_lines(store.events_path), read_records(first.billing_file)) == []


def test_resume_of_a_damaged_journal_saves_nothing_more(record, home):
    first = record()
    journal = first.store.journal_path
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(lines[0] + b"garbage\n" + b"".join(lines[1:]))
    before = {p.name: p.read_bytes() for p in first.store.directory.iterdir()}
    warnings = []
    from otel_agents.persistence.recorder import SessionRecorder

    recorder = SessionRecorder(first.store, first.session.id, resume=True, warn=warnings.append)
    recorder.close()
    assert len(warnings) == 1 and "spans.jsonl:2" in warnings[0] and "without saving" in warnings[0]
    # Nothing saved is damaged: a recorder that cannot read what it continues writes nothing.
    assert {p.name: p.read_bytes() for p in first.store.directory.iterdir()} == before


def test_runs_in_one_process_do_not_rewrite_the_tree_each_time(record):
    prompts = [f"Prompt {i}" for i in range(12)]
    recorded = record(prompts=["Create Jack and Jill for a cafe discussion", *prompts])
    stats = recorded.recorder.stats
    # Each run end is a candidate checkpoint under the growth policy; close() writes the last one.
    assert stats.checkpoints < 13 / 2
    assert stats.meta_writes >= 2 * 13  # meta.json at each run start and end: small and constant-size
    tree = recorded.store.load_tree()
    assert len(tree["runs"]) == 13 and tree == recorded.recorder.tree()
    assert verify_session(tree, read_event_lines(recorded.store.events_path), read_records(recorded.billing_file)) == []
    # The ledger did not wait for tree writes: every run was billed at its end.
    assert len({r["run"] for r in read_records(recorded.billing_file)}) == 13


def test_journal_holds_every_finished_span_between_checkpoints(record, scripts):
    """Seen from inside a run (as a crash would leave it): the journal knows what the checkpoint does not."""
    seen = {}

    def peek() -> str:
        """Look at the session directory."""
        store = seen["store"]
        journal = read_journal(store.journal_path, pytest.fail)
        seen["ended"] = {line["end"] for line in journal if "end" in line}
        seen["started"] = {line["start"] for line in journal if "start" in line}
        seen["checkpoint"] = store.tree_path.exists()
        return "peeked"

    script = scripts.fan_out(2, "peek-journal")
    script["agents"]["main"].insert(2, {"tool_calls": [{"name": "peek", "arguments": {}}]})
    recorded = record(script, ["go"], tools=[make_tool(peek)], prepare=lambda store: seen.setdefault("store", store),
                      policy=CheckpointPolicy(min_bytes=10**9))
    assert seen["checkpoint"] is False  # no checkpoint yet: only the journal and events.jsonl
    spans = {s.span_id: s for s in recorded.spans()}
    peek_span = next(s for s in spans.values() if s.name == "execute_tool peek")
    ended_before = {s.span_id for s in spans.values() if s.end_ns is not None and s.end_ns < peek_span.start_ns}
    assert seen["ended"] == ended_before and len(ended_before) > 10
    assert peek_span.span_id in seen["started"] and peek_span.span_id not in seen["ended"]


def test_records_of_other_sessions_are_not_written(record, home, monkeypatch):
    """Two sessions on one provider: each recorder keeps to its own spans and records."""
    import asyncio

    from otel_agents.llm.client import LLMClient
    from otel_agents.llm.scripts import load_script
    from otel_agents.persistence.recorder import SessionRecorder
    from otel_agents.persistence.store import SessionStore
    from otel_agents.runtime.scenario import build_session
    from otel_agents.tracing.setup import TracingOptions, configure_tracing

    tracing = configure_tracing(TracingOptions(batch=False))
    script = load_script("jack-and-jill")
    recorders, sessions = [], []
    for _ in range(2):
        session = build_session(script, telemetry=tracing.telemetry, llm=LLMClient(tracing.telemetry))
        recorder = SessionRecorder(SessionStore.create(home / "sessions", session.id), session.id,
                                   billing_file=home / "billing.jsonl", warn=pytest.fail)
        tracing.add_processor(recorder)
        tracing.add_listener(recorder)
        recorders.append(recorder)
        sessions.append(session)

    async def both():
        for session in sessions:
            await session.run("Create Jack and Jill for a cafe discussion")

    asyncio.run(both())
    for recorder in recorders:
        recorder.close()
    tracing.shutdown()
    ledger = read_records(home / "billing.jsonl")
    assert len(ledger) == 40
    for recorder, session in zip(recorders, sessions):
        tree = recorder.store.load_tree()
        assert tree["id"] == session.id and len(tree["runs"]) == 1
        lines = read_event_lines(recorder.store.events_path)
        assert len(lines) == 41  # the demo's 39 records and its two host notices (issue 23)
        assert verify_session(tree, lines, ledger) == []


def test_session_without_runs_writes_only_meta(home):
    from otel_agents.persistence.recorder import SessionRecorder
    from otel_agents.persistence.store import SessionStore

    store = SessionStore.create(home / "sessions", "idle-session")
    recorder = SessionRecorder(store, warn=pytest.fail)
    recorder.close()
    recorder.close()  # idempotent
    assert json.loads(store.meta_path.read_text())["status"] == "new"
    assert not store.tree_path.exists() and not store.events_path.exists()


@pytest.mark.parametrize("shape", ["two-runs", "three-levels"])
def test_the_tree_built_trace_by_trace_is_a_full_build_at_every_span(record, monkeypatch, scripts, shape):
    """The recorder keeps each finished trace's nodes; the tree it assembles from them (open spans
    included) must be build_tree over every span seen, whenever it is asked."""
    from otel_agents.persistence import recorder as module

    compared, differing = [], []
    for hook in ("on_start", "on_end"):
        original = getattr(module.SessionRecorder, hook)

        def checked(self, span, *args, _original=original, _hook=hook, **kwargs):
            _original(self, span, *args, **kwargs)
            with self._lock:
                if self._traces:
                    compared.append(span.name)
                    if self.tree() != build_tree(self.spans(), self.session_id):
                        differing.append(f"{_hook} {span.name}")

        monkeypatch.setattr(module.SessionRecorder, hook, checked)
    if shape == "two-runs":
        recorded = record("jack-and-jill", ["Create Jack and Jill for a cafe discussion", "And then?"])
    else:
        recorded = record(scripts.three_levels())
    assert differing == []
    assert len(compared) == 2 * len(recorded.spans())
    assert recorded.store.load_tree() == build_tree(recorded.spans(), recorded.session.id)
