"""A real `otel-agents collect` process on loopback, scripted runtime processes, and central-vs-local checks."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from otel_agents.persistence.store import SessionStore

PROMPT = "Create Jack and Jill for a cafe discussion"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def base_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["OTEL_AGENTS_HOME"] = str(home)
    return env


class Collector:
    """``python -m otel_agents collect`` with its stderr lines gathered; started on enter."""

    def __init__(self, home: Path, *args: str, grpc: bool = False):
        self.home = home
        self.http_port = free_port()
        self.grpc_port = free_port() if grpc else None
        self.args = ["--http", f"127.0.0.1:{self.http_port}", "--settle", "0.3", *args]
        if grpc:
            self.args += ["--grpc", f"127.0.0.1:{self.grpc_port}"]
        self.lines: list[str] = []
        self.proc: subprocess.Popen | None = None

    @property
    def http_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def start(self) -> "Collector":
        self.lines = []
        self.proc = subprocess.Popen([sys.executable, "-m", "otel_agents", "collect", *self.args],
                                     env=base_env(self.home), stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()
        deadline = time.monotonic() + 60
        while not any("listening" in line for line in self.lines):
            assert self.proc.poll() is None, "".join(self.lines)
            assert time.monotonic() < deadline, "collect did not start"
            time.sleep(0.05)
        return self

    def _read(self, proc: subprocess.Popen) -> None:
        for line in proc.stderr:
            self.lines.append(line)

    def stop(self, signum: int = signal.SIGTERM) -> int:
        self.proc.send_signal(signum)
        return self.proc.wait(60)

    def __enter__(self) -> "Collector":
        return self.start()

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def run_session(home: Path, endpoint: str | None, protocol: str = "http/protobuf", *extra: str,
                env: dict[str, str] | None = None) -> subprocess.Popen:
    """A scripted `otel-agents run` exporting to ``endpoint`` (None: nothing over the network)."""
    environment = base_env(home)
    if endpoint is None:
        environment["OTEL_TRACES_EXPORTER"] = "none"
    else:
        environment.update(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_EXPORTER_OTLP_PROTOCOL=protocol)
    environment.update(env or {})
    return subprocess.Popen([sys.executable, "-m", "otel_agents", "run", *extra, PROMPT], env=environment,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def session_id_of(proc: subprocess.Popen) -> str:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return session_id_in(err)


def session_id_in(stderr: str) -> str:
    """The id a run names on its stderr (``session: ID``)."""
    return next(line.split(": ", 1)[1] for line in stderr.splitlines() if line.startswith("session: "))


def ledger(home: Path, session_id: str) -> set[str]:
    path = home / "billing.jsonl"
    if not path.exists():
        return set()
    records = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return {json.dumps(r, sort_keys=True) for r in records if r.get("session_id") == session_id}


def assert_same_session(local_home: Path, central_home: Path, session_id: str) -> None:
    local = SessionStore(local_home / "sessions" / session_id)
    central = SessionStore(central_home / "sessions" / session_id)
    assert central.events_path.read_bytes().splitlines() == local.events_path.read_bytes().splitlines()
    assert central.load_tree() == local.load_tree()
    assert ledger(central_home, session_id) == ledger(local_home, session_id) != set()
    for home in (local_home, central_home):
        verify = subprocess.run([sys.executable, "-m", "otel_agents", "sessions", "verify", session_id],
                                env=base_env(home), capture_output=True, text=True, timeout=120)
        assert verify.returncode == 0, verify.stdout + verify.stderr
