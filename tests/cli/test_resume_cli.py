"""`otel-agents resume`: the equivalence contract, tracing across runs, and bad input.

Contract (issue 4): running prompts p1..pk in one process, or p1 and then one
resume per remaining prompt, gives identical events (ids, roles, contents,
substance/cause links, order), identical transcripts and identical ledger records.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from otel_agents.cli import cli
from otel_agents.views import SessionViewer

DATA = Path(__file__).resolve().parents[1] / "data"
DEEP = str(DATA / "deep-hooks.json")
VOLATILE = {"ts", "trace_id", "span_id"}
# Ledger fields that differ between any two executions (ids, time) or name the trace.
LEDGER_VOLATILE = {"record_id", "ts", "trace_id", "span_id", "latency_ms", "session_id"}


def invoke(args, input=None):
    result = CliRunner().invoke(cli, args, input=input, catch_exceptions=False)
    return result


def session_id_of(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.startswith("session: ")]
    assert lines, result.stderr
    return lines[-1].split(": ", 1)[1]


def events(home: Path, sid: str) -> list[dict]:
    path = home / "sessions" / sid / "events.jsonl"
    return [{k: v for k, v in orjson.loads(line).items() if k not in VOLATILE} for line in path.read_bytes().splitlines()]


def transcripts(home: Path, sid: str) -> dict[str, list[dict]]:
    viewer = SessionViewer.from_session_dir(home / "sessions" / sid)
    return {
        a.agent_id: [{k: v for k, v in e.items() if k not in VOLATILE} for e in viewer.get_transcript(a.agent_id)]
        for a in viewer.list_agents()
    }


def ledger(home: Path, sid: str) -> list[dict]:
    path = home / "billing.jsonl"
    rows = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    rows = [{k: v for k, v in r.items() if k not in LEDGER_VOLATILE} for r in rows if r["session_id"] == sid]
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))


def run_all_then_resume(home: Path, script: str, prompts: list[str]) -> tuple[str, str]:
    """(one-process session id, resumed session id), both in ``home``."""
    whole = invoke(["run", "--script", script, *prompts])
    assert whole.exit_code == 0, whole.stderr
    first = invoke(["run", "--script", script, prompts[0]])
    assert first.exit_code == 0, first.stderr
    resumed = session_id_of(first)
    for prompt in prompts[1:]:
        result = invoke(["resume", resumed, prompt])
        assert result.exit_code == 0, result.stderr
        assert session_id_of(result) == resumed
    return session_id_of(whole), resumed


@pytest.mark.parametrize(
    "script, prompts",
    [
        ("jack-and-jill", ["Create Jack and Jill for a cafe discussion", "And then?", "Goodbye."]),
        (DEEP, ["Start.", "Go deep.", "Again."]),
    ],
    ids=["jack-and-jill", "deep-hooks"],
)
def test_resuming_prompt_by_prompt_equals_one_process(home, script, prompts):
    whole, resumed = run_all_then_resume(home, script, prompts)
    assert whole != resumed
    whole_events, resumed_events = events(home, whole), events(home, resumed)
    assert resumed_events == whole_events
    kinds = {e["event_type"] for e in whole_events}
    if script == DEEP:  # the contract is only worth something if the hard parts happened
        assert "transcript_truncated" in kinds
        contents = [e.get("content") or "" for e in whole_events]
        assert any("Action blocked by hook 'NoDiscussForA'" in c for c in contents)
        assert any("rejected by hook 'Censor'" in c for c in contents)
        assert any("Go DEEP, A." == c for c in contents)
        assert {e["agent_id"] for e in whole_events if e.get("name") == "C"}, "three levels deep"
    assert transcripts(home, resumed) == transcripts(home, whole)
    assert ledger(home, resumed) == ledger(home, whole)
    assert len(ledger(home, whole)) > 10
    verify = invoke(["sessions", "verify", resumed])
    assert verify.exit_code == 0, verify.stdout + verify.stderr


def test_each_resumed_run_is_a_linked_trace_in_the_same_session(home):
    first = invoke(["run", "hello"])
    sid = session_id_of(first)
    second = invoke(["resume", sid, "again"])
    assert second.exit_code == 0, second.stderr
    tree = json.loads(gzip.decompress((home / "sessions" / sid / "tree.json.gz").read_bytes()))["session"]
    runs = tree["runs"]
    assert [r["index"] for r in runs] == [1, 2]
    assert runs[0]["trace_id"] != runs[1]["trace_id"]
    link = runs[1]["links"]
    assert [(l["trace_id"], l["span_id"]) for l in link] == [(runs[0]["trace_id"], runs[0]["span_id"])]
    attributes = runs[1]["attributes"]
    assert attributes["gen_ai.conversation.id"] == sid
    assert attributes["otel_agents.resumed_from"] == f"{runs[0]['trace_id']}:{runs[0]['span_id']}"
    assert attributes["otel_agents.run.source"] == "resume"


def test_ids_are_never_reused_after_resume(home):
    sid = session_id_of(invoke(["run", "Create Jack and Jill for a cafe discussion"]))
    invoke(["resume", sid, "Create more"])
    lines = events(home, sid)
    ids = [e["message_id"] for e in lines]
    assert len(ids) == len(set(ids))
    assert ids == sorted(ids)
    agents = [e["agent_id"] for e in lines if e["event_type"] == "agent_created"]
    assert len(agents) == len(set(agents))


def test_run_resume_option_is_an_alias(home):
    sid = session_id_of(invoke(["run", "hello"]))
    result = invoke(["run", "--resume", sid, "again"])
    assert result.exit_code == 0, result.stderr
    assert session_id_of(result) == sid
    assert len({e["message_id"] for e in events(home, sid)}) == len(events(home, sid))


def test_resume_in_a_real_process_continues_where_the_first_stopped(home, tmp_path):
    env = {**os.environ, "OTEL_AGENTS_HOME": str(home)}
    cmd = [sys.executable, "-m", "otel_agents"]
    workdir = tmp_path / "workdir"
    workdir.mkdir()
    first = subprocess.run(cmd + ["run", "Create Jack and Jill for a cafe discussion"], env=env,
                           capture_output=True, text=True, timeout=120, cwd=workdir)
    assert first.returncode == 0, first.stderr
    sid = first.stderr.strip().splitlines()[-1].split(": ", 1)[1]
    second = subprocess.run(cmd + ["resume", sid, "What did Jill say?"], env=env,
                            capture_output=True, text=True, timeout=120, cwd=workdir)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "I have nothing further to add."  # root's script has no turn left
    whole = invoke(["run", "Create Jack and Jill for a cafe discussion", "What did Jill say?"])
    assert events(home, sid) == events(home, session_id_of(whole))
    assert list(workdir.iterdir()) == [], "nothing is written to the working directory"


# --- bad input: a clear one-line error, exit 2, and nothing in the session directory changes ---


def snapshot(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def saved(home):
    sid = session_id_of(invoke(["run", "Create Jack and Jill for a cafe discussion"]))
    return sid, home / "sessions" / sid


def assert_usage_error(result, *needles):
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    message = result.stderr.strip().splitlines()[-1]
    for needle in needles:
        assert needle in message, message
    assert "Traceback" not in result.stderr


def test_unknown_session_is_a_usage_error(home):
    assert_usage_error(invoke(["resume", "20990101-000000-abcdef", "hi"]), "no session")


@pytest.mark.parametrize("bad", ["../etc", "a/b", "..", "/tmp/x"])
def test_ids_that_could_escape_are_refused(home, bad):
    assert_usage_error(invoke(["resume", bad, "hi"]), "invalid session id")


def test_unknown_tree_version_is_refused_and_nothing_changes(saved):
    sid, directory = saved
    payload = json.loads(gzip.decompress((directory / "tree.json.gz").read_bytes()))
    payload["version"] = 99
    (directory / "tree.json.gz").write_bytes(gzip.compress(json.dumps(payload).encode()))
    before = snapshot(directory)
    assert_usage_error(invoke(["resume", sid, "hi"]), "version 99")
    assert snapshot(directory) == before


def test_events_that_contradict_the_tree_are_refused_and_nothing_changes(saved):
    sid, directory = saved
    path = directory / "events.jsonl"
    lines = path.read_bytes().splitlines()
    for i, line in enumerate(lines):
        record = orjson.loads(line)
        if record.get("content") == "Hi, I'm Jack. *extends hand*":
            record["content"] = "Something Jack never said."
            lines[i] = orjson.dumps(record)
            break
    else:
        raise AssertionError("Jack's line is missing from the demo")
    path.write_bytes(b"\n".join(lines) + b"\n")
    before = snapshot(directory)
    assert_usage_error(invoke(["resume", sid, "hi"]), "contradicts")
    assert snapshot(directory) == before


def test_a_corrupt_tree_falls_back_to_the_saved_streams(saved, home):
    sid, directory = saved
    data = (directory / "tree.json.gz").read_bytes()
    (directory / "tree.json.gz").write_bytes(data[: len(data) // 2])
    result = invoke(["resume", sid, "Still there?"])
    assert result.exit_code == 0, result.stderr
    assert "tree.json.gz" in result.stderr  # said on stderr, not silently
    assert result.stdout.strip() == "I have nothing further to add."
    ids = [e["message_id"] for e in events(home, sid)]
    assert len(ids) == len(set(ids))


def test_a_missing_script_file_is_a_usage_error(home, tmp_path):
    script = tmp_path / "moved.json"
    script.write_text(Path(DEEP).read_text())
    sid = session_id_of(invoke(["run", "--script", str(script), "Start."]))
    script.unlink()
    directory = home / "sessions" / sid
    before = snapshot(directory)
    assert_usage_error(invoke(["resume", sid, "Go deep."]), "script", "(pass --script)")
    assert snapshot(directory) == before
    # A --script of one's own that cannot be loaded is named as such: no hint to pass what was passed.
    wrong = invoke(["resume", sid, "--script", str(script), "Go deep."])
    assert_usage_error(wrong, "--script: no script")
    assert "(pass --script)" not in wrong.stderr
    # An empty prompt would be recorded and answered: refused before anything runs.
    assert_usage_error(invoke(["resume", sid, "--script", DEEP, " "]), "prompt 1 is empty")
    assert snapshot(directory) == before
    ok = invoke(["resume", sid, "--script", DEEP, "Go deep."])
    assert ok.exit_code == 0, ok.stderr
    assert ok.stdout.strip() == "Deep done."


def test_a_resume_script_whose_hooks_name_no_agent_of_the_session_is_refused(home, tmp_path):
    """`run` refuses a script whose hook watches an agent it can never have (a typo guards nothing); a resume
    on another script was not checked. The session's own agents count, as the script's turns' do."""
    sid = session_id_of(invoke(["run", "--script", DEEP, "Start."]))
    directory = home / "sessions" / sid
    before = snapshot(directory)
    data = json.loads(Path(DEEP).read_text())
    typo = tmp_path / "typo.json"
    typo.write_text(json.dumps({**data, "hooks": [{**data["hooks"][0], "agents": ["Aa"]}]}))
    assert_usage_error(invoke(["resume", sid, "--script", str(typo), "Go deep."]), "hook 'NoDiscussForA': agents names 'Aa'")
    assert snapshot(directory) == before
    # An agent only the saved session has (created by a turn of the script it ran on) is one a hook may watch.
    only_saved = tmp_path / "only_saved.json"
    only_saved.write_text(json.dumps({**data, "agents": {"main": ["Fine."]}}))
    done = invoke(["resume", sid, "--script", str(only_saved), "Go deep."])
    assert done.exit_code == 0, done.stderr


