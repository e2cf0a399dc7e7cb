"""Owner-only storage: session directories and the ledger are 0700/0600, whatever the umask.

A session keeps what the model was sent, pattern-labelled secrets included, so no
other user may read it. Modes are set with chmod after creation: ``os.open``'s mode
and ``mkdir``'s are both cut by the umask, which may be anything.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

DIR_MODE = 0o700
FILE_MODE = 0o600


def make_private_dir(path: Path, *, own_existing: bool = True) -> None:
    """Create ``path`` (and missing parents) 0700; ``own_existing``: an existing ``path`` becomes 0700 too.

    Parents that already exist are left alone: they may be shared (``/tmp``, a home).
    """
    path = Path(path)
    missing = []
    for directory in (path, *path.parents):
        if directory.exists():
            break
        missing.append(directory)
    path.mkdir(parents=True, exist_ok=True)
    for directory in missing:
        _chmod(directory, DIR_MODE)
    if own_existing and path not in missing:
        _chmod(path, DIR_MODE)


def private_fd(fd: int) -> int:
    """Make an open file 0600 (a file of another owner is left as it is); returns ``fd``."""
    try:
        if os.fstat(fd).st_mode & 0o777 != FILE_MODE:
            os.fchmod(fd, FILE_MODE)
    except PermissionError:
        pass
    return fd


def open_private_append(path: Path, buffering: int = -1) -> BinaryIO:
    """``open(path, "ab", buffering)``, the file created (or kept) 0600."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
    return os.fdopen(private_fd(fd), "ab", buffering)


def _chmod(path: Path, mode: int) -> None:
    try:
        if path.stat().st_mode & 0o777 != mode:
            os.chmod(path, mode)
    except PermissionError:  # not ours: a shared directory given as the sessions dir
        pass
