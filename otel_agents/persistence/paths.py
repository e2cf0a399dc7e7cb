"""Where things live: ``OTEL_AGENTS_HOME`` (default ``~/.otel-agents``), never the working directory.

    <home>/sessions/<session_id>/   everything about one session (seed 003)
    <home>/billing.jsonl            the billing ledger
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from otel_agents.tracing.session_ids import valid_session_id

DEFAULT_HOME = "~/.otel-agents"


class InvalidSessionId(ValueError):
    pass


def home_dir() -> Path:
    return Path(os.environ.get("OTEL_AGENTS_HOME") or DEFAULT_HOME).expanduser()


@dataclass(frozen=True)
class Paths:
    sessions_dir: Path
    billing_file: Path

    @classmethod
    def resolve(cls, sessions_dir: Path | None = None, billing_file: Path | None = None) -> "Paths":
        home = home_dir()
        return cls(
            Path(sessions_dir) if sessions_dir else home / "sessions",
            Path(billing_file) if billing_file else home / "billing.jsonl",
        )

    def session_dir(self, session_id: str) -> Path:
        if not valid_session_id(session_id):
            raise InvalidSessionId(f"invalid session id {session_id!r}")
        return self.sessions_dir / session_id