def test_a_redacted_save_keeps_no_contents_and_cannot_be_resumed(home):
    result = invoke(["run", "--redacted-save", "Create Jack and Jill for a cafe discussion"])
    assert result.exit_code == 0, result.stderr
    sid = session_id_of(result)
    directory = home / "sessions" / sid
    saved_bytes = b"".join(
        gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes() for p in sorted(directory.iterdir())
    )
    for said in (b"Hi, I'm Jack", b"Create Jack and Jill", b"Be friendly but not over-eager", b"You work in HR"):
        assert said not in saved_bytes
    assert b"[REDACTED]" in saved_bytes
    shown = invoke(["sessions", "show", sid])
    assert shown.exit_code == 0 and "$0.00" in shown.stdout  # shape, timings and costs are kept
    assert invoke(["sessions", "verify", sid]).exit_code == 0
    before = snapshot(directory)
    assert_usage_error(invoke(["resume", sid, "hi"]), "redacted-save")
    assert snapshot(directory) == before


def test_an_unbilled_closed_session_is_billed_once_then_marked(home):
    sid = session_id_of(invoke(["run", "Create Jack and Jill for a cafe discussion"]))
    directory = home / "sessions" / sid
    billing = home / "billing.jsonl"
    meta = json.loads((directory / "meta.json").read_text())
    (directory / "meta.json").write_text(json.dumps({**meta, "billed": False}))
    kept = billing.read_bytes()
    billing.write_bytes(b"")  # as if the ledger could not be written during the run
    result = invoke(["resume", sid, "And then?"])
    assert result.exit_code == 0, result.stderr
    runs = [orjson.loads(line)["run"] for line in billing.read_bytes().splitlines()]
    assert sorted(set(runs)) == [1, 2] and runs.count(1) == len(kept.splitlines())
    assert json.loads((directory / "meta.json").read_text())["billed"] is True


