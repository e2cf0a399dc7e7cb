"""One writer per session, with real concurrent ``otel-agents`` processes.

Two resumes at once, a resume or ``sessions rm`` against a live run, four imports of
one file at once, a SIGKILLed owner, and a resume of a damaged session: exactly one
process writes, the others exit 2 naming it, and nothing saved is damaged.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from reliability_helpers import (
    ScriptBuilder,
    cli_command,
    ledger,
    ledger_lines,
    session_dir,
    session_id_of,
    snapshot,
    subprocess_env,
)

from otel_agents.persistence.ownership import owner_of
from support.in_process import run_in_process

SLOW_MS = 4_000  # long enough that the second process always meets the first still writing


def script(tmp_path: Path, slow_turn: int) -> Path:
    """main answers each prompt once; the answer numbered ``slow_turn`` (1-based) takes SLOW_MS."""
    turns = [{"text": f"answer {n}", "latency_ms": SLOW_MS} if n == slow_turn else f"answer {n}" for n in range(1, 6)]
    return ScriptBuilder(f"slow-{slow_turn}", {"main": turns}).write(tmp_path / f"slow-{slow_turn}.json")


def start(args: list[str], home: Path) -> subprocess.Popen:
    return subprocess.Popen([*cli_command(), *args], env=subprocess_env(home), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def run_cli(args: list[str], home: Path) -> tuple[int, str, str]:
    """A command run alone, before or after the concurrent ones: in this process (litellm imported once)."""
    done = run_in_process(*args, home=home, env={"OTEL_TRACES_EXPORTER": "none"})
    return done.returncode, done.stdout, done.stderr


def wait_for_owner(directory: Path, proc: subprocess.Popen) -> dict:
    """What ``proc`` announces once it holds the lock (until it writes, the file names the last holder,
    which may be this test's process, still alive)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        owner = owner_of(directory) if directory.is_dir() else None
        if owner and owner.get("pid") == proc.pid:
            return owner
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    raise AssertionError(f"nobody took {directory}")


def chat_starts(directory: Path) -> int:
    """LLM attempts the journal has seen start (whole lines only: the last may be being written)."""
    lines = (directory / "spans.jsonl").read_bytes().splitlines(keepends=True)
    return sum(1 for line in lines if line.endswith(b"\n") and b'"start"' in line and b'"name":"chat ' in line)


def wait_for_new_chat(directory: Path, proc: subprocess.Popen, before: int) -> None:
    """Until ``proc``'s run has started an LLM attempt (it imports litellm before its first span)."""
    deadline = time.monotonic() + 60
    while chat_starts(directory) <= before:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never called its model"
        time.sleep(0.02)


def first_session(tmp_path: Path, home: Path, slow_turn: int) -> tuple[str, Path]:
    code, out, err = run_cli(["run", "--script", str(script(tmp_path, slow_turn)), "first"], home)
    assert code == 0, err
    session_id = session_id_of(err)
    return session_id, session_dir(home, session_id)


def test_two_resumes_at_once_one_runs_the_other_names_it(tmp_path, home):
    session_id, directory = first_session(tmp_path, home, slow_turn=2)
    procs = [start(["resume", session_id, f"from {n}"], home) for n in (1, 2)]
    results = [finish(p) for p in procs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2], results
    (winner,) = [(p, r) for p, r in zip(procs, results) if r[0] == 0]
    (loser,) = [r for r in results if r[0] == 2]
    assert f"session {session_id} is being written by pid {winner[0].pid}" in loser[2], loser[2]
    assert loser[1] == "" and "Traceback" not in loser[2]
    code, out, err = run_cli(["sessions", "verify", session_id], home)
    assert code == 0, out + err
    code, out, err = run_cli(["resume", session_id, "again"], home)
    assert code == 0 and out == "answer 3\n", err
    records = [json.loads(line) for line in (directory / "events.jsonl").read_text().splitlines()]
    assert len({r["message_id"] for r in records}) == len(records)  # no id written twice
    assert run_cli(["sessions", "verify", session_id], home)[0] == 0


def test_a_live_run_refuses_resume_and_rm_then_verifies(tmp_path, home):
    run = start(["run", "--script", str(script(tmp_path, slow_turn=1)), "first"], home)
    sessions = home / "sessions"
    deadline = time.monotonic() + 60
    while not (sessions.is_dir() and any(sessions.iterdir())):
        assert time.monotonic() < deadline and run.poll() is None, run.communicate()
        time.sleep(0.02)
    (directory,) = sessions.iterdir()
    wait_for_owner(directory, run)
    before = snapshot(home / "billing.jsonl")
    for command in (["resume", directory.name, "meanwhile"], ["sessions", "rm", directory.name]):
        code, out, err = run_cli(command, home)
        assert code == 2, (command, out, err)
        assert f"session {directory.name} is being written by pid {run.pid}" in err, err
        assert "Traceback" not in err
    assert directory.is_dir() and snapshot(home / "billing.jsonl") == before
    code, out, err = finish(run)
    assert code == 0 and out == "answer 1\n", err
    assert run_cli(["sessions", "verify", directory.name], home)[0] == 0
    code, _, err = run_cli(["sessions", "rm", directory.name], home)
    assert code == 0 and not directory.exists(), err


def test_four_imports_of_one_file_at_once_make_one_session(tmp_path, home):
    source_home = tmp_path / "source"
    otlp = tmp_path / "spans.jsonl"
    code, _, err = run_cli(["run", "--otlp-file", str(otlp), "Create Jack and Jill for a cafe discussion"],
                           source_home)
    assert code == 0, err
    session_id = session_id_of(err)
    procs = [start(["import", str(otlp)], home) for _ in range(4)]
    results = [finish(p) for p in procs]
    assert [code for code, _, _ in results] == [0, 0, 0, 0], results
    outcomes = sorted(out.split(": ", 1)[1].split(";")[0].split(":")[0] for _, out, _ in results)
    assert outcomes == ["created", "unchanged", "unchanged", "unchanged"], results
    records = ledger(home / "billing.jsonl")
    assert len(records) == len({r["record_id"] for r in records}) == len(ledger(source_home / "billing.jsonl"))
    assert run_cli(["sessions", "verify", session_id], home)[0] == 0
    before = snapshot(home)
    code, out, _ = run_cli(["import", str(otlp)], home)
    assert code == 0 and out.strip() == f"session {session_id}: unchanged; 0 ledger record(s) added"
    assert snapshot(home) == before


def test_a_killed_owner_s_lock_is_taken_over(tmp_path, home):
    session_id, directory = first_session(tmp_path, home, slow_turn=2)
    attempts = chat_starts(directory)
    resume = start(["resume", session_id, "slow one"], home)
    owner = wait_for_owner(directory, resume)
    wait_for_new_chat(directory, resume, attempts)
    time.sleep(0.2)  # inside the slow model call
    for pid in {owner["pid"], owner.get("recorder", owner["pid"])}:
        os.kill(pid, signal.SIGKILL)
    resume.communicate(timeout=60)
    assert resume.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 30
    while owner_of(directory) is not None:  # the kernel drops the lock with its last holder
        assert time.monotonic() < deadline
        time.sleep(0.02)
    code, out, err = run_cli(["sessions", "list", "--json"], home)
    assert [s["status"] for s in json.loads(out)] == ["interrupted"]
    code, out, err = run_cli(["resume", session_id, "after the kill"], home)
    assert code == 0, err
    assert out == "answer 2\n"  # the killed run's answer never came: the script's second is next
    meta = json.loads((directory / "meta.json").read_text())
    assert meta["status"] == "ok" and meta["runs"] == 3  # carried on to a good end; the killed run stays interrupted
    assert [r["status"] for r in json.loads(run_cli(["sessions", "show", session_id, "--json"], home)[1])["session"]["runs"]] == [
        "ok", "interrupted", "ok"]
    assert run_cli(["sessions", "verify", session_id], home)[0] == 0


def test_resume_checks_everything_before_it_spends(tmp_path, home):
    session_id, directory = first_session(tmp_path, home, slow_turn=5)
    events = directory / "events.jsonl"
    lines = events.read_bytes().splitlines(keepends=True)
    lines[1] = b'{"damaged": \n'  # mid-file, not a torn last line
    events.write_bytes(b"".join(lines))
    before = snapshot(home)
    code, out, err = run_cli(["resume", session_id, "go on"], home)
    assert code == 2 and out == "", err
    assert f"{events}:2" in err and "nothing was run" in err and "Traceback" not in err
    assert snapshot(home) == before  # no model called, nothing billed, nothing written
    assert len(ledger_lines(home / "billing.jsonl")) == len(ledger(home / "billing.jsonl"))
