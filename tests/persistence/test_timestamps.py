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


@given(st.integers(YEAR_1000_NS // 10**9, LAST_NS // 10**9 - 2),
       st.lists(st.tuples(st.integers(0, 2), st.integers(0, 999_999_999)), min_size=1, max_size=30))
def test_many_in_the_same_seconds_in_any_order(second, offsets):
    """The last second's text is kept for the next stamp: going back and forth between seconds changes nothing."""
    for extra, fraction in offsets:
        ns = (second + extra) * 1_000_000_000 + fraction
        assert iso_ts(ns) == _by_datetime(ns)


def test_threads_stamping_other_seconds_at_once():
    from concurrent.futures import ThreadPoolExecutor

    seconds = [1_700_000_000 + 86_400 * n for n in range(8)]

    def stamp(second: int) -> bool:
        return all(iso_ts(second * 10**9 + i) == _by_datetime(second * 10**9 + i) for i in range(3_000))

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(stamp, seconds))
