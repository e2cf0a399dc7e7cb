"""``otel-agents ui`` as a real process: serves on loopback, prints its URL, exits 0 on SIGTERM; a non-loopback
host without --token gets a generated one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from support.ui_sessions import clean_env, free_port


def start(home: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "otel_agents", "ui", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=clean_env(home))


def first_line(process: subprocess.Popen) -> str:
    line = process.stdout.readline()  # the URL is printed once the socket listens
    assert line, process.stderr.read()
    return line.strip()


def get(url: str, headers: dict[str, str] | None = None):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def stop(process: subprocess.Popen) -> tuple[int, str]:
    process.send_signal(signal.SIGTERM)
    try:
        code = process.wait(20)
    finally:
        if process.poll() is None:
            process.kill()
    return code, process.stderr.read()


@pytest.fixture
def home(tmp_path) -> Path:
    sessions = tmp_path / "home" / "sessions" / "seed-example-1"
    sessions.mkdir(parents=True)
    (sessions / "events.jsonl").write_text(json.dumps({"message_id": "msg_001", "event_type": "agent_created",
                                                        "agent_id": "agent_root", "language_model": "m"}) + "\n")
    return tmp_path / "home"


def test_serves_the_api_on_loopback_and_exits_0_on_sigterm(home):
    port = free_port()
    process = start(home, "--port", str(port))
    try:
        url = first_line(process)
        assert url == f"http://127.0.0.1:{port}/"
        status, body = get(url + "api/sessions")
        assert status == 200
        assert [s["id"] for s in json.loads(body)["sessions"]] == ["seed-example-1"]
    finally:
        code, stderr = stop(process)
    assert code == 0, stderr
    assert "Traceback" not in stderr


def test_port_0_picks_a_free_port_and_sigint_also_ends_it(home):
    process = start(home, "--port", "0")
    url = first_line(process)
    assert url.startswith("http://127.0.0.1:") and not url.endswith(":0/")
    assert get(url + "api/sessions")[0] == 200
    process.send_signal(signal.SIGINT)
    assert process.wait(20) == 0


def test_a_non_loopback_host_without_a_token_prints_a_generated_one_and_requires_it(home):
    process = start(home, "--host", "0.0.0.0", "--port", "0")
    try:
        url = first_line(process)
        assert "?token=" in url
        token = url.split("?token=")[1]
        assert len(token) >= 24
        port = url.split(":")[2].split("/")[0]
        local = f"http://127.0.0.1:{port}/api/sessions"
        assert get(local)[0] == 401
        assert get(local, {"Authorization": f"Bearer {token}"})[0] == 200
    finally:
        code, stderr = stop(process)
    assert code == 0
    assert token in stderr and "not loopback" in stderr


def test_a_given_token_is_used_and_not_printed_on_stderr(home):
    process = start(home, "--host", "0.0.0.0", "--port", "0", "--token", "given-token-123")
    try:
        url = first_line(process)
        assert url.endswith("?token=given-token-123")
    finally:
        code, stderr = stop(process)
    assert code == 0 and "given-token-123" not in stderr


@pytest.mark.parametrize("args, message", [
    (["--port", "70000"], "70000"),
    (["--token", " "], "empty token"),
    (["--token", os.fsdecode(b"tok\xff")], "UTF-8"),  # bytes the locale cannot decode: no URL or cookie holds them
    (["--host", "no.such.host.invalid", "--token", "t"], "cannot listen"),
    (["--token", "a b\nc"], "one word of printable characters"),  # no header or cookie could carry it
    (["--token", "tab\tbed"], "one word of printable characters"),
])
def test_bad_options_are_one_line_and_exit_2(home, args, message):
    done = subprocess.run([sys.executable, "-m", "otel_agents", "ui", *args], capture_output=True, text=True,
                          env=clean_env(home), timeout=60)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_a_busy_port_is_one_line_and_exit_2(home):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "otel_agents", "ui", "--port", str(port)], capture_output=True,
                              text=True, env=clean_env(home), timeout=60)
    assert done.returncode == 2 and "cannot listen" in done.stderr and "Traceback" not in done.stderr
