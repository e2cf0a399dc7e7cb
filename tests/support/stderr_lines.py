"""The closing ``error:`` lines of a command's stderr, read as tests compare them."""

from __future__ import annotations

import re

# A stopped run's line is named like the console's others: ``[txn:…] run session/<agent>: error: …``.
_RUN_ERROR = re.compile(r"(?:\[txn:[0-9a-f]+\] run session/\S+: )?(error: .*)")


def error_lines(stderr: str) -> list[str]:
    """Each ``error:`` line from ``error:`` on: the txn id naming the run differs from session to session."""
    return [found.group(1) for line in stderr.splitlines() if (found := _RUN_ERROR.fullmatch(line))]
