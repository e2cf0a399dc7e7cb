"""The session tree's node kinds and statuses, and which status a session takes from its runs'."""

from __future__ import annotations

from typing import Iterable

STATUS_OK = "ok"
STATUS_ERROR = "error"
STATUS_IN_PROGRESS = "in_progress"
STATUS_CANCELLED = "cancelled"
STATUS_INTERRUPTED = "interrupted"  # never ended: its writer died (persistence/interrupted.py)

KIND_SESSION = "session"
KIND_TURN = "turn"
KIND_LLM = "llm"
KIND_TOOL = "tool"
KIND_CREATE_AGENT = "create_agent"
KIND_SPAN = "span"  # any other span (custom instrumentation): kept, never dropped


def session_status(run_statuses: Iterable[str]) -> str:
    """A session's status from its runs' in run order: in progress while any is, else the last run's.

    A later run supersedes an earlier failure: a session resumed after a crash or an error and
    carried on to a good end reads ``ok`` in `sessions list` and the UI, not ``interrupted``
    (which would ask for another resume). The earlier runs keep their own statuses and errors
    (the session node's ``runs`` and ``errors``).
    """
    statuses = list(run_statuses)
    if STATUS_IN_PROGRESS in statuses:
        return STATUS_IN_PROGRESS
    return statuses[-1] if statuses else STATUS_OK
