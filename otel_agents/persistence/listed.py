"""What a listing (``sessions list``, the web UI's list) says of each session: meta.json, or what its journal holds.

meta.json is written as a run begins and again at its end: while a run is open, or after its
writer was killed mid-run, it lacks what the run did, so the session's tree is read (read-only,
``saved.load_saved``) to say it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from otel_agents.persistence.notices import Warn
from otel_agents.persistence.ownership import owner_of
from otel_agents.persistence.saved import SessionUnreadable, load_saved, reader_meta
from otel_agents.persistence.session_meta import make_meta, writer_died
from otel_agents.persistence.store import SessionListing

SO_FAR_KEYS = ("title", "runs", "agents", "totals")  # of meta.json, as of the open run's start while it runs


def listed_meta(listing: SessionListing, warn: Warn = lambda _: None) -> dict[str, Any] | None:
    """``listing.meta`` as ``reader_meta`` has it: a killed writer's session is read (its tree only) to
    say what it holds, and so is one whose run is in progress (``so_far_meta``); a session that cannot
    be read keeps meta.json's word."""
    meta = listing.meta
    died = writer_died(meta, listing.directory)
    if not died and not running_now(meta, listing.directory):
        return meta
    try:
        loaded = load_saved(listing.directory, warn, tree_only=True)
    except (SessionUnreadable, OSError):
        return meta
    return reader_meta(meta, loaded.tree, listing.directory) if died else so_far_meta(meta, loaded.tree)


def running_now(meta: Mapping[str, Any] | None, directory: Path) -> bool:
    """meta.json says a run is open (its writer says ``running`` only then) and a process holds the session."""
    return meta is not None and meta.get("status") == "running" and owner_of(directory) is not None


def so_far_meta(meta: dict[str, Any] | None, tree: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A running session's meta.json with what its journal holds so far: the writer wrote meta.json as the
    run began (its totals, a first run's $0 and no title, lack the run) and writes it again only at its end."""
    if meta is None or tree is None:
        return meta
    now = make_meta(tree, created_ns=0, updated_ns=0, running=True)
    return {**meta, **{key: now[key] for key in SO_FAR_KEYS}}
