"""Ctrl-C and SIGTERM held from a session's lock until the prompt loop takes them up (``execution.execute``)."""

from __future__ import annotations

import os
import signal
from typing import Any

import click

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class SignalHold:
    """Between the lock and the loop's own handlers, SIGTERM's default action would kill the command
    without a word and leave a session of its lock alone; held, the signal ends it cleanly a moment later.

    Holding ends when the loop takes over (:meth:`release`) or, should the command stop before, when
    its click context closes: a process that goes on (a test runner invoking commands) gets its own
    handlers back. A process forked meanwhile (the recorder, a pool's worker) is not held: the signal
    does there what it did before.
    """

    def __init__(self) -> None:
        self.held: list[int] = []
        self._before: dict[int, Any] | None = None
        self._pid = 0

    def start(self) -> None:
        if self._before is not None:
            return
        self._pid = os.getpid()
        self._before = {signum: signal.signal(signum, self._hold) for signum in _SIGNALS}
        context = click.get_current_context(silent=True)
        if context is not None:
            context.call_on_close(self.release)

    def _hold(self, signum: int, frame: Any) -> None:
        if os.getpid() != self._pid:  # a forked child: the default action, as if nothing were held
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        self.held.append(signum)

    def release(self) -> bool:
        """Give the handlers from before back; whether a signal came meanwhile (said once)."""
        before, self._before = self._before, None
        for signum, handler in (before or {}).items():
            if signal.getsignal(signum) == self._hold:
                signal.signal(signum, handler)
        came, self.held = bool(self.held), []
        return came


holding = SignalHold()
