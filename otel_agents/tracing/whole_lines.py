"""An exported lines file (``--otlp-file`` and its metrics file): each append whole or not at all, failures said once."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Callable


class WholeLinesFile:
    """Appends one line per export; a failed append (a full disk, a file-size limit) is cut back to
    where it began, so the file stays readable line by line and later exports still land.

    The exporters built on it return FAILURE on such an append, which the SDK's processors do not
    report; :meth:`close` says once what was not written (``warn``: stderr). The cut assumes one
    process writes the file, as one run does its ``--otlp-file``.
    """

    def __init__(self, path: Path, items: str, note: str = "", warn: Callable[[str], None] | None = None):
        # Resolved now: a relative path names the directory the run started in, whatever the cwd at export time.
        self.path = Path(path).absolute()
        self.items = items  # what a line holds, for the warning: "spans", "metric exports"
        self.note = note  # where else they are, for the warning
        self._warn = warn or (lambda message: print(message, file=sys.stderr, flush=True))
        self._lock = threading.Lock()
        self.offered = 0
        self.lost = 0
        self.problem: str | None = None

    def append(self, line: bytes, count: int = 1) -> bool:
        """Append ``line`` (ending in a newline), which holds ``count`` items; False if it was not written."""
        with self._lock:
            self.offered += count
            try:
                # Owner-only when created, as the session's files: redacted, it still holds every prompt and answer.
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            except OSError as exc:
                return self._failed(exc, count)
            try:
                start = os.lseek(fd, 0, os.SEEK_END)
                try:
                    view = memoryview(line)
                    while view:
                        view = view[os.write(fd, view):]
                except OSError as exc:
                    try:
                        os.ftruncate(fd, start)  # a torn line would make every reader stop there
                    except OSError:
                        pass
                    return self._failed(exc, count)
            finally:
                os.close(fd)
        return True

    def close(self) -> None:
        """Warn once if anything offered was not written."""
        with self._lock:
            if self.lost:
                self._warn(f"warning: could not write {self.lost} of {self.offered} {self.items} to {self.path} "
                           f"({self.problem}){self.note}")
                self.lost = 0

    def _failed(self, exc: OSError, count: int) -> bool:
        self.lost += count
        self.problem = self.problem or exc.strerror or type(exc).__name__
        return False
