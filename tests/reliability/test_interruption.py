"""Ctrl-C (SIGINT) and SIGTERM during a run, sent to a real ``otel-agents`` process.

The process ends open spans as cancelled, writes the tree, flushes the ledger and
exits 130; the saved session then verifies, bills each operation once, and
resumes. (SIGKILL, where nothing can be flushed, is covered by the crash-recovery
tests of the persistence layer; the last test here kills a run in its first answer.)
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from reliability_helpers import (
    ScriptBuilder,
    cli_command,
    event_records,
    invoke,
    ledger,
    llm_ops,
    load_tree,
    session_id_of,
    subprocess_env,
    verify,
    walk_ops,
)
from support.openai_server import Reply

INTERRUPTED = "interrupted: open spans were ended as cancelled and the session was saved"
# Long enough that the signal always lands while the model is still "thinking".
SLOW_MS = 60_000


def slow_helper_script(tmp_path: Path) -> Path:
    """main delegates to Helper, whose first answer takes a minute; main's second turn ends the next run."""
    return ScriptBuilder("slow-helper", {
        "main": [
            {"tool_calls": [{"name": "task", "arguments": {
                "name": "Helper", "system_prompt": "You think slowly.", "user_prompt": "Think about it"}}]},
            "main is done",
        ],
        "Helper": [{"text": "a slow thought", "latency_ms": SLOW_MS}],
    }).write(tmp_path / "slow-helper.json")


def backoff_script(tmp_path: Path) -> Path:
    """main's first attempt fails with a 429 asking to wait 30 s: the signal lands during the backoff."""
    return ScriptBuilder("long-backoff", {
        "main": [{"text": "after the wait", "fail_first_attempt": {"status": 429, "retry_after": 30}}, "resumed"],
    }).write(tmp_path / "long-backoff.json")


def journal_starts(session_dir: Path) -> list[dict]:
    path = session_dir / "spans.jsonl"
    if not path.exists():
        return []
    out = []
    for line in path.read_bytes().splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue  # the line being written
        out.append(value)
    return out


