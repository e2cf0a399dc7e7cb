"""`otel-agents send`: an outside event for a saved session's agent, through the CLI.

The agent answers in a new run linked like a resume; the record's source names the
sender; a session another live process owns is refused (exit 2, naming it) with
nothing written; bad input is one line and exit 2.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import orjson

from support.in_process import run_in_process

PROMPT = "Create Jack and Jill for a cafe discussion"


def env(home: Path) -> dict[str, str]:
    """A real ``otel-agents`` process: isolated home, nothing exported, the bundled price map."""
    out = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_EXPORTER_OTLP")}
    out.pop("OTEL_AGENTS_PRICES", None)
    out.update(OTEL_TRACES_EXPORTER="none", OTEL_AGENTS_HOME=str(home), LITELLM_LOCAL_MODEL_COST_MAP="True")
    return out


def cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    """The command in this process (the session's other owner, where one is needed, is a real process)."""
    return run_in_process(*args, home=home, env={"OTEL_TRACES_EXPORTER": "none"})


def session_id_of(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("session: ")]
    assert lines, stderr
    return lines[-1].split(": ", 1)[1]


def records(home: Path, sid: str) -> list[dict]:
    return [orjson.loads(line) for line in (home / "sessions" / sid / "events.jsonl").read_bytes().splitlines()]


def snapshot(*roots: Path) -> dict[str, str]:
    """Every file under ``roots`` (path -> sha256): proof that a refused command wrote nothing."""
    out = {}
    for root in roots:
        paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in paths:
            out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def demo_session(home: Path) -> str:
    done = cli(home, "run", PROMPT)
    assert done.returncode == 0, done.stderr
    return session_id_of(done.stderr)


def test_send_tells_the_agent_which_answers_in_a_linked_run_with_the_sender_recorded(home):
    sid = demo_session(home)
    before = records(home, sid)
    jack = next(r for r in before if r["event_type"] == "agent_created" and r["name"] == "Jack")

    done = cli(home, "send", sid, "--to", "Jack", "--source", "cron", "File changed: data.json")

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    after = records(home, sid)
    assert after[: len(before)] == before  # what was saved is untouched
    event, answer = after[len(before):]
    assert event["agent_id"] == jack["agent_id"] and event["role"] == "user"
    assert event["content"] == "File changed: data.json" and event["source"] == "external:cron"
    assert answer["agent_id"] == jack["agent_id"] and answer["role"] == "assistant"
    assert done.stdout.strip() == answer["content"]  # stdout carries the agent's answer
    assert event["trace_id"] != before[-1]["trace_id"]  # a new run: its own trace

    meta = orjson.loads((home / "sessions" / sid / "meta.json").read_bytes())
    assert meta["runs"] == 2
    assert meta["last_run"]["ingress"]["sender"] == "cron"
    shown = cli(home, "sessions", "show", sid)
    assert "run 2" in shown.stdout and "from external (sender cron)" in shown.stdout, shown.stdout
    verified = cli(home, "sessions", "verify", sid)
    assert verified.returncode == 0, verified.stdout + verified.stderr

    # Linked like a resume: the new run's root names the previous run's root, and its source is external.
    tree = orjson.loads(gzip.decompress((home / "sessions" / sid / "tree.json.gz").read_bytes()))["session"]
    first, second = tree["runs"]
    assert second["attributes"]["otel_agents.resumed_from"] == f"{first['trace_id']}:{first['span_id']}"
    assert second["attributes"]["otel_agents.run.source"] == "external"
    assert second["trace_id"] == event["trace_id"] != first["trace_id"]


def test_send_without_a_source_is_plain_external_and_an_agent_id_works(home):
    sid = demo_session(home)
    done = cli(home, "send", sid, "--to", "agent_003", "ping")
    assert done.returncode == 0, done.stderr
    event = [r for r in records(home, sid) if r.get("source", "").startswith("external")]
    assert [(r["agent_id"], r["source"]) for r in event] == [("agent_003", "external")]


def test_send_reaches_an_agent_by_its_path_of_names_as_the_views_take_it(home):
    sid = demo_session(home)
    created = [r for r in records(home, sid) if r["event_type"] == "agent_created"]
    root = next(r for r in created if not r.get("parent"))
    jill = next(r for r in created if r["name"] == "Jill")
    done = cli(home, "send", sid, "--to", f"{root['name']}/Jill", "ping")
    assert done.returncode == 0, done.stderr
    event = [r for r in records(home, sid) if r.get("source", "").startswith("external")]
    assert [r["agent_id"] for r in event] == [jill["agent_id"]]
    wrong = cli(home, "send", sid, "--to", "Jill/" + root["name"], "ping")  # not a path from the root
    assert wrong.returncode == 2 and "has no agent" in wrong.stderr


def test_send_to_a_session_whose_owner_is_alive_is_refused_and_writes_nothing(home, tmp_path):
    sid = demo_session(home)
    directory = home / "sessions" / sid
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\n"
         "from otel_agents.persistence.ownership import take\n"
         "held = take(sys.argv[1])\n"
         "print('held', flush=True)\n"
         "time.sleep(120)\n",
         str(directory)],
        env=env(home), stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        before = snapshot(directory, home / "billing.jsonl")
        started = time.monotonic()
        done = cli(home, "send", sid, "--to", "Jack", "--source", "cron", "hello")
        assert done.returncode == 2, (done.returncode, done.stderr)
        assert f"session {sid} is being written by pid {holder.pid}" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and done.stdout == ""
        assert snapshot(directory, home / "billing.jsonl") == before
        assert time.monotonic() - started < 60
    finally:
        holder.kill()
        holder.wait()


