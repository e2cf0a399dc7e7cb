"""What a listing says of each session (``listed.py``): meta.json, or what the journal holds while meta.json lags it."""

from __future__ import annotations

import time

from otel_agents.persistence.listed import listed_meta
from otel_agents.persistence.ownership import owner_of
from otel_agents.persistence.store import list_sessions
from otel_agents.persistence.timestamps import parse_iso_ts
from support.held_sessions import held_run, opened_session, wait_for
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


def test_a_session_opened_before_its_first_meta_is_listed_running_with_what_its_journal_holds(tmp_path):
    """Until its first run begins a new session's directory holds its lock, then perhaps a journal, but no
    meta.json: listed as unreadable, it was running all along. Read, nothing written."""
    with opened_session(tmp_path) as opened:
        (listing,) = list_sessions(opened.home / "sessions")
        assert listing.meta is None and "meta.json does not exist" in listing.problem  # its lock alone
        before = snapshot(opened.home)
        meta = listed_meta(listing)
        assert snapshot(opened.home) == before
        assert (meta["id"], meta["status"], meta["runs"], meta["title"], meta["agents"]) == (
            opened.directory.name, "running", 0, None, 0)
        assert (meta["totals"]["llm_calls"], meta["totals"]["cost_usd"]) == (0, 0.0)
        assert meta["writer"]["pid"] == opened.proc.pid  # the owner, not the reader
        assert abs(parse_iso_ts(meta["created"]) - time.time_ns()) < 600 * 10**9
        opened.note()  # the journal begins: the root agent made, told something; still no meta.json
        (listing,) = list_sessions(opened.home / "sessions")
        assert listing.meta is None
        noted = listed_meta(listing)
        assert (noted["status"], noted["runs"], noted["agents"], noted["created"]) == ("running", 0, 1, meta["created"])
        assert noted["updated"] >= meta["updated"]
    (closed,) = list_sessions(opened.home / "sessions")
    assert closed.meta is not None and listed_meta(closed) == closed.meta


def test_a_session_whose_writer_died_before_its_first_meta_is_not_listed_running(tmp_path):
    """No meta.json and no process holding the session: a crash before the first save. It keeps its
    problem (the listing says why it has no summary) and is never taken for a running session."""
    with opened_session(tmp_path) as opened:
        opened.note()
        opened.proc.kill()
        wait_for(lambda: owner_of(opened.directory) is None, "the recorder to end")
        (listing,) = list_sessions(opened.home / "sessions")
        assert listing.meta is None and "meta.json does not exist" in listing.problem
        assert listed_meta(listing) is None


def test_a_damaged_meta_json_is_listed_from_the_streams_only_when_asked(tmp_path):
    """``sessions list`` lists a session whose meta.json is damaged as unreadable, with why; the web UI asks
    (``from_streams``) for what its streams hold, as ``sessions show`` shows it. Read, nothing written."""
    import os
    from functools import partial

    from otel_agents.persistence.listed import listed_sessions

    with held_run(tmp_path) as (home, directory):
        pass
    title = list_sessions(home / "sessions")[0].meta["title"]
    os.truncate(directory / "meta.json", 100)
    (listing,) = list_sessions(home / "sessions")
    assert listing.meta is None and "not valid JSON" in listing.problem
    before = snapshot(home)
    assert listed_meta(listing) is None and listed_sessions(home / "sessions") == [listing]
    meta = listed_meta(listing, from_streams=True)
    assert (meta["status"], meta["runs"], meta["title"]) == ("ok", 1, title) and meta["totals"]["llm_calls"] == 2
    assert meta["created"] <= meta["updated"]
    (ui_listing,) = listed_sessions(home / "sessions", partial(listed_meta, from_streams=True))
    assert ui_listing.meta == meta and ui_listing.problem == listing.problem  # still says what is wrong
    assert snapshot(home) == before


def test_a_session_killed_holding_only_its_lock_is_listed_new_not_unreadable(tmp_path):
    """kill -9 between taking a new session's lock and its first span leaves the lock alone: a session
    with no runs, listed ``new`` (created as the lock was taken), not unreadable. Read, nothing written."""
    from otel_agents.persistence.listed import listed_sessions
    from otel_agents.persistence.ownership import take

    directory = tmp_path / "sessions" / "20261129-102604-83bae3"
    take(directory, create=True).release()
    before = snapshot(tmp_path)
    (listing,) = listed_sessions(tmp_path / "sessions")
    assert snapshot(tmp_path) == before
    assert listing.problem is None
    assert (listing.meta["status"], listing.meta["runs"], listing.meta["agents"]) == ("new", 0, 0)
    assert parse_iso_ts(listing.meta["created"]) == (directory / "owner.lock").stat().st_mtime_ns
