"""Loaded sessions are reused while their files are unchanged and loaded again after any change."""

from __future__ import annotations

import os
import threading

import pytest

from otel_agents.ui import loaded
from otel_agents.ui.loaded import SessionCache
from otel_agents.ui.security import ApiError


def test_reused_while_unchanged_and_reloaded_after_an_append(own_home):
    cache = SessionCache(own_home.sessions)
    first = cache.get(own_home.demo)
    assert cache.get(own_home.demo) is first
    events = own_home.sessions / own_home.demo / "events.jsonl"
    with open(events, "ab") as fh:
        fh.write(b"")  # an empty write changes nothing
    assert cache.get(own_home.demo) is first
    stat = events.stat()
    os.utime(events, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    second = cache.get(own_home.demo)
    assert second is not first and second.index.top == first.index.top


def test_concurrent_requests_load_a_session_once(own_home, monkeypatch):
    cache = SessionCache(own_home.sessions)
    calls = []
    original = cache._load

    def counting(*args):
        calls.append(args[0])
        return original(*args)

    monkeypatch.setattr(cache, "_load", counting)
    got = []
    threads = [threading.Thread(target=lambda: got.append(cache.get(own_home.demo))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [own_home.demo] and len({id(g) for g in got}) == 1


def test_only_a_few_sessions_stay_decoded(own_home, monkeypatch):
    monkeypatch.setattr(loaded, "KEEP", 2)
    cache = SessionCache(own_home.sessions)
    first = cache.get(own_home.demo)
    for seed in own_home.seeds[:2]:
        cache.get(seed)
    assert cache.get(own_home.demo) is not first  # evicted, loaded again


def test_unknown_and_malformed(own_home):
    cache = SessionCache(own_home.sessions)
    with pytest.raises(ApiError) as unknown:
        cache.get("not-there")
    with pytest.raises(ApiError) as malformed:
        cache.get("../etc")
    assert (unknown.value.status, malformed.value.status) == (404, 400)


def test_an_unreadable_session_is_a_one_line_422(own_home):
    broken = own_home.sessions / "broken"
    broken.mkdir()
    (broken / "events.jsonl").write_bytes(b"not json\n")
    with pytest.raises(ApiError) as caught:
        SessionCache(own_home.sessions).get("broken")
    assert caught.value.status == 422 and "\n" not in caught.value.message


def test_without_a_journal_the_tree_is_the_one_load_saved_gives(own_home):
    from otel_agents.persistence.saved import load_saved

    directory = own_home.sessions / own_home.demo
    (directory / "spans.jsonl").unlink()
    (directory / "meta.json").unlink()
    ours = SessionCache(own_home.sessions).get(own_home.demo)
    assert ours.tree == load_saved(directory, lambda _: None).tree
    assert len(ours.index.entries) > 30 and ours.meta["status"] == "ok"  # as the tree says: see test_sessions_api


class SteppingClock:
    """A clock that moves on by ``step`` at each reading, or jumps when told."""

    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_a_session_being_written_is_read_for_the_list_at_most_once_per_ten_reads_time(tmp_path):
    from otel_agents.persistence.store import list_sessions
    from support.held_sessions import held_run

    with held_run(tmp_path) as (home, directory):
        clock = SteppingClock(step=0.5)  # each read "takes" 0.5 s: read again no sooner than 5 s later
        cache = SessionCache(home / "sessions", clock=clock)
        (listing,) = list_sessions(home / "sessions")
        first = cache.listed_meta(listing)
        assert first["status"] == "running"
        journal = directory / "spans.jsonl"
        stat = journal.stat()
        os.utime(journal, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # written meanwhile
        assert cache.listed_meta(listing) is first  # 1 s after the last read: too soon
        clock.now += 10
        second = cache.listed_meta(listing)
        assert second is not first and second == first  # read again (nothing new was said, only touched)
