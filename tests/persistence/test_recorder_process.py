"""The session recorder in its own process: same files as in-process, crash and failure behaviour, modes."""

from __future__ import annotations

import os
import signal
import sys
import threading

import pytest
from click.testing import CliRunner
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from otel_agents.persistence.journal import read_journal
from otel_agents.persistence.ledger_read import read_records
from otel_agents.persistence.recorder import CheckpointPolicy, SessionRecorder
from otel_agents.persistence.recorder_process import RecorderModeError, fork_recorder, recorder_mode
from otel_agents.persistence.ownership import owner_of, take
from otel_agents.persistence.store import SessionStore
from otel_agents.tracing import semconv as sc

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the recorder process is Linux-only")


def _forked(tmp_path, session_id, warnings, **kwargs):
    store = SessionStore.create(tmp_path / "forked" / "sessions", session_id)
    recorder = SessionRecorder(store, session_id, billing_file=tmp_path / "forked" / "billing.jsonl",
                               warn=warnings.append, **kwargs)
    return store, fork_recorder(recorder)


@pytest.mark.parametrize("policy", [CheckpointPolicy(), CheckpointPolicy(growth=0, min_bytes=0, during_runs=True)])
def test_the_recorder_process_writes_what_the_inline_recorder_writes(record, scripts, tmp_path, policy):
    forked: dict = {}
    warnings: list[str] = []

    def attach(tracing, session):
        store, link = _forked(tmp_path, session.id, warnings, policy=policy)
        tracing.add_processor(link)
        tracing.add_listener(link)
        forked.update(store=store, link=link)
        return link

    recorded = record(scripts.three_levels(), prompts=["first", "second"], attach=attach, policy=policy)
    store, inline = forked["store"], recorded.store
    assert warnings == [] and recorded.warnings == []
    # Byte for byte: the child rebuilt every span and record exactly.
    for name in ("spans.jsonl", "events.jsonl"):
        assert (store.directory / name).read_bytes() == (inline.directory / name).read_bytes(), name
    assert store.load_tree() == inline.load_tree()
    assert read_records(tmp_path / "forked" / "billing.jsonl") == read_records(recorded.billing_file)
    differ = {"created", "updated", "checkpoint"}  # when each wrote, and the stamps of its own files
    mine, theirs = store.read_meta(), inline.read_meta()
    assert {k: v for k, v in mine.items() if k not in differ} == {k: v for k, v in theirs.items() if k not in differ}
    assert mine["billed"] and mine["status"] == "ok" and mine["writer"] is None
    assert not os.path.exists(f"/proc/{forked['link'].pid}")  # closed means ended and reaped


def test_a_frame_larger_than_the_pipe_arrives_whole(tmp_path):
    warnings: list[str] = []
    store, link = _forked(tmp_path, "20261122-000000-abcdef", warnings)
    provider = TracerProvider()
    provider.add_span_processor(link)
    big = "x" * (3 << 20)  # three times the pipe's buffer: the run waits while the child reads
    tracer = provider.get_tracer("otel_agents")
    with tracer.start_as_current_span("invoke_agent main", attributes={
            sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.SESSION_ID: store.session_id, "big": big}):
        pass
    link.close()
    assert warnings == []
    (start,) = [line for line in read_journal(store.journal_path, pytest.fail) if "start" in line]
    assert start["attrs"]["big"] == big


@pytest.fixture
def a_known_credential(monkeypatch):
    from otel_agents.tracing.credentials import reload_credentials

    monkeypatch.setenv("MY_SERVICE_TOKEN", "plain-looking-token-42")
    reload_credentials()
    yield "plain-looking-token-42"
    monkeypatch.delenv("MY_SERVICE_TOKEN")
    reload_credentials()


def test_each_batch_says_whether_its_bytes_hold_a_known_credential(a_known_credential):
    from otel_agents.persistence.recorder_link import encode_frame
    from otel_agents.persistence.recorder_process import _batches

    read_fd, write_fd = os.pipe()
    os.write(write_fd, encode_frame(("plain", 1)) + encode_frame(("plain", 2)))
    batches = _batches(read_fd, lambda: False)
    assert next(batches) == ([("plain", 1), ("plain", 2)], True)
    os.write(write_fd, encode_frame(("plain", 3)) + encode_frame((f"says {a_known_credential}", 4)))
    assert next(batches) == ([("plain", 3), (f"says {a_known_credential}", 4)], False)
    os.close(write_fd)
    assert list(batches) == []


