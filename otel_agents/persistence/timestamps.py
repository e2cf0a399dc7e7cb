"""Timestamps in the line formats (events.jsonl, billing.jsonl): ISO 8601 UTC, nanoseconds kept.

The tree keeps integer nanoseconds; the lines carry text a person can read and
``date`` can parse. Nine fractional digits make the two convertible both ways.
"""

from __future__ import annotations

import re
import time
from datetime import date, datetime, timezone

_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.(\d{1,9}))?Z$")
_EPOCH_DAY = date(1970, 1, 1).toordinal()


_last_second: tuple[int, str] = (-1, "")  # the last whole second formatted: a session's lines come many a second


def iso_ts(ns: int) -> str:
    """1700000000123456789 -> '2023-11-14T22:13:20.123456789Z'."""
    global _last_second
    seconds, fraction = divmod(int(ns), 1_000_000_000)
    last = _last_second  # one read: another thread may replace it meanwhile, never tear it
    if last[0] == seconds:
        return f"{last[1]}.{fraction:09d}Z"
    # time.gmtime and one format: half the cost of datetime's strftime, and every
    # events.jsonl line and ledger record carries one of these.
    try:
        t = time.gmtime(seconds)
    except (OverflowError, OSError, ValueError):
        t = None
    if t is None or not 1 <= t.tm_year <= 9999:  # datetime's range, and its error outside it
        stamp = datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
        return f"{stamp}.{fraction:09d}Z"
    stamp = f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
    _last_second = (seconds, stamp)
    return f"{stamp}.{fraction:09d}Z"


def parse_iso_ts(text: str) -> int:
    """Inverse of :func:`iso_ts` (fewer fractional digits are accepted)."""
    match = _ISO.match(text)
    if not match:
        raise ValueError(f"not an ISO 8601 UTC timestamp: {text!r}")
    # fromisoformat checks the calendar and clock (as strptime did) at a tenth of its
    # cost: readers of events.jsonl and of the journal parse one of these per line.
    whole = datetime.fromisoformat(text[:19])
    seconds = (whole.toordinal() - _EPOCH_DAY) * 86_400 + whole.hour * 3_600 + whole.minute * 60 + whole.second
    return seconds * 1_000_000_000 + int((match.group(1) or "").ljust(9, "0"))
