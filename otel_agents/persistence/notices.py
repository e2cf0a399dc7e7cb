"""One-line notices on stderr: persistence problems are reported, never raised into a run."""

from __future__ import annotations

import sys
from typing import Callable

Warn = Callable[[str], None]


def stderr_warning(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)
