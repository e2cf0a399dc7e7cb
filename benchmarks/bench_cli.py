"""Cold-process command timings: ``otel-agents sessions list`` and the views of a large session.

Each figure is the wall time of a whole new process (interpreter start, imports,
work, output), which is what a user waits for. Whether a command imported
litellm is read from ``python -X importtime`` (stderr), not guessed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from bench_billing import otel_agents_command
from bench_timing import run_process


def sessions_list_command(sessions_dir: Path) -> list[str]:
    return [*otel_agents_command(), "sessions", "list", "--sessions-dir", str(sessions_dir)]


def imports_litellm(arguments: list[str], env: dict[str, str] | None = None) -> bool:
    """Does ``otel-agents ARGUMENTS`` import litellm? (``-X importtime`` lists every module imported.)"""
    _, done = run_process([sys.executable, "-X", "importtime", "-m", "otel_agents", *arguments], env=env)
    modules = (line.rsplit("|", 1)[-1].strip() for line in done.stderr.decode(errors="replace").splitlines()
               if line.startswith("import time:"))
    return any(name == "litellm" or name.startswith("litellm.") for name in modules)


def view_commands(session_dir: Path, dialog_agents: list[str], perspective_agent: str, traced_message: str) -> dict[str, list[str]]:
    base = [*otel_agents_command(), "view", str(session_dir)]
    return {
        "dialog": [*base, "dialog", *dialog_agents],
        "perspective": [*base, "perspective", perspective_agent],
        "causality": [*base, "trace", traced_message],
    }


def tree_commands(session_dir: Path, answered_message: str, billing_file: Path) -> dict[str, list[str]]:
    """Commands that read a session's spans rather than its records alone: the exact context of
    one LLM call, and the whole tree. The ledger is a scratch one (a billed session does not touch it)."""
    return {
        "view_context": [*otel_agents_command(), "view", str(session_dir), "context", answered_message],
        "sessions_show": [*otel_agents_command(), "sessions", "show", session_dir.name,
                 "--sessions-dir", str(session_dir.parent), "--billing-file", str(billing_file)],
    }


def timed_command(command: list[str], repeat: int, env: dict[str, str] | None = None) -> tuple[list[float], bytes]:
    """Wall seconds of ``repeat`` runs and the last run's stdout."""
    seconds, out = [], b""
    for _ in range(repeat):
        wall, done = run_process(command, env=env)
        seconds.append(wall)
        out = done.stdout
    return seconds, out
