"""The recording() block: its arguments checked where given, one block per object, and which block records a
session opened in a thread of its own."""

from __future__ import annotations

import pytest

import otel_agents


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"home": 5}, "recording: home= takes a path, not int"),
        ({"sessions_dir": b"sessions"}, "recording: sessions_dir= takes a path, not bytes"),
        ({"billing_file": 1.5}, "recording: billing_file= takes a path, not float"),
        ({"otlp_file": ["x"]}, "recording: otlp_file= takes a path, not list"),
        ({"redacted_save": 1}, "recording: redacted_save= takes True or False, not int"),
        ({"tracer_provider": "sdk"}, "recording: tracer_provider= takes an opentelemetry.sdk.trace.TracerProvider"),
    ],
)
def test_a_wrong_argument_is_a_type_error_naming_it(arguments, message):
    """``recording(home=5)`` raised os.fspath's TypeError, naming no parameter."""
    with pytest.raises(TypeError, match=message.replace(".", r"\.")):
        otel_agents.recording(**arguments)


def test_a_recording_object_used_again_after_its_block_says_it_has_ended(tmp_path):
    """It said 'this recording is already active', though its block was over."""
    rec = otel_agents.recording(home=tmp_path)
    with rec:
        with pytest.raises(RuntimeError, match="already active"):
            rec.__enter__()
    with pytest.raises(RuntimeError, match=r"this recording has ended: .* make a new one"):
        with rec:
            pass
    with otel_agents.recording(home=tmp_path) as again:
        assert again.saved_everything


def test_an_otlp_file_in_a_directory_that_is_not_there_is_refused_where_given(tmp_path):
    """As the CLI's --otlp-file: the block ran every session and only warned it exported nothing."""
    missing = tmp_path / "nodir" / "spans.jsonl"
    with pytest.raises(ValueError, match=r"^recording: otlp_file= .*nodir/spans\.jsonl'.* does not exist$"):
        otel_agents.recording(home=tmp_path / "home", otlp_file=missing)
    assert not (tmp_path / "home").exists() and not missing.parent.exists()
    with otel_agents.recording(home=tmp_path / "home", otlp_file=tmp_path / "spans.jsonl") as rec:
        assert rec.saved_everything


@pytest.mark.parametrize("where, says", [
    # Accepted before, then each run warned "could not write 42 of 42 spans to ... (Is a directory)".
    ("outside", r"^recording: otlp_file= cannot write '.*outside': it is a directory$"),
    # As the CLI's --otlp-file: spans appended to a session's own files would leave it unreadable.
    ("home/sessions/spans.jsonl", r"^recording: otlp_file= .*spans\.jsonl is inside the sessions directory"),
    ("home/billing.jsonl", r"^recording: otlp_file= .*billing\.jsonl is a billing ledger; choose another file$"),
])
def test_an_otlp_file_that_cannot_be_written_unharmed_is_refused_where_given(tmp_path, where, says):
    (tmp_path / "outside").mkdir()
    (tmp_path / "home" / "sessions").mkdir(parents=True)
    with pytest.raises(ValueError, match=says):
        otel_agents.recording(home=tmp_path / "home", otlp_file=tmp_path / where)
    assert not (tmp_path / "home" / "billing.jsonl").exists()


def in_thread(work):
    """What ``work()`` returns or raises, run in a new thread (which inherits no context)."""
    import threading

    outcome: list = []

    def run() -> None:
        try:
            outcome.append(work())
        except Exception as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(60)
    return outcome[0]


def test_a_session_opened_in_a_worker_thread_inside_the_block_is_recorded(tmp_path, monkeypatch):
    """The block lived in a ContextVar a new thread does not inherit: the session ran unrecorded, silently."""
    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    with otel_agents.recording(home=tmp_path) as rec:
        def work():
            with otel_agents.Session(otel_agents.Agent("main", "sys"), script="jack-and-jill") as session:
                session.run_sync("go")
                return session.id, session.recorded

        session_id, recorded = in_thread(work)
    assert recorded and rec.saved_everything
    assert (tmp_path / "sessions" / session_id / "events.jsonl").is_file()


def test_with_several_blocks_open_elsewhere_a_thread_in_none_of_them_is_refused(tmp_path, monkeypatch):
    import threading

    monkeypatch.setenv("OTEL_AGENTS_RECORDER", "inline")
    entered, leave = threading.Event(), threading.Event()

    def other_block() -> None:
        with otel_agents.recording(home=tmp_path / "other"):
            entered.set()
            leave.wait(60)

    other = threading.Thread(target=other_block)
    other.start()
    try:
        assert entered.wait(60)
        with otel_agents.recording(home=tmp_path / "mine"):
            refused = in_thread(lambda: otel_agents.Session(otel_agents.Agent("main", "sys"), script="jack-and-jill"))
            assert isinstance(refused, RuntimeError) and "2 otel_agents.recording() blocks are open" in str(refused)
            with otel_agents.Session(otel_agents.Agent("main", "sys"), script="jack-and-jill") as mine:
                assert mine.recorded  # this thread's own block records it
    finally:
        leave.set()
        other.join(60)
    assert not (tmp_path / "other" / "sessions").exists() or not any((tmp_path / "other" / "sessions").iterdir())
    unrecorded = in_thread(lambda: otel_agents.Session(otel_agents.Agent("main", "sys"), script="jack-and-jill"))
    assert not unrecorded.recorded  # no block open: unrecorded, as outside one
    unrecorded.close()