def test_a_known_credential_never_reaches_the_journal_of_the_recorder_process(tmp_path, a_known_credential):
    warnings: list[str] = []
    store, link = _forked(tmp_path, "20261127-000000-abcdef", warnings)
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(link)
    tracer = provider.get_tracer("otel_agents")
    with tracer.start_as_current_span("invoke_agent main", attributes={
            sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.SESSION_ID: store.session_id, "note": "nothing secret"}):
        with tracer.start_as_current_span("step") as step:
            step.set_attribute("note", f"the token is {a_known_credential}")  # set directly: Telemetry never saw it
            step.add_event("log", {"line": a_known_credential})
    link.close()
    assert warnings == []
    journal = store.journal_path.read_text()
    assert a_known_credential not in journal
    assert "the token is [REDACTED]" in journal and "nothing secret" in journal


def test_idle_work_in_slices_goes_on_without_waiting_for_messages():
    """The child's loop calls the recorder's idle work again at once while it says more remains."""
    from otel_agents.persistence.recorder_link import encode_frame
    from otel_agents.persistence.recorder_process import _batches

    read_fd, write_fd = os.pipe()
    frames = [("hello", n) for n in range(3)]
    for frame in frames:
        os.write(write_fd, encode_frame(frame))
    calls = []
    closed = threading.Lock()

    def end_run() -> None:
        if closed.acquire(blocking=False):
            os.close(write_fd)

    def idle() -> bool:
        calls.append(1)
        if len(calls) < 4:
            return True  # another slice to do
        end_run()  # the run ends after the fourth idle moment
        return False

    safety = threading.Timer(10, end_run)  # were idle not called again, the loop would wait for ever
    safety.start()
    try:
        assert [message for batch, _ in _batches(read_fd, idle) for message in batch] == frames
    finally:
        safety.cancel()
    assert len(calls) == 4


def _one_span(link, store) -> None:
    provider = TracerProvider(shutdown_on_exit=False)  # no shutdown at exit: each test ends the link itself
    provider.add_span_processor(link)
    with provider.get_tracer("otel_agents").start_as_current_span("invoke_agent main", attributes={
            sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.SESSION_ID: store.session_id}):
        pass


@pytest.fixture
def long_pauses(monkeypatch):
    """The child, forked after this, pauses 30 s between looks at an empty pipe."""
    from otel_agents.persistence import recorder_process

    monkeypatch.setattr(recorder_process, "_PAUSE_MIN_S", 30.0)
    monkeypatch.setattr(recorder_process, "_PAUSE_MAX_S", 30.0)


def test_close_wakes_the_recorder_process_from_its_pause(tmp_path, long_pauses):
    import time

    warnings: list[str] = []
    store, link = _forked(tmp_path, "20261122-000000-abcdef", warnings)
    time.sleep(0.3)  # the child has found the pipe empty and is in its pause
    _one_span(link, store)
    started = time.monotonic()
    link.close()
    assert time.monotonic() - started < 10  # not the pause's 30 s
    assert warnings == []
    assert [line["name"] for line in read_journal(store.journal_path, pytest.fail) if "start" in line] == [
        "invoke_agent main"]


def test_a_run_that_dies_without_closing_ends_the_recorders_pause(tmp_path, long_pauses):
    """Killed, the run's pipes close with it: the child writes what it was sent and ends at once."""
    import time

    store, link = _forked(tmp_path, "20261122-000000-abcdef", [])
    time.sleep(0.3)
    _one_span(link, store)
    started = time.monotonic()
    for fd in (link.fd, link.wake_fd, link.notice_fd):
        os.close(fd)  # what the kernel does to a killed process's descriptors
    _, status = os.waitpid(link.pid, 0)
    assert time.monotonic() - started < 10 and os.waitstatus_to_exitcode(status) == 0
    assert sum("end" in line for line in read_journal(store.journal_path, pytest.fail)) == 1


