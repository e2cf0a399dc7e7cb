"""Timestamps of the line formats: ISO 8601 UTC with nanoseconds, both ways."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from otel_agents.persistence.timestamps import iso_ts, parse_iso_ts

LAST_NS = 253402300799_999_999_999  # 9999-12-31T23:59:59.999999999Z


def _by_datetime(ns: int) -> str:
    seconds, fraction = divmod(ns, 1_000_000_000)
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + f".{fraction:09d}Z"


YEAR_1000_NS = -30610224000_000_000_000
FIRST_NS = -62135596800_000_000_000  # 0001-01-01T00:00:00Z


@given(st.integers(YEAR_1000_NS, LAST_NS))
def test_text_is_the_calendar_time(ns):
    assert iso_ts(ns) == _by_datetime(ns)


@given(st.integers(FIRST_NS, LAST_NS))
def test_text_reads_back_exactly(ns):
    # Years before 1000 too: four digits, where strftime here wrote three (unreadable back).
    text = iso_ts(ns)
    assert text[4] == "-" and parse_iso_ts(text) == ns


@pytest.mark.parametrize("ns", [0, -1, 1_700_000_000_123_456_789, LAST_NS, 951_782_400 * 10**9])  # 2000-02-29
def test_edges_of_the_range(ns):
    assert iso_ts(ns) == _by_datetime(ns)


def test_the_first_instant_of_year_one():
    assert iso_ts(FIRST_NS) == "0001-01-01T00:00:00.000000000Z"


@pytest.mark.parametrize("ns", [LAST_NS + 1, 10**30, -(10**30)])
def test_a_time_past_year_9999_is_an_error_as_in_datetime(ns):
    with pytest.raises((ValueError, OverflowError, OSError)):
        iso_ts(ns)
