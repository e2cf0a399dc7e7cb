"""The public ``otel_agents.recording`` block: what a recorded session needs, set up once for every session opened inside."""

from __future__ import annotations

import os
import threading
from contextvars import ContextVar, Token
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.trace import TracerProvider

from otel_agents.arguments import check_flag, check_optional
from otel_agents.persistence.output_files import new_file_problem, storage_output_problem
from otel_agents.persistence.paths import Paths
from otel_agents.session_recording import Recording, application_provider, configure, start_recording

if TYPE_CHECKING:
    from otel_agents.api import Session

_active: ContextVar["recording | None"] = ContextVar("otel_agents_recording", default=None)
# Every block open in the process, on any thread: a new thread does not inherit the ContextVar above.
_open_blocks: list["recording"] = []
_open_lock = threading.Lock()


class recording:
    """Record every session opened inside: ``with otel_agents.recording(home=...):`` (or ``async with``).

    Sets up what ``otel-agents run`` sets up: tracing from the standard ``OTEL_*`` variables
    (OTLP export included), ``<home>/sessions/<id>/`` with its single-writer lock, the
    crash-safe recorder process, and the billing ledger. When the application has set an SDK
    ``TracerProvider`` globally (or passes ``tracer_provider``), the recorder joins that
    provider instead: the application's processors and exporters keep every span they had.
    """

    def __init__(
        self,
        home: str | os.PathLike[str] | None = None,
        sessions_dir: str | os.PathLike[str] | None = None,
        billing_file: str | os.PathLike[str] | None = None,
        *,
        otlp_file: str | os.PathLike[str] | None = None,
        redacted_save: bool = False,
        tracer_provider: TracerProvider | None = None,
    ) -> None:
        for argument, value in (("home", home), ("sessions_dir", sessions_dir), ("billing_file", billing_file),
                                ("otlp_file", otlp_file)):
            check_optional("recording", argument, value, (str, os.PathLike), "a path")
        check_flag("recording", "redacted_save", redacted_save)
        check_optional("recording", "tracer_provider", tracer_provider, TracerProvider,
                       "an opentelemetry.sdk.trace.TracerProvider")
        home_path = Path(home).expanduser() if home is not None else None
        self.paths = Paths.resolve(
            Path(sessions_dir) if sessions_dir else (home_path / "sessions" if home_path else None),
            Path(billing_file) if billing_file else (home_path / "billing.jsonl" if home_path else None),
        )
        self.otlp_file = Path(otlp_file) if otlp_file is not None else None
        if self.otlp_file is not None:
            # As the CLI's --otlp-file: said now, not as a warning after every session has run unexported.
            problem = new_file_problem(self.otlp_file)
            if problem is not None:
                raise ValueError(f"recording: otlp_file= {problem}")
            problem = storage_output_problem(self.otlp_file, self.paths, "otlp_file=", metrics_beside=True)
            if problem is not None:
                raise ValueError(f"recording: {problem}")
        self.redacted_save = redacted_save
        self.tracer_provider = tracer_provider
        self.tracing: Any = None
        self.sessions: list[Session] = []
        self.saved_everything = True  # False once a session could not be saved whole
        self._token: Token | None = None
        self._ended = False  # one block per object: its tracing is shut down at the block's end

    def __enter__(self) -> "recording":
        if self._ended:
            raise RuntimeError("this recording has ended: a recording() object records one block; "
                               "make a new one (otel_agents.recording(...)) for another")
        if self.tracing is not None:
            raise RuntimeError("this recording is already active")
        self.tracing = configure(self.otlp_file, adopt=self.tracer_provider or application_provider())
        self._token = _active.set(self)
        with _open_lock:
            _open_blocks.append(self)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        try:
            for session in list(self.sessions):
                session.close()
        finally:
            with _open_lock:
                if self in _open_blocks:
                    _open_blocks.remove(self)
            if self._token is not None:
                _active.reset(self._token)
                self._token = None
            self._ended = True
            self.tracing.shutdown()

    async def __aenter__(self) -> "recording":
        return self.__enter__()

    async def __aexit__(self, *exc_info: Any) -> None:
        for session in list(self.sessions):
            await session.aclose()
        self.__exit__(*exc_info)

    def _start(self, session: "Session", ownership: Any = None, resume: bool = False) -> Recording:
        extra = {"resume": True} if resume else {"redact_contents": self.redacted_save}
        # A failed start leaves the tracing up for the block's other sessions: the block shuts it down.
        handle = start_recording(self.tracing, self.paths, session.id, ownership, **extra)
        self.sessions.append(session)
        return handle

    def _finished(self, session: "Session", saved: bool) -> None:
        self.saved_everything = self.saved_everything and saved
        if session in self.sessions:
            self.sessions.remove(session)


def active_recording() -> recording | None:
    """The innermost ``recording`` block this code runs in; else, in a thread that did not inherit it, the
    process's one open block. Several open, none of them this code's: ``RuntimeError`` (no silent unrecorded run)."""
    here = _active.get()
    if here is not None and not here._ended:
        return here
    with _open_lock:
        blocks = list(_open_blocks)
    if len(blocks) > 1:
        raise RuntimeError(f"{len(blocks)} otel_agents.recording() blocks are open in other threads, none in this "
                           "thread's context: open the session inside the block that should record it")
    return blocks[0] if blocks else None


def session_dir_of(rec: recording, session_id: str, error: type[ValueError]) -> Path:
    """The directory of ``session_id`` in ``rec``'s home; a malformed id (``../x``) is ``error``, the
    caller's documented one, not the paths layer's own."""
    from otel_agents.persistence.paths import InvalidSessionId

    try:
        return rec.paths.session_dir(session_id)
    except InvalidSessionId as exc:
        raise error(str(exc)) from None