def test_the_childs_pause_ends_on_a_wake_pipe_numbered_past_1023():
    """A run with many files open hands the child high descriptors; ``select`` would refuse them."""
    import resource
    import time

    from otel_agents.persistence.recorder_link import encode_frame
    from otel_agents.persistence.recorder_process import _batches

    high = 1500
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft <= high:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    read_fd, write_fd = os.pipe()
    wake_read, wake_write = os.pipe()
    os.dup2(wake_read, high)
    os.close(wake_read)
    frames = [("hello", n) for n in range(3)]
    for frame in frames:
        os.write(write_fd, encode_frame(frame))

    def close_and_wake() -> None:
        os.close(write_fd)
        os.write(wake_write, b"\0")

    closer = threading.Timer(0.2, close_and_wake)  # the child is in its pause by then
    started = time.monotonic()
    closer.start()
    try:
        assert [message for batch, _ in _batches(read_fd, lambda: False, high) for message in batch] == frames
    finally:
        closer.join()
        os.close(wake_write)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert time.monotonic() - started < 5
    with pytest.raises(OSError):
        os.fstat(high)  # the loop closed it


def test_the_pause_shortens_before_the_pipe_could_fill_and_grows_back():
    from otel_agents.persistence.recorder_process import _PAUSE_MAX_S, _PAUSE_MIN_S, _next_pause

    capacity = 1 << 20
    pause = _PAUSE_MIN_S
    for _ in range(20):  # a trickle: the pause grows to its longest
        pause = _next_pause(pause, 4096, capacity)
    assert pause == _PAUSE_MAX_S
    burst = _next_pause(pause, capacity * 3 // 4, capacity)  # three quarters of the pipe gathered
    assert burst == pause / 2
    assert _next_pause(burst, capacity // 4, capacity) == burst  # between the marks: kept
    for _ in range(20):
        pause = _next_pause(pause, capacity, capacity)
    assert pause == _PAUSE_MIN_S


@pytest.mark.parametrize("collecting", [True, False])
def test_forking_the_recorder_leaves_the_runs_collector_as_it_was(tmp_path, collecting):
    """What the run froze stays frozen (litellm's objects), and collection stays on or off."""
    import gc

    frozen_before = gc.get_freeze_count()
    gc.freeze()  # the run's own frozen objects
    frozen = gc.get_freeze_count()
    was_enabled = gc.isenabled()
    if not collecting:
        gc.disable()
    try:
        _, link = _forked(tmp_path, "20261122-000000-abcdef", [])
        # A frozen object can still be freed meanwhile (a temporary of pytest-xdist's I/O thread
        # frozen with the rest): the count may fall by those few. Unfreezing would empty it,
        # freezing the run's newer objects would raise it.
        assert frozen - 1_000 < gc.get_freeze_count() <= frozen and gc.isenabled() is collecting
        link.close()
    finally:
        if was_enabled:
            gc.enable()
        if frozen_before == 0:
            gc.unfreeze()


def test_spans_ending_on_many_threads_arrive_whole(tmp_path):
    warnings: list[str] = []
    store, link = _forked(tmp_path, "20261122-000000-abcdef", warnings)
    provider = TracerProvider()
    provider.add_span_processor(link)
    tracer = provider.get_tracer("otel_agents")
    big = "y" * (3 << 19)  # larger than the pipe: written in parts, which must not interleave

    with tracer.start_as_current_span("invoke_agent main", attributes={
            sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.SESSION_ID: store.session_id}) as root:
        parent = trace.set_span_in_context(root)

        def work(n: int) -> None:
            for i in range(12):
                with tracer.start_as_current_span(f"work {n}-{i}", context=parent,
                                                  attributes={"value": big if i % 4 == 0 else str(i)}):
                    pass

        threads = [threading.Thread(target=work, args=(n,)) for n in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    link.close()
    assert warnings == []
    journal = read_journal(store.journal_path, pytest.fail)
    starts = {line["name"]: line for line in journal if "start" in line}
    assert len(starts) == 37 and sum("end" in line for line in journal) == 37
    assert all(starts[f"work {n}-{i}"]["attrs"]["value"] == (big if i % 4 == 0 else str(i))
               for n in range(3) for i in range(12))


def test_the_recorder_process_leaves_stdin_and_stdout_to_the_run(tmp_path):
    """A pipeline reading the run's output sees its end when the run's process ends."""
    import time

    _, link = _forked(tmp_path, "20261122-000000-abcdef", [])
    try:
        deadline = time.monotonic() + 5
        while os.readlink(f"/proc/{link.pid}/fd/1") != os.devnull and time.monotonic() < deadline:
            time.sleep(0.01)
        assert os.readlink(f"/proc/{link.pid}/fd/0") == os.readlink(f"/proc/{link.pid}/fd/1") == os.devnull
    finally:
        link.close()


def _dead_but_unreaped(pid: int) -> None:
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)


def test_the_run_goes_on_with_one_warning_when_the_recorder_process_dies(record, tmp_path):
    warnings: list[str] = []

    def attach(tracing, session):
        _, link = _forked(tmp_path, session.id, warnings)
        os.kill(link.pid, signal.SIGKILL)
        _dead_but_unreaped(link.pid)
        tracing.add_processor(link)
        tracing.add_listener(link)
        return link

    recorded = record(attach=attach)
    assert recorded.utterances and recorded.warnings == []
    assert len(warnings) == 1 and "recorder" in warnings[0] and "goes on without saving it" in warnings[0]
    assert recorded.store.load_tree()["status"] == "ok"  # the other recorder saw everything


def test_a_record_that_cannot_be_sent_costs_one_warning_not_the_run(tmp_path):
    warnings: list[str] = []
    store, link = _forked(tmp_path, "20261122-000000-abcdef", warnings)
    span = trace.NonRecordingSpan(trace.INVALID_SPAN_CONTEXT)
    link.on_record(span, {"event_type": "piece_of_text", "content": lambda: None}, 1)  # not picklable
    link.on_record(span, {"event_type": "piece_of_text", "content": "fine"}, 2)  # nothing more is sent
    link.close()
    assert len(warnings) == 1 and "cannot be sent" in warnings[0] and "goes on without saving it" in warnings[0]
    assert not store.events_path.exists()


def test_the_childs_warnings_reach_the_run(record, tmp_path):
    warnings: list[str] = []

    def attach(tracing, session):
        store, link = _forked(tmp_path, session.id, warnings)
        store.events_path.mkdir()  # events.jsonl cannot be opened: the child warns, once
        tracing.add_processor(link)
        tracing.add_listener(link)
        return link

    record(attach=attach)
    assert len(warnings) == 1 and "events.jsonl" in warnings[0], warnings


def test_a_session_is_written_while_its_recorder_process_lives(tmp_path):
    """The lock taken by the run is held by the forked recorder too, and dies with it (even unreaped)."""
    directory = tmp_path / "20261122-000000-abcdef"
    ownership = take(directory, create=True)
    gate_read, gate_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the "recorder": holds the inherited lock until told to end
        os.close(gate_write)
        os.read(gate_read, 1)
        os._exit(0)
    os.close(gate_read)
    try:
        ownership.release()  # the run ended; its recorder still writes
        assert owner_of(directory) is not None
        os.write(gate_write, b"x")
        _dead_but_unreaped(pid)  # a zombie: its descriptors, and so the lock, are gone
        assert owner_of(directory) is None
    finally:
        os.close(gate_write)
        os.waitpid(pid, 0)


def test_recorder_mode_from_the_environment():
    assert recorder_mode({}) == "process"
    assert recorder_mode({"OTEL_AGENTS_RECORDER": " Inline "}) == "inline"
    with pytest.raises(RecorderModeError, match="OTEL_AGENTS_RECORDER must be one of process, inline"):
        recorder_mode({"OTEL_AGENTS_RECORDER": "thread"})


def test_cli_with_a_bad_recorder_mode_says_so_and_saves_nothing(home, monkeypatch):
    from otel_agents.cli import cli

    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "thread")
    result = CliRunner().invoke(cli, ["run", "Hello"])
    assert result.exit_code == 2
    assert "OTEL_AGENTS_RECORDER must be one of" in result.stderr and "Traceback" not in result.output
    assert not (home / "sessions").exists() or not any((home / "sessions").iterdir())


@pytest.mark.parametrize("mode", ["inline", "process"])
def test_cli_runs_and_verifies_in_either_mode(home, monkeypatch, mode):
    from otel_agents.cli import cli

    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    monkeypatch.setenv("OTEL_AGENTS_RECORDER", mode)
    forks = []
    real_fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())
    ran = CliRunner().invoke(cli, ["run", "Create Jack and Jill for a cafe discussion"])
    assert ran.exit_code == 0, ran.output
    assert len(forks) == (mode == "process")
    session_id = ran.stderr.strip().splitlines()[-1].split(": ", 1)[1]
    verified = CliRunner().invoke(cli, ["sessions", "verify", session_id])
    assert verified.exit_code == 0, verified.output