def test_send_bad_input_is_one_line_exit_2_and_nothing_written(home):
    sid = demo_session(home)
    directory = home / "sessions" / sid
    before = snapshot(directory, home / "billing.jsonl")
    cases = [
        (["send", sid, "--to", "Nobody", "hi"], "has no agent 'Nobody'"),
        (["send", sid, "--to", "Jack", "--source", "two\nlines", "hi"], "--source"),
        (["send", sid, "--to", "Jack", "   "], "TEXT is empty"),
        (["send", "20990101-000000-abcdef", "--to", "Jack", "hi"], "20990101-000000-abcdef"),
        (["send", sid, "hi"], "--to"),
    ]
    for args, expected in cases:
        done = cli(home, *args)
        assert done.returncode == 2, (args, done.returncode, done.stderr)
        assert expected in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr, done.stderr
    assert snapshot(directory, home / "billing.jsonl") == before


def test_send_dash_reads_the_event_from_stdin_whole_however_long(home):
    """``-`` was delivered as the event itself, and an event past ~128 KiB failed: "Argument list too long"."""
    sid = demo_session(home)
    event = "File changed: data.json\n" + "x" * 200_000 + "\nend"
    done = run_in_process("send", sid, "--to", "Jack", "--source", "ci", "-", home=home,
                          env={"OTEL_TRACES_EXPORTER": "none"}, stdin=event + "\n")
    assert done.returncode == 0, done.stderr
    (sent,) = [r for r in records(home, sid) if r.get("source") == "external:ci"]
    assert sent["content"] == event  # its lines kept, the final line break of the input dropped
    directory = home / "sessions" / sid
    before = snapshot(directory, home / "billing.jsonl")
    for stdin, expected in [("  \n", "TEXT is empty"), (b"caf\xe9\n", "TEXT is not valid UTF-8 text (byte 0xe9")]:
        done = run_in_process("send", sid, "--to", "Jack", "-", home=home, env={"OTEL_TRACES_EXPORTER": "none"},
                              stdin=stdin)
        assert done.returncode == 2 and expected in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert snapshot(directory, home / "billing.jsonl") == before
