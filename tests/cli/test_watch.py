"""`run --watch` and script `triggers`: a file appearing or changing while a real session runs is an outside event."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson

from otel_agents.cli.watch import FileWatch, Trigger

PROMPT = "Create Jack and Jill for a cafe discussion"


def env(home: Path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_EXPORTER_OTLP")}
    out.pop("OTEL_AGENTS_PRICES", None)
    out.update(OTEL_TRACES_EXPORTER="none", OTEL_AGENTS_HOME=str(home), LITELLM_LOCAL_MODEL_COST_MAP="True",
               PYTHONUNBUFFERED="1")
    return out


def start(home: Path, cwd: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "otel_agents", *args], env=env(home), cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_line(proc: subprocess.Popen, prefix: str) -> list[str]:
    """stderr lines up to the first starting with ``prefix`` (the process must still run)."""
    seen = []
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        assert line, (proc.poll(), seen)
        seen.append(line)
        if line.startswith(prefix):
            return seen
    raise AssertionError(seen)


def put(path: Path, text: str) -> None:
    """``path`` appears whole at once (renamed into place): written in place, a poll between its creation and its
    write sees it appear empty and then change, two events (a loaded CI machine hit that window)."""
    part = path.with_name(path.name + ".part")
    part.write_text(text)
    os.replace(part, path)


def records(home: Path) -> tuple[str, list[dict]]:
    (directory,) = (home / "sessions").iterdir()
    return directory.name, [orjson.loads(line) for line in (directory / "events.jsonl").read_bytes().splitlines()]


def test_a_watched_file_appearing_is_an_external_event_the_agent_answers(home, tmp_path):
    data = tmp_path / "data.json"
    proc = start(home, tmp_path, "run", "--watch", "data.json", "--watch-to", "Jack", "--watch-for", "5", PROMPT)
    wait_for_line(proc, "watching ")
    before = time.monotonic()
    put(data, '{"x": 1}')
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    sid, saved = records(home)
    jack = next(r["agent_id"] for r in saved if r["event_type"] == "agent_created" and r["name"] == "Jack")
    (event,) = [r for r in saved if str(r.get("source", "")).startswith("external")]
    assert event["agent_id"] == jack and event["role"] == "user"
    assert event["content"] == f"File appeared: {data}"
    assert event["source"] == f"external:watch:{data}"
    answer = saved[saved.index(event) + 1]
    assert answer["agent_id"] == jack and answer["role"] == "assistant"
    assert out.splitlines()[-1] == answer["content"]
    meta = orjson.loads((home / "sessions" / sid / "meta.json").read_bytes())
    assert meta["runs"] == 2 and meta["last_run"]["ingress"]["sender"] == f"watch:{data}"
    assert time.monotonic() - before < 60


def test_a_script_trigger_changing_file_reaches_its_agent_and_sigterm_while_idle_stops_cleanly(home, tmp_path):
    watched = tmp_path / "inbox.txt"
    watched.write_text("old")  # there from the start: only its change is an event
    script = tmp_path / "watcher.json"
    script.write_text(json.dumps({
        "name": "watcher",
        "root": {"name": "main"},
        "agents": {"main": ["ready", "I'll reload the data."]},
        "triggers": [{"watch": str(watched), "text": "Inbox changed: {path}"}],
    }))
    proc = start(home, tmp_path, "run", "--script", str(script), "start")
    wait_for_line(proc, "watching ")
    time.sleep(0.3)  # a later mtime than the first look, on any file system clock
    watched.write_text("new contents")
    sid = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the event is answered while the session still runs
        directory = next((home / "sessions").iterdir(), None)
        events = directory / "events.jsonl" if directory else None
        if events and events.exists() and b"reload the data" in events.read_bytes():
            sid = directory.name
            break
        time.sleep(0.1)
    assert sid is not None
    assert proc.poll() is None  # still watching: no --watch-for
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "stopped watching" in err and "Traceback" not in err
    _, saved = records(home)
    (event,) = [r for r in saved if str(r.get("source", "")).startswith("external")]
    assert event["content"] == f"Inbox changed: {watched}" and event["source"] == f"external:watch:{watched}"
    assert out.splitlines() == ["ready", "I'll reload the data."]


def test_file_watch_reports_appearing_and_changing_once_and_ignores_removal(tmp_path):
    path = tmp_path / "f.txt"
    watch = FileWatch([Trigger(path, "Jack")])
    assert watch.due() == []
    path.write_text("a")
    assert [words for _, words in watch.due()] == [f"File appeared: {path}"]
    assert watch.due() == []  # reported once
    path.write_text("bb")  # another size: a change whatever the clock's granularity
    assert [words for _, words in watch.due()] == [f"File changed: {path}"]
    path.unlink()
    assert watch.due() == []


def test_watch_options_need_a_watch_and_do_not_apply_to_resume(home, tmp_path):
    for args, expected in [
        (["run", "--watch-for", "3", PROMPT], "--watch-to and --watch-for need"),
        (["run", "--resume", "20990101-000000-abcdef", "--watch", "x", PROMPT], "--watch applies to new sessions"),
    ]:
        proc = start(home, tmp_path, *args)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 2, (args, err)
        assert expected in err and "Traceback" not in err, err
    assert not (home / "sessions").exists() or not any((home / "sessions").iterdir())


def test_a_script_with_a_bad_trigger_is_refused_in_one_line(home, tmp_path):
    script = tmp_path / "bad.json"
    script.write_text(json.dumps({"name": "bad", "agents": {}, "triggers": [{"watch": 3}]}))
    proc = start(home, tmp_path, "run", "--script", str(script), "go")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "triggers[0]: 'watch' must be a non-empty path" in err, err
    assert "Traceback" not in err


def test_a_watched_file_whose_directory_does_not_exist_is_bad_usage_before_anything_runs(home, tmp_path):
    """A typo'd directory was polled in silence until Ctrl-C: the file could never appear there."""
    script = tmp_path / "triggers.json"
    script.write_text(json.dumps({"name": "t", "agents": {}, "triggers": [{"watch": "no-such-dir/inbox.txt"}]}))
    (tmp_path / "plain").write_text("a file, not a directory")
    for args, expected in [
        (["run", "--watch", "missing/data.json", PROMPT],
         f"Error: cannot watch {tmp_path}/missing/data.json: directory {tmp_path}/missing does not exist"),
        (["run", "--watch", "plain/data.json", PROMPT],
         f"Error: cannot watch {tmp_path}/plain/data.json: {tmp_path}/plain is not a directory"),
        (["run", "--script", str(script), "go"],
         f"Error: cannot watch {tmp_path}/no-such-dir/inbox.txt: directory {tmp_path}/no-such-dir does not exist"),
    ]:
        proc = start(home, tmp_path, *args)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 2, (args, err)
        assert err.splitlines()[-1] == expected and out == "" and "Traceback" not in err
    assert not (home / "sessions").exists() or not any((home / "sessions").iterdir())