KILLABLE = {
    "name": "killable",
    "root": {"name": "main", "system_prompt": "Coordinate."},
    # The resume asks the same turn again: long enough to be killed in, short enough to wait for.
    "agents": {"main": [{"text": "thinking a while", "latency_ms": 5000}, "back again"]},
}


def test_a_resume_of_a_killed_run_says_the_endpoint_lacks_its_spans(tmp_path):
    """A SIGKILLed run's open spans never ended and its exporter's queue died with it: a resume with an
    OTLP endpoint says how to make the central copy whole; a resume with none, or of a clean session, does not."""
    import signal
    import time

    from support.otlp_receivers import HttpTraceReceiver

    home = tmp_path / "home"
    script = tmp_path / "killable.json"
    script.write_text(json.dumps(KILLABLE))
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_EXPORTER_OTLP", "OTEL_AGENTS_"))}
    environment.update({"OTEL_AGENTS_HOME": str(home), "OTEL_TRACES_EXPORTER": "none"})

    def cli_run(*args, extra=None):
        return subprocess.run([sys.executable, "-m", "otel_agents", *args], env={**environment, **(extra or {})},
                              cwd=tmp_path, capture_output=True, text=True, timeout=180)

    proc = subprocess.Popen([sys.executable, "-m", "otel_agents", "run", "--script", str(script), "Go."],
                            env=environment, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:  # until the root waits on its answer
            found = list((home / "sessions").glob("*/spans.jsonl")) if (home / "sessions").exists() else []
            if found and b'"chat ' in found[0].read_bytes():
                break
            time.sleep(0.2)
        else:
            pytest.fail("the run never reached its LLM call")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    (session_dir,) = (home / "sessions").iterdir()
    sid = session_dir.name
    with HttpTraceReceiver() as receiver:
        endpoint = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        done = cli_run("resume", sid, "Again.", extra=endpoint)
        assert done.returncode == 0, done.stderr
        (note,) = [line for line in done.stderr.splitlines() if line.startswith("note: the interrupted run")]
        assert f"`otel-agents export {sid}`" in note and receiver.endpoint.rsplit(":", 1)[1] in note
        again = cli_run("resume", sid, "Once more.", extra=endpoint)  # closed cleanly by the last resume
        assert again.returncode == 0, again.stderr
        assert "note: the interrupted run" not in again.stderr


def test_resume_and_send_refuse_an_events_jsonl_cut_short(home, monkeypatch):
    """events.jsonl truncated: resume warned, went on and appended the new run's records to the empty
    stream, so the session's history was lost for good. Now resume (CLI and Python) and send refuse in one
    line, exit 2, and write nothing."""
    import otel_agents
    from otel_agents.restore import ResumeError

    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    first = invoke(["run", "--script", "jack-and-jill", "Create Jack and Jill"])
    assert first.exit_code == 0, first.stderr
    sid = session_id_of(first)
    directory = home / "sessions" / sid
    (directory / "events.jsonl").write_bytes(b"")
    before = {path.name: path.read_bytes() for path in directory.iterdir() if path.name != "owner.lock"}
    for args in (["resume", sid, "more"], ["send", sid, "more", "--to", "Jack"]):
        result = invoke(args)
        assert result.exit_code == 2, (args, result.stderr)
        (error,) = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
        assert "events.jsonl lacks" in error and "cannot be resumed" in error
    with otel_agents.recording(), pytest.raises(ResumeError, match="events.jsonl lacks"):
        otel_agents.resume(sid, script="jack-and-jill")
    assert {path.name: path.read_bytes() for path in directory.iterdir() if path.name != "owner.lock"} == before