def wait_for(predicate, proc: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before the signal: {proc.communicate()}")
        if predicate():
            return
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("the run never reached the point to interrupt")


def helper_attempt_open(home: Path):
    def check() -> bool:
        sessions = list((home / "sessions").glob("*"))
        if not sessions or not (sessions[0] / "events.jsonl").exists():
            return False
        return any(
            line.get("name", "").startswith("chat ") and line.get("attrs", {}).get("gen_ai.agent.name") == "Helper"
            for line in journal_starts(sessions[0])
        )
    return check


def backoff_started(home: Path):
    def check() -> bool:
        sessions = list((home / "sessions").glob("*"))
        if not sessions or not (sessions[0] / "events.jsonl").exists():
            return False
        # The failed attempt's end line is in the journal: the client is now waiting to retry.
        ends = [line for line in journal_starts(sessions[0]) if "end" in line and line.get("status") == "ERROR"]
        return bool(ends)
    return check


def first_attempt_open(home: Path):
    def check() -> bool:
        sessions = list((home / "sessions").glob("*"))
        return bool(sessions) and any(line.get("name", "").startswith("chat ") for line in journal_starts(sessions[0]))
    return check


def interrupt(script: Path, home: Path, signum: int, ready, settle_s: float = 0.1,
              ) -> tuple[subprocess.CompletedProcess, str]:
    proc = subprocess.Popen(
        [*cli_command(), "run", "--script", str(script), "go"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env(home), cwd=home.parent,
    )
    try:
        wait_for(ready(home), proc)
        time.sleep(settle_s)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), session_id_of(err)


def session_created(home: Path):
    def check() -> bool:
        return any((p / "owner.lock").exists() for p in (home / "sessions").glob("*"))  # no span yet
    return check


def test_sigterm_while_litellm_is_imported_before_the_first_run_ends_it_cleanly(rel_home, tmp_path):
    """The CLI imports litellm before it takes the session's lock: a signal just after the lock lands as
    the first run starts, and must still save the session and exit 130, not end in a traceback
    (a signal during the import itself: test_startup_kill.py)."""
    proc, session_id = interrupt(slow_helper_script(tmp_path), rel_home, signal.SIGTERM, session_created)
    assert proc.returncode == 130 and "Traceback" not in proc.stderr, proc.stderr
    assert INTERRUPTED in proc.stderr and session_id, proc.stderr


# The command with a SIGTERM sent to itself just after the session's lock is taken, before the prompt loop.
SIGTERM_AFTER_THE_LOCK = """
import os, signal, sys
import otel_agents.session_recording as recording
real = recording.start_recording
def start(*args, **kwargs):
    started = real(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGTERM)
    return started
recording.start_recording = start
from otel_agents.cli import main
sys.argv = ["otel-agents", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("command", [["run", "Hello."], ["fork", "SOURCE", "--at", "msg_000002", "Then?"]])
def test_a_signal_between_the_lock_and_the_prompt_loop_is_held_and_ends_the_command_cleanly(command, rel_home):
    """SIGTERM's default action killed the command in that moment (on a loaded machine it is seconds
    long): no word, no exit code of ours, a session of its lock alone. It is held and taken up at once."""
    import sys

    env = subprocess_env(rel_home)
    if "SOURCE" in command:
        source = subprocess.run([*cli_command(), "run", "Hello."], env=env, capture_output=True, text=True,
                                timeout=180)
        source_id = session_id_of(source.stderr)
        command = [source_id if part == "SOURCE" else part for part in command]
    done = subprocess.run([sys.executable, "-c", SIGTERM_AFTER_THE_LOCK, *command], env=env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert INTERRUPTED in done.stderr and "Traceback" not in done.stderr, done.stderr
    session_id = session_id_of(done.stderr)
    listed = json.loads(subprocess.run([*cli_command(), "sessions", "list", "--json"], env=env, capture_output=True,
                                       text=True, timeout=120).stdout)
    assert any(row["id"] == session_id for row in listed)
    assert verify(session_id).exit_code == 0


def test_sigterm_in_the_first_model_call_says_only_what_happened(rel_home, tmp_path):
    """Cut in the first call (litellm still busy in its worker thread), Python warned on stderr
    that litellm's coroutine for the call was never awaited: the one line naming no operation.
    A race: without the filter, about one run in three here caught it (the signal must land while
    litellm's first call is still in its worker thread)."""
    proc, _ = interrupt(slow_helper_script(tmp_path), rel_home, signal.SIGTERM, first_attempt_open, settle_s=0.0)
    assert proc.returncode == 130 and INTERRUPTED in proc.stderr, proc.stderr
    assert "RuntimeWarning" not in proc.stderr and "never awaited" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_mid_run_cancels_open_spans_saves_and_resumes(signum, rel_home, tmp_path, monkeypatch):
    script = slow_helper_script(tmp_path)
    started = time.monotonic()
    proc, session_id = interrupt(script, rel_home, signum, helper_attempt_open)
    assert time.monotonic() - started < SLOW_MS / 1000  # it did not wait for the slow answer
    assert proc.returncode == 130, proc.stderr
    assert proc.stdout == ""
    assert INTERRUPTED in proc.stderr
    assert "Traceback" not in proc.stderr

    # The tree was written at exit: the open operations are cancelled, what finished is ok.
    tree = load_tree(rel_home, session_id)
    (run,) = tree["runs"]
    assert run["status"] == "cancelled" and run["ended_ns"] is not None
    by_path = {op["path"]: op for op in walk_ops(run)}
    assert by_path["1-1"]["kind"] == "llm" and by_path["1-1"]["status"] == "ok"
    assert by_path["1-2"]["kind"] == "tool" and by_path["1-2"]["status"] == "cancelled"
    assert by_path["1-2-2"]["kind"] == "session" and by_path["1-2-2"]["session"]["status"] == "cancelled"
    helper_attempt = by_path["1-2-2.1-1"]
    assert helper_attempt["kind"] == "llm" and helper_attempt["status"] == "cancelled"
    assert helper_attempt["ended_ns"] is not None and helper_attempt["accounting"] == []
    assert all(op["status"] != "in_progress" for op in walk_ops(run))  # everything was ended
    meta = json.loads((rel_home / "sessions" / session_id / "meta.json").read_text())
    assert meta["status"] == "cancelled" and meta["writer"] is None  # no process claims it any more

    # The ledger got the run's operations once each: the finished attempt ok, the cut ones failed.
    records = ledger(rel_home / "billing.jsonl", session_id)
    assert sorted(r["path"] for r in records) == ["1-1", "1-2", "1-2-2.1-1"]
    assert len({r["record_id"] for r in records}) == 3
    status = {r["path"]: (r["status"], r["error"]) for r in records}
    assert status["1-1"] == ("ok", None)
    assert status["1-2"][0] == "failed" and "cancelled" in status["1-2"][1]
    assert status["1-2-2.1-1"][0] == "failed" and "cancelled" in status["1-2-2.1-1"][1]
    checked = verify(session_id)
    assert checked.exit_code == 0, checked.output

    # Resume: the interrupted tool call gets a result (a model would refuse a dangling call), the run goes on.
    monkeypatch.chdir(tmp_path)
    resumed = invoke(["resume", session_id, "next"])
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stdout == "main is done\n"
    main_id = tree["agent_id"]
    tool_results = [r for r in event_records(rel_home, session_id)
                    if r["event_type"] == "transcript_entry" and r["agent_id"] == main_id and r["role"] == "tool"]
    assert [r["tool_call_id"] for r in tool_results] == ["call_main_1_1"]
    records = ledger(rel_home / "billing.jsonl", session_id)
    assert len(records) == len({r["record_id"] for r in records}) == 4
    assert [r["run"] for r in records].count(2) == 1
    checked = verify(session_id)
    assert checked.exit_code == 0, checked.output
    assert [r["status"] for r in load_tree(rel_home, session_id)["runs"]] == ["cancelled", "ok"]


def test_ctrl_c_during_a_retry_backoff_keeps_the_failed_attempt_once(rel_home, tmp_path):
    """The first attempt failed and finished; Ctrl-C lands while waiting to retry."""
    script = backoff_script(tmp_path)
    proc, session_id = interrupt(script, rel_home, signal.SIGINT, backoff_started)
    assert proc.returncode == 130, proc.stderr
    assert INTERRUPTED in proc.stderr and "Traceback" not in proc.stderr
    tree = load_tree(rel_home, session_id)
    (run,) = tree["runs"]
    (attempt,) = llm_ops(run)  # the retry never started
    assert attempt["status"] == "error" and attempt["attributes"]["error.type"] == "RateLimitError"
    assert run["status"] == "cancelled"
    (record,) = ledger(rel_home / "billing.jsonl", session_id)
    assert record["status"] == "failed" and record["attempt"] == 1 and record["span_id"] == attempt["span_id"]
    assert verify(session_id).exit_code == 0
    # Continue with the same scripted model minus the 30 s wait (resume --script takes the replacement).
    calm = ScriptBuilder("long-backoff", {"main": ["after the wait"]}).write(tmp_path / "calm.json")
    resumed = invoke(["resume", session_id, "again", "--script", str(calm)])
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stdout == "after the wait\n"  # the interrupted turn, now answered
    assert len(ledger(rel_home / "billing.jsonl", session_id)) == 2
    assert verify(session_id).exit_code == 0


def killed_in_its_first_answer(home: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A real run killed (-9) while its first model call waits; its session directory, once no process
    holds it, and a quick script to resume with (the killed call was never answered, so the same script
    would wait out its latency again)."""
    from otel_agents.persistence.ownership import owner_of

    script = ScriptBuilder("slow-first", {"main": [{"text": "m1", "latency_ms": SLOW_MS}, "m2"]}).write(
        tmp_path / "slow-first.json")
    quick = ScriptBuilder("slow-first", {"main": ["m1"]}).write(tmp_path / "quick.json")

    def chat_started() -> bool:
        sessions = list((home / "sessions").glob("*")) if (home / "sessions").exists() else []
        return bool(sessions) and any(str(line.get("name", "")).startswith("chat ")
                                      for line in journal_starts(sessions[0]))

    proc = subprocess.Popen([*cli_command(), "run", "--script", str(script), "go"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=subprocess_env(home), cwd=home.parent)
    try:
        wait_for(chat_started, proc)
    finally:
        proc.kill()
        proc.wait()
    (directory,) = (home / "sessions").iterdir()
    deadline = time.monotonic() + 30
    while owner_of(directory) is not None:  # the recorder process writes what it was given, then lets go
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return directory, quick


def test_a_run_killed_in_its_first_answer_names_its_one_agent(rel_home, tmp_path):
    """kill -9 leaves only the run span's start in the journal: the agent id must already be on it,
    or the tree knows the root by its name and lists a second agent that splits its spending."""
    from otel_agents.persistence.saved import load_saved
    from otel_agents.persistence.tree_agents import agents_of_spans

    directory, quick = killed_in_its_first_answer(rel_home, tmp_path)
    session_id = directory.name
    resumed = invoke(["resume", session_id, "--script", str(quick), "again"])
    assert resumed.exit_code == 0, resumed.output
    saved = load_saved(directory, pytest.fail)
    first, _ = saved.tree["runs"]
    assert first["status"] == "interrupted" and first["agent_id"] == "agent_001"
    assert agents_of_spans(saved.tree) == {}  # no agent known by name only
    assert json.loads((rel_home / "sessions" / session_id / "meta.json").read_text())["agents"] == 1
    assert verify(session_id).exit_code == 0


@pytest.mark.parametrize("refused", [
    ["resume", "{sid}"],  # no prompt
    ["send", "{sid}", "--to", "Nobody", "hello"],  # no such agent: known only once the agents are rebuilt
])
def test_a_refused_resume_of_a_crashed_session_changes_nothing(refused, rel_home, tmp_path):
    """Resume reads a crashed session the careful way; what that shows (the dead writer's open spans
    ended, a checkpoint that is behind) is written only once every check has passed."""
    directory, quick = killed_in_its_first_answer(rel_home, tmp_path)
    session_id = directory.name

    def files() -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}

    before = files()
    result = invoke([arg.format(sid=session_id) for arg in refused])
    assert result.exit_code == 2, result.output
    assert files() == before
    assert not (rel_home / "billing.jsonl").exists() or ledger(rel_home / "billing.jsonl", session_id) == []
    resumed = invoke(["resume", session_id, "--script", str(quick), "again"])  # the repair is made now
    assert resumed.exit_code == 0, resumed.output
    assert files()["spans.jsonl"].startswith(before["spans.jsonl"]) and files() != before
    assert verify(session_id).exit_code == 0



@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "kill-9"])
def test_a_resume_counts_the_attempt_a_signal_cut_off_against_max_llm_calls(signum, rel_home, model_server):
    """The ledger bills the attempt cut off by the signal; the resumed limit counted only completed ones,
    so `--max-llm-calls 2` allowed a third attempt after the resume."""
    from otel_agents.persistence.ownership import owner_of

    model_server.default_reply = Reply.slow(3.0, then=Reply(content="slow answer", prompt_tokens=10,
                                                           completion_tokens=2))
    model = ("--model", "openai/gpt-4o-mini", "--api-base", model_server.api_base)
    proc = subprocess.Popen([*cli_command(), "run", "--max-llm-calls", "2", *model, "p1", "p2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=subprocess_env(rel_home), cwd=rel_home.parent)

    def second_attempt_open() -> bool:
        sessions = list((rel_home / "sessions").glob("*")) if (rel_home / "sessions").exists() else []
        return bool(sessions) and sum(str(line.get("name", "")).startswith("chat ") and "end" not in line
                                      for line in journal_starts(sessions[0])) >= 2
    try:
        wait_for(second_attempt_open, proc)
        time.sleep(0.3)
        proc.send_signal(signum)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    (directory,) = (rel_home / "sessions").iterdir()
    deadline = time.monotonic() + 30
    while owner_of(directory) is not None:  # after kill -9 the recorder process lets go once it has written
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert len(model_server.requests) == 2

    resumed = invoke(["resume", *model, directory.name, "p3"])
    assert resumed.exit_code == 1, resumed.stderr
    assert "error: budget exhausted for session: 2 of 2 LLM calls made" in resumed.stderr
    assert len(model_server.requests) == 2  # no third attempt
    assert len([r for r in ledger(rel_home / "billing.jsonl", directory.name) if r["type"] == "llm"]) == 2


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "kill-9"])
def test_a_resume_counts_a_sub_agents_cut_off_attempt_against_its_own_max_llm_calls(signum, rel_home, tmp_path):
    """The Helper's attempt cut off by the signal is billed; its script budget (`agent_budgets`) counted only
    completed attempts at resume, so `max_llm_calls: 1` let it make a second one."""
    from otel_agents.persistence.ownership import owner_of

    script = tmp_path / "budgeted-helper.json"
    script.write_text(json.dumps({
        "name": "budgeted-helper",
        "agents": {
            "main": [
                {"tool_calls": [{"name": "task", "arguments": {"name": "Helper", "user_prompt": "Think about it"}}]},
                {"tool_calls": [{"name": "discuss", "arguments": {"speakers": ["Helper"], "prompt": "Again?"}}]},
                "main is done",
            ],
            "Helper": [{"text": "a slow thought", "latency_ms": 3000}, "another thought"],
        },
        "agent_budgets": {"Helper": {"max_llm_calls": 1}},
    }))
    proc = subprocess.Popen([*cli_command(), "run", "--script", str(script), "go"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=subprocess_env(rel_home), cwd=rel_home.parent)
    try:
        wait_for(helper_attempt_open(rel_home), proc)
        time.sleep(0.3)
        proc.send_signal(signum)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    (directory,) = (rel_home / "sessions").iterdir()
    session_id = directory.name
    deadline = time.monotonic() + 30
    while owner_of(directory) is not None:  # after kill -9 the recorder process lets go once it has written
        assert time.monotonic() < deadline
        time.sleep(0.05)

    resumed = invoke(["resume", session_id, "again"])
    assert resumed.exit_code == 0, resumed.output
    results = [r.get("content") for r in event_records(rel_home, session_id) if r.get("role") == "tool"]
    assert results[-1] == "Error: budget exhausted for Helper: 1 of 1 LLM calls made", results
    helper_calls = [r for r in ledger(rel_home / "billing.jsonl", session_id)
                    if r["type"] == "llm" and r["agent_name"] == "Helper"]
    assert len(helper_calls) == 1  # the cut-off one, billed: no second attempt
