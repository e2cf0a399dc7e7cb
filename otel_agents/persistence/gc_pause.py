"""Pausing Python's cyclic garbage collector while a reader builds many objects.

Reading a large session allocates about ten small objects per record and frees
none of them: each automatic collection would walk every live record again, so
the collector alone can take as long as the parsing. None of these objects form
cycles, so nothing is lost by collecting only once the reading is done.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def collector_paused() -> Iterator[None]:
    """Disable automatic collection inside the block (restored after, as it was)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
