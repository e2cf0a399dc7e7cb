"""Saved sessions as regression tests: ``assert_replays(session_dir)`` for a project's own pytest suite (docs/replay.md)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Replayed", "assert_replays"]


@dataclass(frozen=True)
class Replayed:
    """A replay that matched: the new session's id, and the replay's stderr report."""

    session_id: str
    report: str


def assert_replays(session_dir: str | os.PathLike, *, strict: bool = False, from_run: int = 1,
                   workdir: str | os.PathLike | None = None, timeout: float = 300) -> Replayed:
    """Replay a saved session directory with ``otel-agents replay``; AssertionError naming the divergence if any.

    The session is copied into a scratch home first (``workdir``, else a temporary one that is
    removed), so the saved directory is only read and the replay's session and billing land
    there. The app or script the session names is imported from the current directory and
    ``sys.path``, as ``resume`` does: run the test from the project's root. A session whose run
    ended in an error (a spent budget) replays when it ends with the same error, every call matched.
    A usage mistake (``from_run`` not a run of the session, a ``timeout`` of 0) raises ValueError
    or TypeError naming the argument, before anything runs: it is the test's bug, not a divergence.
    """
    from otel_agents.arguments import check_count, check_flag, check_seconds
    from otel_agents.persistence.tree_file import TREE_FILE

    check_flag("assert_replays", "strict", strict)
    check_count("assert_replays", "from_run", from_run)
    check_seconds("assert_replays", "timeout", timeout)
    source = Path(session_dir)
    if not (source / TREE_FILE).is_file():
        raise AssertionError(f"{source} is not a saved session directory (no {TREE_FILE})")
    runs = _run_count(source)
    if runs is not None and from_run > runs:
        raise ValueError(f"assert_replays: from_run={from_run} is past session {source.name}'s runs (1 to {runs})")
    if workdir is not None:
        return _replay(source, Path(workdir), strict, from_run, timeout)
    with tempfile.TemporaryDirectory(prefix="otel-agents-replay-") as scratch:
        return _replay(source, Path(scratch), strict, from_run, timeout)


def _run_count(source: Path) -> int | None:
    """How many runs the saved session has; None when it cannot be read (the replay then says why)."""
    from otel_agents.persistence.saved import SessionUnreadable, load_saved

    try:
        saved = load_saved(source, lambda _text: None, records=False)
    except SessionUnreadable:
        return None
    return len((saved.tree or {}).get("runs") or []) if saved.tree is not None and not saved.damaged else None


def _replay(source: Path, home: Path, strict: bool, from_run: int, timeout: float) -> Replayed:
    sessions = home / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    copy = sessions / source.name
    if not copy.exists():
        shutil.copytree(source, copy, ignore=shutil.ignore_patterns("owner.lock"))
    command = [sys.executable, "-m", "otel_agents", "replay", source.name, "--from-run", str(from_run),
               "--sessions-dir", str(sessions), "--billing-file", str(home / "billing.jsonl")]
    if strict:
        command.append("--strict")
    # The project's own modules (its app) import as they do in the test process.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (os.getcwd(), *sys.path) if p))
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env,
                          stdin=subprocess.DEVNULL)
    # Exit 1 with every call matched: the source's run ended so too (a limit it ran under, a failed call).
    matched = any(line.startswith("replay: ") and " matched session " in line for line in done.stderr.splitlines())
    if done.returncode != 0 and not (done.returncode == 1 and matched):
        raise AssertionError(f"session {source.name} does not replay (exit {done.returncode}):\n{done.stderr}")
    ids = [line.split(": ", 1)[1] for line in done.stderr.splitlines() if line.startswith("session: ")]
    return Replayed(ids[-1] if ids else "", done.stderr)
