"""What a listing (``sessions list``, the web UI's list) says of each session: meta.json, or what its journal holds.

meta.json is written as a run begins and again at its end, and not at all before a new session's
first run begins: while a run is open, after its writer was killed mid-run, and while a live
session has none yet, it lacks what was done, so the session's tree is read (read-only,
``saved.load_saved``) to say it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable, Mapping

from otel_agents.persistence.notices import Warn
from otel_agents.persistence.ownership import LOCK_FILE, owner_of
from otel_agents.persistence.saved import SessionUnreadable, load_saved, no_run_recorded, reader_meta
from otel_agents.persistence.session_meta import closed_meta, make_meta, writer_died
from otel_agents.persistence.store import SessionListing, SessionStore, by_creation, list_sessions
from otel_agents.persistence.tree import build_tree

SO_FAR_KEYS = ("title", "runs", "agents", "totals")  # of meta.json, as of the open run's start while it runs


def listed_sessions(
    sessions_dir: Path, listed: Callable[[SessionListing], dict[str, Any] | None] | None = None,
) -> list[SessionListing]:
    """``store.list_sessions`` with each session's meta as ``listed`` (default ``listed_meta``) says it, oldest
    first by that: a new session listed from its journal is the newest, not last among the unreadable.
    A damaged or missing meta.json keeps its ``problem`` when listed from the streams; a new session's
    (none yet, as expected) has none."""
    listed = listed or listed_meta
    out = []
    for item in list_sessions(sessions_dir):
        meta = listed(item)
        if meta is not item.meta:
            new = opening_now(None, item.directory) or no_run_recorded(SessionStore(item.directory))
            problem = None if item.meta is not None or new else item.problem
            item = dataclasses.replace(item, meta=meta, problem=problem)
        out.append(item)
    return sorted(out, key=by_creation)


def must_read(meta: Mapping[str, Any] | None, directory: Path) -> bool:
    """Whether meta.json, as it is, lags what the session holds (``listed_meta`` then reads the tree)."""
    return writer_died(meta, directory) or running_now(meta, directory) or opening_now(meta, directory)


def listed_meta(
    listing: SessionListing, warn: Warn = lambda _: None, *, from_streams: bool = False,
) -> dict[str, Any] | None:
    """``listing.meta`` as readers should list it (``as_listed``): a session whose meta.json lags (``must_read``)
    is read (its tree only) to say what it holds; anything else is meta.json as it is. ``from_streams``
    (the web UI): one without a readable meta.json is read too, and listed as its streams say
    (``streams_meta``); ``sessions list`` lists it as unreadable, with why."""
    if not must_read(listing.meta, listing.directory) and not (from_streams and listing.meta is None) \
            and not (listing.meta is None and no_run_recorded(SessionStore(listing.directory))):
        return listing.meta  # a session stopped before its first span (its lock alone) is listed as new, not unreadable
    try:
        tree = load_saved(listing.directory, warn, tree_only=True).tree
    except (SessionUnreadable, OSError):
        tree = None  # nothing saved yet (a new session's lock alone), or damaged: meta.json's word, if any
    return as_listed(listing.meta, tree, listing.directory)


def as_listed(meta: dict[str, Any] | None, tree: Mapping[str, Any] | None, directory: Path) -> dict[str, Any] | None:
    """meta.json as listings and the UI's detail show it, given the tree read: a killed writer's as ``reader_meta``
    recovers it, a running session's with its totals so far (``so_far_meta``), a live one without meta.json
    from what it holds so far (``first_meta``), one whose meta.json is damaged or missing from its
    streams (``streams_meta``); else meta.json as it is."""
    if writer_died(meta, directory):
        return reader_meta(meta, tree, directory)
    if running_now(meta, directory):
        return so_far_meta(meta, tree)
    if opening_now(meta, directory):
        return first_meta(tree, directory)
    if meta is None and tree is not None:
        return streams_meta(tree, directory)
    return meta


def running_now(meta: Mapping[str, Any] | None, directory: Path) -> bool:
    """meta.json says a run is open (its writer says ``running`` only then) and a process holds the session."""
    return meta is not None and meta.get("status") == "running" and owner_of(directory) is not None


def opening_now(meta: Mapping[str, Any] | None, directory: Path) -> bool:
    """No meta.json yet (not a damaged one: that is said) and a process holds the session: its writer
    writes the first as its first run begins, so a new session is without one for its first seconds."""
    return meta is None and not SessionStore(directory).meta_path.exists() and owner_of(directory) is not None


def so_far_meta(meta: dict[str, Any] | None, tree: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A running session's meta.json with what its journal holds so far: the writer wrote meta.json as the
    run began (its totals, a first run's $0 and no title, lack the run) and writes it again only at its end."""
    if meta is None or tree is None:
        return meta
    now = make_meta(tree, created_ns=0, updated_ns=0, running=True)
    return {**meta, **{key: now[key] for key in SO_FAR_KEYS}}


def first_meta(tree: Mapping[str, Any] | None, directory: Path) -> dict[str, Any]:
    """The meta.json a live session without one would have now: what ``tree`` holds (nothing when None),
    ``running``, created when its owner took the lock and updated at its streams' last write."""
    store = SessionStore(directory)
    created = _mtime_ns(directory / LOCK_FILE) or _mtime_ns(directory)
    written = [_mtime_ns(path) for path in (store.journal_path, store.events_path)]
    meta = make_meta(tree if tree is not None else build_tree([], directory.name), created_ns=created,
                     updated_ns=max([created, *written]), running=True)
    owner = owner_of(directory) or {}
    # make_meta names this process, the reader; the writer is the lock's holder, as it announced itself.
    meta["writer"] = {key: owner[key] for key in ("pid", "host", "recorder") if key in owner} or None
    return meta


def streams_meta(tree: Mapping[str, Any], directory: Path) -> dict[str, Any]:
    """The meta.json a session whose own is damaged or missing would have now, from ``tree`` (read from its
    streams), never written: running while a process holds it (``first_meta``), else as ``sessions show``
    derives it (``closed_meta``: a run that never ended is interrupted), created at its first span and
    updated at its streams' last write."""
    if owner_of(directory) is not None:
        return first_meta(tree, directory)
    store = SessionStore(directory)
    # The lock's: a session stopped before its first span has no streams, and was created as it took it;
    # the directory's when it holds none of these (an empty one), not 1970.
    written = max([_mtime_ns(path) for path in (store.journal_path, store.events_path, directory / LOCK_FILE)]) \
        or _mtime_ns(directory)
    started = tree.get("started_ns")
    created = started if isinstance(started, int) and not isinstance(started, bool) else written
    return closed_meta(tree, created_ns=created, updated_ns=max(created, written))


def _mtime_ns(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0
