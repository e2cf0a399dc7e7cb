"""Atomic file replacement: a reader sees the old file or the new one, never a mix.

The data goes to a temporary file in the same directory (so the rename cannot
cross filesystems), which is fsynced, renamed over the target, and then the
directory is fsynced so the rename itself survives a power cut. The new file is
owner-only (0600), like every file of a session.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable

from otel_agents.persistence.private import FILE_MODE

TEMP_SUFFIX = ".tmp"


def temp_prefix(path: Path) -> str:
    """Temporary files are hidden and named after their target, so stale ones are recognisable."""
    return f".{path.name}."


def atomic_write(
    path: Path, data: bytes, *, before_rename: Callable[[Path], None] | None = None, durable: bool = True
) -> int:
    """Replace ``path`` with ``data``; returns the number of bytes written.

    ``before_rename`` runs after the temporary file is complete and synced, just
    before the rename: tests use it to crash the process at the worst moment.
    ``durable=False`` skips both fsyncs: still atomic for readers and against a killed
    process, but a power cut may leave the previous file (for files derived from others).
    """
    path = Path(path)
    fd, temp_name = tempfile.mkstemp(prefix=temp_prefix(path), suffix=TEMP_SUFFIX, dir=path.parent)
    temp = Path(temp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), FILE_MODE)  # owner-only, as mkstemp made it, whatever the umask
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        if before_rename is not None:
            before_rename(temp)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent)
    return len(data)


def fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # some filesystems do not open directories; the rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def remove_stale_temps(path: Path) -> int:
    """Remove temporary files a crashed writer left next to ``path``; returns how many."""
    path = Path(path)
    removed = 0
    for candidate in path.parent.glob(temp_prefix(path) + "*" + TEMP_SUFFIX):
        try:
            candidate.unlink()
            removed += 1
        except OSError:
            pass
    return removed
