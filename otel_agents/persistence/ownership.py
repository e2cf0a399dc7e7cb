"""The one writer of a session directory: an OS lock on ``owner.lock`` that dies with its holders.

Contract:

- A process that writes a session (run, resume, import, repair, rm) first takes the
  session's lock with :func:`take`; while another process holds it, :func:`take`
  raises :class:`SessionBusy` naming the holder. The lock is ``flock`` on an open
  file description: the kernel drops it when every process holding that description
  has ended, so a killed owner never leaves a stale lock, and the recorder process
  forked by a run (``recorder_process.py``) holds it for as long as it writes.
- Readers never take it: :func:`owner_of` tells who holds it by a shared probe on a
  read-only descriptor, which changes no file. A writer retries briefly, so a reader's
  probe at the same instant never makes it refuse.
- The file's content (pid, recorder pid, start time, host) only names the holder for
  messages; the lock itself is the truth. A holder writes it (:meth:`Ownership.announce`)
  only when it is about to write the session, so an import that changes nothing
  leaves every file as it was, and empties it when it lets go; a message never names a
  holder that has ended or let go. A refused writer waits a moment for a holder that has
  not named itself yet (``_ANNOUNCE_WAIT_S``).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from otel_agents.persistence.private import make_private_dir

LOCK_FILE = "owner.lock"
# A reader's probe holds the lock for microseconds; a writer retries over this window.
_RETRY_S = 0.5
# A holder that has not named itself yet (a resume loading the session) will do so, or let go, in
# moments: a refused writer waits this long for the name rather than say "another process".
_ANNOUNCE_WAIT_S = 3.0
_RETRY_STEP_S = 0.01


class SessionBusy(Exception):
    """Another live process writes the session; the message is one line."""

    def __init__(self, session_id: str, holder: dict[str, Any] | None):
        self.session_id = session_id
        self.holder = holder or {}
        super().__init__(describe_busy(session_id, self.holder))


def describe_busy(session_id: str, holder: dict[str, Any]) -> str:
    if "pid" not in holder:
        return f"session {session_id} is being written by another process"
    if holder["pid"] == os.getpid() and holder.get("host") in (None, socket.gethostname()):
        # A program resuming a session it still has open: naming its own pid would send it looking elsewhere.
        return f"session {session_id} is being written by this process (pid {holder['pid']})"
    started = holder.get("started")
    return f"session {session_id} is being written by pid {holder['pid']}" + (f" (started {started})" if started else "")


@dataclass
class Ownership:
    """A held lock; :meth:`release` (or the holder's exit) gives it up."""

    session_id: str
    path: Path
    fd: int | None
    info: dict[str, Any]
    announced: bool = False

    def announce(self) -> None:
        """Name this process as the writer in the lock file (for other processes' messages)."""
        if not self.announced:
            self.announced = True
            _write_info(self.fd, self.info)

    def name_recorder(self, pid: int) -> None:
        """Add the recorder process's pid to what readers are told (it holds the lock too)."""
        self.info["recorder"] = pid
        self.announced = True
        _write_info(self.fd, self.info)

    def release(self) -> None:
        if self.fd is not None:
            if self.announced:  # a holder that let go is nobody's answer, though its process lives on
                try:
                    os.ftruncate(self.fd, 0)
                except OSError:
                    pass
            os.close(self.fd)  # the lock goes when the recorder process's copy goes too
            self.fd = None

    def __enter__(self) -> "Ownership":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def take(directory: Path, *, create: bool = False, announce: bool = True) -> Ownership:
    """Hold ``directory``'s lock (making the directory first if ``create``); ``announce``: name this
    process in the lock file at once (see :meth:`Ownership.announce`).

    Raises :class:`SessionBusy` while a live process holds it, FileNotFoundError when
    the directory does not exist (or was removed while waiting) and ``create`` is off.
    """
    directory = Path(directory)
    if create:
        # Not mkdir(parents=True, mode=0o700): that mode reaches only the last directory, the parents got 0755.
        make_private_dir(directory, own_existing=False)
    path = directory / LOCK_FILE
    started = time.monotonic()
    deadline = started + _RETRY_S
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            if time.monotonic() >= deadline:
                holder = _read_info(path)
                if holder or time.monotonic() >= started + _ANNOUNCE_WAIT_S:
                    raise SessionBusy(directory.name, holder) from None
            time.sleep(_RETRY_STEP_S)
            continue
        # Taken: but ``sessions rm`` may have removed the directory (and this file) meanwhile.
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
        if not create:
            raise FileNotFoundError(errno.ENOENT, "session directory removed", str(directory))
        make_private_dir(directory, own_existing=False)
    info = {"pid": os.getpid(), "host": socket.gethostname(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    ownership = Ownership(directory.name, path, fd, info)
    if announce:
        ownership.announce()
    return ownership


def owner_of(directory: Path) -> dict[str, Any] | None:
    """Who holds ``directory``'s lock now (None: nobody). Opens nothing for writing."""
    path = Path(directory) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None  # no lock file: no writer of this version ever held it
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                return None
            return _read_info(path) or {}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _write_info(fd: int | None, info: dict[str, Any]) -> None:
    if fd is None:
        return
    data = json.dumps(info).encode() + b"\n"
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
    except OSError:  # a full disk: the lock holds all the same; only messages lose the holder's name
        pass


def _read_info(path: Path) -> dict[str, Any]:
    """What the holder announced; {} when it did not (what is there then names an earlier holder)."""
    try:
        info = json.loads(path.read_bytes() or b"{}")
    except (OSError, ValueError):
        return {}
    if not isinstance(info, dict):
        return {}
    pids = [info.get("pid"), info.get("recorder")]
    return info if info.get("host") != socket.gethostname() or any(_alive(p) for p in pids) else {}


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
