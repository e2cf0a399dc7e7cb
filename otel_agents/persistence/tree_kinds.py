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
    """A session's status from its runs': in progress, else failed, else cancelled, else ok."""
    statuses = set(run_statuses)
    for status in (STATUS_IN_PROGRESS, STATUS_ERROR, STATUS_INTERRUPTED, STATUS_CANCELLED):
        if status in statuses:
            return status
    return STATUS_OK
