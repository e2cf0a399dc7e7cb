"""The session sink's billing: a run's ledger records appended at its end, the ledger's ids read while idle."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from otel_agents.persistence.notices import Warn

if TYPE_CHECKING:  # imported when first needed: a run with no billing file never loads it
    from otel_agents.persistence.ledger import LedgerAppender

LEDGER_READ_AHEAD_BYTES = 8 << 20  # ledger read per idle moment: the pipe is looked at again between slices


class RunBilling:
    """Appends run records to one billing ledger; a failure is one warning, then nothing more is appended.

    The ledger holds every session's history: its ids are read once (a slice per idle
    moment, :meth:`read_ahead`), then only what others appended since, so a run's end
    reads only the ledger's tail.
    """

    def __init__(self, billing_file: Path | None, warn: Warn,
                 append_ledger: Callable[[Path, list[dict]], int] | None = None):
        self.billing_file = Path(billing_file) if billing_file is not None else None
        self.warn = warn
        self._append_ledger = append_ledger  # a test's (or a tool's) own way to append
        self._ledger: LedgerAppender | None = None
        self._caught_up = False
        self.failed = False
        self.bytes_read = 0  # of the ledger, for the ids already in it (all sessions' records)
        self.records_written = 0

    @property
    def active(self) -> bool:
        """A ledger is being written and nothing failed yet."""
        return self.billing_file is not None and not self.failed

    def read_ahead(self) -> bool:
        """Read the next slice of the ledger's ids; True while more remains."""
        if self._caught_up or not self.active or self._append_ledger:
            return False
        ledger = self._appender()
        try:
            self._caught_up = ledger.read_ahead(LEDGER_READ_AHEAD_BYTES)
        except OSError:
            self._caught_up = True  # the append at the run's end says what is wrong
        self.bytes_read = ledger.bytes_read
        return not self._caught_up

    def append(self, records: list[dict]) -> None:
        if not self.active or not records:
            return
        try:
            if self._append_ledger is not None:
                written = self._append_ledger(self.billing_file, records)
            else:
                ledger = self._appender()
                written = ledger.append(records)
                self.bytes_read = ledger.bytes_read
                self._caught_up = False  # others may append before the next run's end
            self.records_written += written
        except Exception as exc:
            self.failed = True
            self.warn(
                f"cannot append to the billing ledger {self.billing_file}: {failure_reason(exc)}; "
                "the run goes on (`otel-agents sessions repair` bills them later)"
            )

    def _appender(self) -> LedgerAppender:
        if self._ledger is None:
            from otel_agents.persistence.ledger import LedgerAppender

            self._ledger = LedgerAppender(self.billing_file)
        return self._ledger


def failure_reason(exc: BaseException) -> str:
    """An exception as the tail of a one-line warning."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}" + (f" ({exc.filename})" if exc.filename else "")
    return f"{type(exc).__name__}: {exc}"
