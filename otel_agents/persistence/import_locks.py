"""The locks an import holds: one importer at a time per sessions directory, and each session it writes.

Concurrent imports of the same trace wait for each other (a lock on the sessions
directory itself, so no file is added; held while planning and writing), so the second finds what the
first wrote and reports it ``unchanged``. Each existing session touched is owned
(ownership.py) for the whole import, so an import never writes beside a live run:
a session being written is refused with :class:`~otel_agents.persistence.ownership.SessionBusy`.
Sessions the import creates are owned from the moment their directory exists.
"""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable, Iterator

from otel_agents.persistence.ownership import Ownership, take

@contextmanager
def importing(sessions_dir: Path, session_ids: Iterable[str]) -> Iterator[Callable[[Path], Ownership]]:
    """Hold the import lock and every existing session's; yields ``own(directory)``, called for
    each session before it is written (it takes a new one's lock, announces an existing one's)."""
    sessions_dir = Path(sessions_dir)
    sessions_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(sessions_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    held: list[Ownership] = []
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another import of the same files finishes first
        for session_id in sorted(set(session_ids)):
            directory = sessions_dir / session_id
            if directory.is_dir():
                held.append(take(directory, announce=False))  # announced only if it is written

        def own(directory: Path) -> Ownership:
            for ownership in held:
                if ownership.path.parent == directory:
                    ownership.announce()
                    return ownership
            ownership = take(directory)
            held.append(ownership)
            return ownership

        yield own
    finally:
        for ownership in held:
            ownership.release()
        os.close(fd)
