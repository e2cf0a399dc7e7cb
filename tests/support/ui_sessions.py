"""Sessions for the UI's tests: a real ``otel-agents run`` of the demo, the four seed-001 examples, a live server."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from support.seed_examples import SEED_EXAMPLES

DEMO_PROMPT = "Create Jack and Jill for a cafe discussion"


def clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update({"OTEL_AGENTS_HOME": str(home), "OTEL_AGENTS_CAPTURE_INPUT_MESSAGES": "true",
                "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    return env


@dataclass(frozen=True)
class Home:
    home: Path
    sessions: Path
    billing: Path
    demo: str  # the session id of the real demo run
    seeds: tuple[str, ...]  # seed-example-1 .. 4 (events.jsonl only)

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        """A real ``python -m otel_agents`` process over this home."""
        return subprocess.run([sys.executable, "-m", "otel_agents", *args], capture_output=True,
                              env=clean_env(self.home), timeout=120)


def make_home(root: Path) -> Home:
    """One real demo run (a subprocess, the scripted model through litellm) and the seed examples' event files."""
    home = root / "home"
    sessions = home / "sessions"
    done = subprocess.run([sys.executable, "-m", "otel_agents", "run", DEMO_PROMPT], capture_output=True, text=True,
                          env=clean_env(home), timeout=120)
    assert done.returncode == 0, done.stderr
    demo = done.stderr.strip().splitlines()[-1].split("session: ")[1]
    seeds = []
    for number, text in SEED_EXAMPLES.items():
        directory = sessions / f"seed-example-{number}"
        directory.mkdir()
        (directory / "events.jsonl").write_text(text.strip() + "\n")
        seeds.append(directory.name)
    return Home(home, sessions, home / "billing.jsonl", demo, tuple(seeds))


KILLER = Path(__file__).parents[1] / "persistence" / "kill_after_spans.py"


def killed_sessions(root: Path) -> Path:
    """A sessions directory holding the demo run SIGKILLed at its last span end (the run's own, left open):
    meta.json is as the run began, the journal holds all the rest."""
    env = {**clean_env(root / "unused"), "OTEL_TRACES_EXPORTER": "none"}
    done = subprocess.run([sys.executable, str(KILLER), str(root), str(10**6), "--", DEMO_PROMPT],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    last = json.loads(done.stdout.splitlines()[-1])
    assert last["signal"] == 9, last
    return Path(last["home"]) / "sessions"


def copy_home(source: Home, root: Path) -> Home:
    """A private copy a test may change."""
    shutil.copytree(source.home, root / "home")
    return Home(root / "home", root / "home" / "sessions", root / "home" / "billing.jsonl", source.demo, source.seeds)


def digest_tree(*roots: Path) -> dict[str, str]:
    """Path -> sha256 of every file under the roots (and the roots themselves when files)."""
    out = {}
    for root in roots:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in files:
            out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RunningServer:
    """The app on a real uvicorn server in a thread (streaming responses need a real connection)."""

    def __init__(self, app):
        import uvicorn

        self.port = free_port()
        from otel_agents.ui.serve import ui_server

        self.server = ui_server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    lifespan="off", access_log=False))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "RunningServer":
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(10)


# TestClient's base: the app refuses a Host that is not one of its names (DNS rebinding), as "testserver" is.
LOCAL = "http://127.0.0.1"
