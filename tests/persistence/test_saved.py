"""``load_saved``, the one reader: a session being written, one SIGKILLed, damaged files; reading writes nothing."""

from __future__ import annotations

import hashlib
import signal
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from otel_agents.persistence.events_file import read_event_lines
from otel_agents.persistence.ownership import owner_of, take
from otel_agents.persistence.saved import (
    SOURCE_CHECKPOINT, SOURCE_EVENTS, SOURCE_JOURNAL, SOURCE_TREE, SessionUnreadable, load_saved,
)
from otel_agents.persistence.tree_walk import iter_ops, records_of
from support.held_sessions import held_run, session_dir, start_run, wait_for


def snapshot(root: Path, skip: tuple[str, ...] = ()) -> dict[str, tuple[int, int, str]]:
    """Every file and directory under ``root``: size, modification time and a digest of its bytes."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.name in skip:
            continue
        stat = path.stat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        out[str(path.relative_to(root))] = (stat.st_size, stat.st_mtime_ns, digest)
    return out


def ops_by_tool(tree) -> dict[str, dict]:
    return {ref.op["attributes"].get("gen_ai.tool.name"): ref.op for ref in iter_ops(tree) if ref.op["kind"] == "tool"}


def test_a_session_being_written_is_read_with_its_run_open_and_nothing_written(tmp_path):
    with held_run(tmp_path) as (home, directory):
        before = snapshot(home)
        warnings: list[str] = []
        loaded = load_saved(directory, warnings.append)
        assert snapshot(home) == before  # no file added, changed or touched
        assert warnings == []
        assert loaded.live and loaded.source == SOURCE_JOURNAL and loaded.interrupted == 0
        assert not loaded.recovered and loaded.interrupted_ends == ()
        run = loaded.tree["runs"][0]
        assert run["status"] == "in_progress" and run["ended_ns"] is None  # a live writer's run is left open
        assert ops_by_tool(loaded.tree)["hold"]["status"] == "in_progress"
        assert loaded.records == [line.record for line in read_event_lines(loaded.events_path)]
        assert loaded.meta["status"] == "running" and loaded.session_id == directory.name
    closed = load_saved(directory, pytest.fail)
    assert closed.source == SOURCE_CHECKPOINT and not closed.live and closed.billed
    assert ops_by_tool(closed.tree)["hold"]["status"] == "ok"
    # The live read saw a prefix of what the run finally recorded.
    assert closed.records[: len(loaded.records)] == loaded.records


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """A real run SIGKILLed inside its tool; returned once its recorder process has written everything and ended."""
    tmp_path = tmp_path_factory.mktemp("killed")
    home = tmp_path / "home"
    proc = start_run(tmp_path, home, [{"tool_calls": [{"name": "die", "arguments": {}}]}, "never said"], "Work")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL, err
    directory = session_dir(home)
    wait_for(lambda: owner_of(directory) is None, "the recorder process to end")
    return home, directory


def test_a_killed_session_reads_interrupted_in_memory_and_nothing_written(killed):
    home, directory = killed
    before = snapshot(home)
    warnings: list[str] = []
    loaded = load_saved(directory, warnings.append)
    again = load_saved(directory, warnings.append)
    assert snapshot(home) == before
    assert warnings == []
    assert loaded.source == SOURCE_JOURNAL and not loaded.live and not loaded.recovered
    # The run, its turn and the tool call were open: ended at the session's last sign of life.
    assert loaded.interrupted == len(loaded.interrupted_ends) >= 3
    assert {span.name for span in loaded.interrupted_ends} >= {"execute_tool die"}
    run = loaded.tree["runs"][0]
    assert run["status"] == "interrupted" and run["ended_ns"] is not None
    assert ops_by_tool(loaded.tree)["die"]["status"] == "interrupted"
    assert again.tree == loaded.tree and again.records == loaded.records  # the same every time: nothing moved
    assert loaded.damaged == [] and not loaded.billed


def test_repair_needs_the_owner_and_records_what_readers_showed(killed, tmp_path):
    _, original = killed
    directory = tmp_path / "sessions" / original.name
    directory.parent.mkdir()
    subprocess.run(["cp", "-a", str(original), str(directory)], check=True)
    shown = load_saved(directory, pytest.fail)
    journal = directory / "spans.jsonl"
    size = journal.stat().st_size
    with pytest.raises(ValueError, match="owner"):
        load_saved(directory, pytest.fail, repair=True)
    assert journal.stat().st_size == size
    with take(directory):
        repaired = load_saved(directory, lambda message: None, owned=True, repair=True)
    assert repaired.tree == shown.tree and repaired.recovered and journal.stat().st_size > size
    after = load_saved(directory, pytest.fail)
    assert after.source == SOURCE_CHECKPOINT and after.tree == shown.tree and after.interrupted == 0


@pytest.fixture
def closed(record):
    recorded = record(prompts=["Create Jack and Jill for a cafe discussion"])
    return recorded.store, recorded.store.load_tree()


def test_a_damaged_tree_is_noted_and_the_journal_read_without_writing(closed):
    store, final = closed
    data = store.tree_path.read_bytes()
    store.tree_path.write_bytes(data[: len(data) // 2])
    before = snapshot(store.directory)
    warnings: list[str] = []
    loaded = load_saved(store.directory, warnings.append)
    assert snapshot(store.directory) == before
    assert loaded.source == SOURCE_JOURNAL and loaded.tree == final
    assert any("tree.json.gz is truncated or corrupt" in note for note in loaded.notes)
    assert len(warnings) == 1 and "\n" not in warnings[0]


def test_a_torn_last_event_line_is_read_from_the_checkpoint_that_holds_it_without_writing(closed):
    """Cut in half by hand after a clean close: the record is whole in tree.json.gz, so the tree rebuilt from
    the streams still has it (else it contradicts the checkpoint); the file is mended only by the owner."""
    store, final = closed
    expected = [line.record for line in read_event_lines(store.events_path, pytest.fail)]
    data = store.events_path.read_bytes()
    start = data.rstrip(b"\n").rfind(b"\n") + 1
    store.events_path.write_bytes(data[: start + (len(data) - start) // 2])
    before = snapshot(store.directory)
    warnings: list[str] = []
    loaded = load_saved(store.directory, warnings.append)
    assert snapshot(store.directory) == before
    assert loaded.source == SOURCE_JOURNAL and loaded.tree == final
    assert loaded.records == expected
    assert loaded.restored_event is not None and loaded.torn_events == data[start: start + (len(data) - start) // 2]
    assert len(warnings) == 2 and "torn last line" in warnings[0] and "holds whole" in warnings[1]


def test_a_damaged_journal_falls_back_to_the_checkpoint_and_says_so(closed):
    store, final = closed
    lines = store.journal_path.read_bytes().splitlines(keepends=True)
    lines[2] = b'{"start": not json}\n'
    store.journal_path.write_bytes(b"".join(lines))
    before = snapshot(store.directory)
    warnings: list[str] = []
    loaded = load_saved(store.directory, warnings.append)
    assert snapshot(store.directory) == before
    assert loaded.source == SOURCE_TREE and loaded.tree == final
    assert loaded.damaged and "spans.jsonl" in loaded.damaged[0] and "\n" not in loaded.damaged[0]
    assert any("using tree.json.gz" in w for w in warnings)


def test_with_no_tree_and_no_journal_the_events_stand_alone_and_without_them_nothing(closed):
    store, _ = closed
    store.tree_path.write_bytes(b"not gzip")
    store.journal_path.unlink()
    loaded = load_saved(store.directory, lambda message: None)
    assert loaded.source == SOURCE_EVENTS and loaded.tree is None and loaded.records
    store.events_path.write_bytes(b"[1, 2]\n{broken\n")
    before = snapshot(store.directory)
    with pytest.raises(SessionUnreadable) as info:
        load_saved(store.directory, lambda message: None)
    assert "\n" not in str(info.value) and store.session_id in str(info.value)
    assert snapshot(store.directory) == before


def test_damaged_files_are_one_line_exit_2_from_the_cli_and_nothing_is_written(closed):
    from click.testing import CliRunner

    from otel_agents.cli import cli

    store, _ = closed
    store.tree_path.write_bytes(b"not gzip")
    store.journal_path.write_bytes(b'{"start": broken\n' * 3)
    take(store.directory).release()  # the lock file every run leaves: resume, a writer, takes it again
    # owner.lock is the writer's claim, not session data: resume may name itself in it, nothing else.
    before = snapshot(store.directory.parent.parent, skip=("owner.lock",))
    args = ["--sessions-dir", str(store.directory.parent)]
    for command in (["sessions", "show", store.session_id, *args], ["resume", store.session_id, "Go on", *args]):
        done = CliRunner().invoke(cli, command)
        assert done.exit_code == 2, (command, done.output)
        error = [line for line in done.stderr.splitlines() if line.startswith("Error")]
        assert len(error) == 1 and "Traceback" not in done.stderr, done.stderr
    assert snapshot(store.directory.parent.parent, skip=("owner.lock",)) == before


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=10**6), garbage=st.binary(max_size=64))
def test_any_damage_to_tree_json_gz_leaves_the_journal_s_tree_and_writes_nothing(closed, cut, garbage):
    store, final = closed
    data = store.tree_path.read_bytes()
    store.tree_path.write_bytes(data[: cut % (len(data) + 1)] + garbage)
    before = snapshot(store.directory)
    loaded = load_saved(store.directory, lambda message: None)
    assert snapshot(store.directory) == before
    assert loaded.tree == final and loaded.source in (SOURCE_JOURNAL, SOURCE_CHECKPOINT)
    store.tree_path.write_bytes(data)


def test_a_session_stopped_before_its_first_span_reads_as_one_with_no_runs(tmp_path):
    """Its start took the lock (and, stopped cleanly, wrote meta.json with no runs): nothing else."""
    directory = tmp_path / "20261129-102604-83bae3"
    take(directory, create=True).release()
    loaded = load_saved(directory, pytest.fail, owned=True, repair=True)
    assert loaded.tree["runs"] == [] and loaded.records == [] and loaded.event_lines is None
    assert sorted(p.name for p in directory.iterdir()) == ["owner.lock"]  # a repair of it writes nothing


def test_a_meta_json_counting_runs_without_its_streams_stays_unreadable(tmp_path):
    """Damage, not a new session: the runs meta.json counts are gone, and resume must not start afresh."""
    directory = tmp_path / "20261129-102604-83bae3"
    take(directory, create=True).release()
    (directory / "meta.json").write_text('{"id": "20261129-102604-83bae3", "runs": 2}')
    with pytest.raises(SessionUnreadable, match="events.jsonl does not exist"):
        load_saved(directory, lambda _: None)


def test_a_journal_shorter_than_its_checkpoint_gives_way_to_the_checkpoint(record):
    """Readers rebuilt from a journal cut short and showed the part it holds (fewer agents, lower cost),
    hiding tree.json.gz's; they now read the checkpoint and say why. The owner (resume, repair) is told
    it is damaged: recording its open spans as interrupted would contradict the checkpoint."""
    from otel_agents.persistence.saved import SOURCE_TREE

    store = record("jack-and-jill", ["Hello there", "And again"]).store
    lines = store.journal_path.read_bytes().splitlines(keepends=True)
    store.journal_path.write_bytes(b"".join(lines[: len(lines) // 2]))
    said: list[str] = []
    loaded = load_saved(store.directory, said.append)
    assert loaded.source == SOURCE_TREE and loaded.tree == store.load_tree() and not loaded.damaged
    assert loaded.journal_lacks > 0 and loaded.interrupted == 0
    assert any("shorter than tree.json.gz" in message for message in said)
    owned = load_saved(store.directory, lambda message: None, owned=True)
    assert owned.damaged and "shorter than tree.json.gz" in owned.damaged[0]


def test_a_checkpoint_merely_behind_its_journal_lacks_nothing(record):
    from otel_agents.persistence.journal import read_journal, rebuild
    from otel_agents.persistence.saved import journal_shortfall

    store = record("jack-and-jill", ["Hello there"]).store
    spans = rebuild(read_journal(store.journal_path), read_event_lines(store.events_path)).spans
    assert journal_shortfall(store.load_tree(), spans) == 0
    assert journal_shortfall(store.load_tree(), spans[: len(spans) // 2]) > 0


def test_an_events_jsonl_shorter_than_its_checkpoint_gives_way_to_the_checkpoint(record):
    """events.jsonl cut to nothing (or restored from an older copy): readers rebuilt an empty session from the
    journal and the stream, hiding every record tree.json.gz holds; they now read the checkpoint and say why.
    The owner (resume, repair) is told it is damaged: appending to the cut stream would lose its history."""
    from otel_agents.persistence.saved import SOURCE_TREE

    store = record("jack-and-jill", ["Hello there"]).store
    tree = store.load_tree()
    store.events_path.write_bytes(b"")
    said: list[str] = []
    loaded = load_saved(store.directory, said.append)
    assert loaded.source == SOURCE_TREE and loaded.tree == tree and not loaded.damaged
    assert loaded.records == records_of(tree) and loaded.events_lacks == len(records_of(tree))
    (warning,) = [message for message in said if "events.jsonl lacks" in message]
    assert "records the checkpoint (tree.json.gz) holds" in warning
    owned = load_saved(store.directory, lambda message: None, owned=True)
    assert owned.damaged and "events.jsonl lacks" in owned.damaged[0]


def test_an_events_jsonl_whole_but_for_a_torn_line_the_checkpoint_holds_lacks_nothing(record):
    store = record("jack-and-jill", ["Hello there"]).store
    data = store.events_path.read_bytes()
    store.events_path.write_bytes(data[:-20])
    loaded = load_saved(store.directory, lambda message: None)
    assert loaded.events_lacks == 0 and loaded.restored_event is not None
