"""A session's status from its runs': in progress, then failed, then interrupted, then cancelled, else ok."""

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
        ([STATUS_INTERRUPTED, STATUS_ERROR, STATUS_OK], STATUS_ERROR),
        ([STATUS_ERROR, STATUS_IN_PROGRESS], STATUS_IN_PROGRESS),
    ],
)
def test_the_most_telling_run_status_wins(runs, expected):
    assert session_status(runs) == expected
    assert session_status(reversed(runs)) == expected  # the order of the runs does not matter