def test_a_script_trigger_watching_a_directory_is_refused_as_run_watch_refuses_one(home, tmp_path):
    """It was accepted and fired on changes inside the directory, though --watch DIR is refused."""
    script = tmp_path / "dir.json"
    script.write_text(json.dumps({"name": "d", "agents": {}, "triggers": [{"watch": "inbox.txt"}, {"watch": "d"}]}))
    (tmp_path / "d").mkdir()
    proc = start(home, tmp_path, "run", "--script", str(script), "go")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and out == "", err
    assert err.splitlines()[-1] == (f"Error: {script}: triggers[1]: 'watch' 'd' is a directory: "
                                    "a trigger watches a file, as run --watch does")
    assert not (home / "sessions").exists() or not any((home / "sessions").iterdir())


def test_watching_for_an_agent_the_session_does_not_have_says_so_when_watching_starts(home, tmp_path):
    """--watch-to Nobody watched in silence: the warning came only if the file changed."""
    proc = start(home, tmp_path, "run", "--watch", "data.json", "--watch-to", "Nobody", "--watch-for", "0.5", PROMPT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err  # not refused: a later run may create the agent
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert warnings == [f"warning: the session has no agent 'Nobody' (yet): changes to {tmp_path / 'data.json'} "
                        "are told to it only once it exists"]


def test_a_watched_event_s_answer_shows_control_characters_as_escapes(home, tmp_path):
    # As a prompt's answer is: a model's ESC, BEL, lone CR or RIGHT-TO-LEFT OVERRIDE never reaches the terminal.
    script = tmp_path / "ctl.json"
    script.write_text(json.dumps({"name": "ctl", "agents": {"main": ["first", "ding\a over\rwrite \u202eabc \x1b[2J"]}}))
    proc = start(home, tmp_path, "run", "--script", str(script), "--watch", "data.json", "--watch-for", "5", "go")
    wait_for_line(proc, "watching ")
    put(tmp_path / "data.json", "{}")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert out.split("\n") == ["first", "ding\\x07 over\\rwrite \\u202eabc \\x1b[2J", ""]


def test_the_watched_paths_on_stderr_show_control_characters_as_escapes(home, tmp_path):
    """The `watching` line wrote a path's ESC raw to the terminal (click strips it only when stderr is no tty)."""
    name = "red\x1b[31mX.txt"
    proc = start(home, tmp_path, "run", "--watch", name, "--watch-to", "Nobody", "--watch-for", "0.5", PROMPT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    escaped = str(tmp_path / "red\\x1b[31mX.txt")
    (watching,) = [line for line in err.splitlines() if line.startswith("watching ")]
    assert watching.startswith(f"watching {escaped} for 0.5s")
    (warning,) = [line for line in err.splitlines() if line.startswith("warning:")]
    assert f"changes to {escaped} are told" in warning
