"""A session's status from its runs': in progress while any is, else the last run's."""

from __future__ import annotations

import pytest

from otel_agents.persistence.tree_kinds import (
    STATUS_CANCELLED, STATUS_ERROR, STATUS_IN_PROGRESS, STATUS_INTERRUPTED, STATUS_OK, session_status,
)


@pytest.mark.parametrize(
    "runs, expected",
    [
        ([], STATUS_OK),
        ([STATUS_OK, STATUS_OK], STATUS_OK),
        ([STATUS_OK, STATUS_CANCELLED], STATUS_CANCELLED),
        ([STATUS_CANCELLED, STATUS_INTERRUPTED], STATUS_INTERRUPTED),
        ([STATUS_INTERRUPTED, STATUS_ERROR, STATUS_OK], STATUS_OK),  # resumed after a crash and an error
        ([STATUS_OK, STATUS_ERROR], STATUS_ERROR),
        ([STATUS_ERROR, STATUS_IN_PROGRESS], STATUS_IN_PROGRESS),
        ([STATUS_IN_PROGRESS, STATUS_OK], STATUS_IN_PROGRESS),  # an earlier run still open
    ],
)
def test_the_last_run_decides_unless_one_is_in_progress(runs, expected):
    assert session_status(runs) == expected
