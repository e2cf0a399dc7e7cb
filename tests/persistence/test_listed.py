"""What a listing says of each session (``listed.py``): meta.json, or what the journal holds while meta.json lags it."""

from __future__ import annotations

from otel_agents.persistence.listed import listed_meta
from otel_agents.persistence.store import list_sessions
from support.held_sessions import held_run
from test_saved import snapshot


def test_a_running_session_is_listed_with_what_it_has_spent_so_far(tmp_path):
    """meta.json is written as a run begins and again at its end: in between, a first run's listing said
    $0 and no title. The listing reads the journal of a session whose run is open, and writes nothing."""
    with held_run(tmp_path) as (home, directory):
        (listing,) = list_sessions(home / "sessions")
        assert listing.meta["status"] == "running" and listing.meta["totals"]["llm_calls"] == 0  # as the run began
        before = snapshot(home)
        meta = listed_meta(listing)
        assert snapshot(home) == before
        assert meta["status"] == "running" and meta["title"] == "Hold on" and meta["runs"] == 1
        assert meta["totals"]["llm_calls"] == 1 and meta["totals"]["cost_usd"] > 0  # the call that asked to hold
    (closed,) = list_sessions(home / "sessions")
    assert listed_meta(closed) == closed.meta  # a closed session: meta.json's word, nothing read
    assert closed.meta["totals"]["llm_calls"] == 2
