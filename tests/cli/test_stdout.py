"""A stdout that cannot be written (closed, a full disk, a reader gone): one line, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from otel_agents.cli import cli

needs_dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")


def _env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_EXPORTER_OTLP")}
    env.update(OTEL_AGENTS_HOME=str(home), LITELLM_LOCAL_MODEL_COST_MAP="True", OTEL_TRACES_EXPORTER="none")
    return env


def _cli(home: Path, *args: str, stdout: str = "closed", cwd: Path) -> subprocess.CompletedProcess:
    """The command as a process, its stdout closed (`>&-`) or the named file (`> /dev/full`)."""
    redirect = ">&-" if stdout == "closed" else f"> {stdout}"
    command = ["sh", "-c", f'exec "$0" "$@" {redirect}', sys.executable, "-m", "otel_agents", *args]
    return subprocess.run(command, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env(home),
                          cwd=cwd, timeout=180)


def _error_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith("Error:")]


def test_a_run_with_stdout_closed_is_saved_and_says_its_answer_was_lost(home, tmp_path):
    """`run "hi" >&-` crashed in fork_recorder (sys.stdout is None) and left a session of owner.lock alone."""
    done = _cli(home, "run", "p1", "p2", cwd=tmp_path)
    assert done.returncode == 1
    (error,) = _error_lines(done.stderr)
    (directory,) = (home / "sessions").iterdir()
    assert "stdout is closed" in error and f"session {directory.name} was saved" in error
    assert "prompt 2 of 2 was not run" in error
    assert done.stderr.splitlines()[-1] == f"session: {directory.name}"
    assert CliRunner().invoke(cli, ["sessions", "verify", directory.name]).exit_code == 0


def test_the_recorder_process_starts_with_no_stdout(tmp_path, monkeypatch):
    """The Python API in a process with fd 1 closed (sys.stdout None) must record all the same."""
    from otel_agents.persistence.recorder import SessionRecorder
    from otel_agents.persistence.recorder_process import fork_recorder
    from otel_agents.persistence.store import SessionStore

    if not sys.platform.startswith("linux"):
        pytest.skip("the recorder process is Linux-only")
    store = SessionStore.create(tmp_path / "sessions", "s1")
    recorder = SessionRecorder(store, "s1", billing_file=tmp_path / "billing.jsonl", warn=lambda text: None)
    monkeypatch.setattr(sys, "stdout", None)
    link = fork_recorder(recorder)
    monkeypatch.undo()
    link.close()


@pytest.mark.parametrize("args", [["sessions", "list"], ["sessions", "list", "--json"], ["billing", "summary"],
                                  ["billing", "export", "--format", "csv"], ["billing", "export", "--format", "jsonl"],
                                  ["--help"]])
def test_a_closed_stdout_is_one_error_line(home, tmp_path, args):
    assert CliRunner().invoke(cli, ["run", "hi"]).exit_code == 0  # something to print
    done = _cli(home, *args, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert _error_lines(done.stderr) == ["Error: stdout could not be written: stdout is closed"]


@needs_dev_full
@pytest.mark.parametrize("args", [["--help"], ["sessions", "list", "--json"], ["billing", "summary", "--json"]])
def test_a_full_disk_under_stdout_is_one_error_line(home, tmp_path, args):
    assert CliRunner().invoke(cli, ["run", "hi"]).exit_code == 0  # something to print
    done = _cli(home, *args, stdout="/dev/full", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert _error_lines(done.stderr) == ["Error: stdout could not be written: No space left on device"]


@needs_dev_full
def test_a_run_whose_answer_cannot_be_written_names_its_saved_session(home, tmp_path):
    done = _cli(home, "run", "hi", stdout="/dev/full", cwd=tmp_path)
    assert done.returncode == 1
    (error,) = _error_lines(done.stderr)
    (directory,) = (home / "sessions").iterdir()
    assert error == (f"Error: stdout could not be written (No space left on device): the answer was lost; "
                     f"session {directory.name} was saved")
    assert json.loads((directory / "meta.json").read_text())["status"] == "ok"


def _large_ledger(home: Path, records: int = 4000) -> None:
    """A ledger far larger than a pipe holds: a reader that leaves early always leaves writes behind."""
    assert CliRunner().invoke(cli, ["run", "hi"]).exit_code == 0
    ledger = home / "billing.jsonl"
    first = json.loads(ledger.read_text().splitlines()[0])
    with ledger.open("a") as out:
        for n in range(records):
            out.write(json.dumps({**first, "record_id": f"{first['record_id']}-{n}"}) + "\n")


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_reader_that_goes_away_ends_an_export_quietly_and_the_same_way_every_time(home, tmp_path, fmt):
    """`billing export --format csv | head -1` exited 0 or 1 depending on when head left."""
    _large_ledger(home)
    proc = subprocess.Popen([sys.executable, "-m", "otel_agents", "billing", "export", "--format", fmt],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(home), cwd=tmp_path)
    assert proc.stdout.readline()
    proc.stdout.close()  # as `head -1` does
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and stderr == ""


def test_a_reader_that_goes_away_is_told_of_the_prompts_not_run(home, tmp_path):
    """`run p1 p2 p3 | head -1`: p2 and p3 were never run and the exit was 1 with no word why."""
    proc = subprocess.Popen([sys.executable, "-m", "otel_agents", "run", "p1", "p2", "p3"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(home), cwd=tmp_path)
    proc.stdout.close()  # before the first answer: every write to it fails
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=180) == 1
    assert "Traceback" not in stderr
    (directory,) = (home / "sessions").iterdir()
    assert (f"output stopped: the reader of stdout went away; prompts 2-3 of 3 were not run; "
            f"session {directory.name} was saved") in stderr.splitlines()


def _cli_closing(home: Path, *args: str, closed: str, cwd: Path) -> subprocess.CompletedProcess:
    """The command as a process with stdin (`<&-`) or stderr (`2>&-`) closed."""
    command = ["sh", "-c", f'exec "$0" "$@" {closed}', sys.executable, "-m", "otel_agents", *args]
    return subprocess.run(command, capture_output=True, text=True, env=_env(home), cwd=cwd, timeout=180)


def test_a_closed_stdin_reads_as_no_prompts(home, tmp_path):
    """`run <&-` crashed reading prompts from stdin (sys.stdin is None): it runs the default, as </dev/null."""
    done = _cli_closing(home, "run", closed="<&-", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and done.stdout.strip()
    (directory,) = (home / "sessions").iterdir()
    assert CliRunner().invoke(cli, ["sessions", "verify", directory.name]).exit_code == 0


def test_a_closed_stderr_keeps_diagnostics_off_stdout(home, tmp_path):
    """With stderr closed click wrote its Error: line to stdout, among the results a script reads."""
    done = _cli_closing(home, "sessions", "show", "20990101-000000-abcdef", closed="2>&-", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
