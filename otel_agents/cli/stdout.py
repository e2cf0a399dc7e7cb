"""The command's stdout: a write that fails (closed, full disk, a reader gone) said once, in one line.

``guard`` puts every write to fd 1 behind :class:`_Raw`: the first that fails raises
:class:`StdoutLost` and is remembered; later ones are dropped, so no flush at exit raises again.
``settle`` turns what was remembered into the command's last word: a reader that went away
(``| head``) ends it quietly with exit 0, any other failure is one ``Error:`` line and exit 1.
"""

from __future__ import annotations

import errno
import io
import os
import sys

import click

EXIT_FAILED = 1


class StdoutLost(OSError):
    """stdout could not be written. Its errno is None, so click does not take a reader gone
    (EPIPE) for its own; the failure itself is ``cause``."""

    def __init__(self, cause: OSError) -> None:
        super().__init__(f"stdout could not be written: {reason(cause)}")
        self.cause = cause


class _State:
    failure: OSError | None = None
    told = False  # the command said what the failure cost (execute): settle adds nothing


_state = _State()


def reason(cause: OSError) -> str:
    return cause.strerror or str(cause)


def reader_gone(cause: OSError | None) -> bool:
    return cause is not None and cause.errno in (errno.EPIPE, errno.ECONNRESET)


class _Raw(io.RawIOBase):
    """fd 1, or nothing when it was closed at start (every write fails as a closed stdout)."""

    def __init__(self, fd: int | None) -> None:
        super().__init__()
        self.fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        if self.fd is None:
            raise io.UnsupportedOperation("stdout is closed")
        return self.fd

    def isatty(self) -> bool:
        return self.fd is not None and os.isatty(self.fd)

    def write(self, data) -> int:
        size = len(memoryview(data).cast("B"))
        if _state.failure is not None:
            return size  # said once already: the rest goes nowhere
        try:
            if self.fd is None:
                raise OSError(errno.EBADF, "stdout is closed")
            return os.write(self.fd, data)
        except OSError as exc:
            _state.failure = exc
            raise StdoutLost(exc) from None


def guard() -> None:
    """Route stdout through :class:`_Raw`. A closed fd 0, 1 or 2 is first taken by /dev/null, so no
    file the command opens (a session's lock, its events) gets that number and stray writes to it;
    a closed stdin reads as empty and a closed stderr is dropped."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            taken = os.open(os.devnull, os.O_RDWR)
            if taken != fd:  # a lower one was free and is taken in turn by this loop's order
                os.close(taken)
    # Python left None for a stream closed at start: stdin then reads nothing, as from </dev/null, and
    # stderr goes nowhere (click would put its diagnostics on stdout, among the results).
    if sys.stdin is None:
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - the process's stdin, never closed
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - likewise
    closed = sys.stdout is None
    current = sys.stdout or sys.__stdout__
    encoding = getattr(current, "encoding", None) or "utf-8"
    errors = getattr(current, "errors", None) or "strict"
    line_buffering = bool(getattr(current, "line_buffering", False))
    if not closed:
        try:
            current.flush()
        except (OSError, ValueError):
            pass
    buffer = io.BufferedWriter(_Raw(None if closed else 1))
    sys.stdout = io.TextIOWrapper(buffer, encoding=encoding, errors=errors, line_buffering=line_buffering)


def failure() -> OSError | None:
    """The failed write to stdout, if one failed."""
    return _state.failure


def told() -> None:
    """The command has said what the failure cost: settle says nothing more."""
    _state.told = True


def flush() -> None:
    """Flush stdout; a failure is remembered (for settle), never raised."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except (OSError, ValueError):
        pass


def settle(code: int | None) -> int:
    """The exit code once the command is done (``code``: None when a failed write ended it)."""
    flush()
    cause = _state.failure
    if cause is None or _state.told:
        return EXIT_FAILED if code is None else code
    if reader_gone(cause):  # as `git log | head`: the reader chose to stop; nothing to say
        return 0 if code is None else code
    click.echo(f"Error: stdout could not be written: {reason(cause)}", err=True)
    return code or EXIT_FAILED


def run_lost_line(cause: OSError, session_id: str, saved: bool, left: int, total: int, watched: bool) -> str:
    """What a failed write to stdout cost a run, in one line: prompts not run, whether the session
    was saved; "" when a reader that went away (``| head``) missed nothing still to run."""
    not_run = []
    if left:
        first = total - left + 1
        not_run.append(f"prompt {first} of {total} was not run" if left == 1
                       else f"prompts {first}-{total} of {total} were not run")
    if watched:
        not_run.append("the watch stopped")
    kept = f"session {session_id} was saved" if saved else f"session {session_id} was not saved whole"
    if reader_gone(cause):
        return f"output stopped: the reader of stdout went away; {'; '.join([*not_run, kept])}" if not_run else ""
    return f"Error: stdout could not be written ({reason(cause)}): the answer was lost; " + "; ".join([*not_run, kept])
