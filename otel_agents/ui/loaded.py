"""Loaded sessions kept in memory while their files are unchanged, so paging a large tree reads it once.

A session is read by ``persistence.saved.load_saved`` (read-only: no lock taken, no repair; only
its tree and meta.json, so a session without a journal is not made to read all of events.jsonl)
and keyed by the (size, mtime) of its files plus whether a writer holds it: the first
request after any change loads it again, every other request reuses the decoded tree.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from otel_agents.persistence.ownership import owner_of
from otel_agents.persistence.paths import InvalidSessionId, Paths
from otel_agents.persistence.events_file import EVENTS_FILE
from otel_agents.persistence.journal import JOURNAL_FILE
from otel_agents.persistence.listed import as_listed, listed_meta, must_read, opening_now
from otel_agents.persistence.saved import SessionUnreadable, load_saved
from otel_agents.persistence.store import SessionListing, SessionStore, StoreError
from otel_agents.persistence.tree_file import TREE_FILE
from otel_agents.ui.node_index import NodeIndex, build_index
from otel_agents.ui.security import ApiError, check_session_id

WATCHED_FILES = ("meta.json", TREE_FILE, JOURNAL_FILE, EVENTS_FILE)
MEMO = 8  # view documents kept per loaded session (a dialog or perspective being paged)
KEEP = 4  # sessions kept decoded at once: a 100k-entry tree is hundreds of MB in memory
# A session being written changes at every span, and the list is asked for every 2 s: its summary is
# read again no sooner than this many times its last read took, so a large one costs the server at
# most a tenth of its time (a 1 s read: every 10 s), a small one is fresh at each request.
REREAD_AFTER_READS = 10


def stamp(directory: Path) -> tuple:
    """What changes whenever a writer touches the session, or stops holding it."""
    out: list[Any] = []
    for name in WATCHED_FILES:
        try:
            st = (directory / name).stat()
            out.append((st.st_size, st.st_mtime_ns))
        except OSError:
            out.append(None)
    out.append(owner_of(directory) is not None)
    return tuple(out)


@dataclass
class UiSession:
    """One session as the API reads it: the load, its node rows, and (on first use) its views."""

    session_id: str
    directory: Path
    key: tuple
    tree: dict[str, Any] | None
    meta: dict[str, Any] | None
    live: bool
    index: NodeIndex
    notes: list[str]
    _viewer: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _memo: OrderedDict = field(default_factory=OrderedDict)

    @property
    def cursor(self) -> str:
        """Where ``/live`` may start to miss nothing this load did not see: the journal's and the event
        stream's sizes as stamped before the files were read (a later line is then replayed, never lost)."""
        spans, events = (part[0] if isinstance(part, tuple) else 0 for part in self.key[2:4])
        return f"{spans}.{events}"

    def memo(self, key: tuple, build):
        """``build()``, kept for this load of the session (the last few keys): pages of one view share it."""
        with self._lock:
            if key in self._memo:
                self._memo.move_to_end(key)
                return self._memo[key]
        value = build()
        with self._lock:
            self._memo[key] = value
            while len(self._memo) > MEMO:
                self._memo.popitem(last=False)
        return value

    def viewer(self):
        """The views' ``SessionViewer`` of this directory, as ``otel-agents view`` opens it (no index cache file)."""
        from otel_agents.views import SessionViewer, ViewError

        with self._lock:
            if self._viewer is None:
                try:
                    self._viewer = SessionViewer.from_session_dir(self.directory, warn=self.notes.append)
                except ViewError as exc:
                    raise ApiError(422, str(exc)) from None
            return self._viewer


@dataclass(frozen=True)
class _Listed:
    key: tuple  # the session's stamp when read
    meta: dict[str, Any] | None
    read_at: float  # the cache's clock when the read ended
    took: float  # seconds the read took


def _meta_problem(directory: Path) -> str:
    """Why meta.json could not be read, as ``sessions list`` says it."""
    try:
        SessionStore(directory).read_meta()
    except StoreError as exc:
        return str(exc)
    return f"{directory / 'meta.json'} could not be read"  # it changed since: the next load reads it


class SessionCache:
    def __init__(self, sessions_dir: Path, clock: Any = time.monotonic):
        self.clock = clock
        self.paths = Paths(Path(sessions_dir), Path("/dev/null"))
        self._sessions: OrderedDict[str, UiSession] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Lock] = {}
        self._listed: dict[str, _Listed] = {}

    def directory(self, session_id: str) -> Path:
        """The session's directory: 400 for a malformed id, 404 for an unknown one."""
        check_session_id(session_id)
        try:
            directory = self.paths.session_dir(session_id)
        except InvalidSessionId as exc:
            raise ApiError(400, str(exc)) from None
        if not directory.is_dir():
            raise ApiError(404, f"no session {session_id!r}")
        return directory

    def get(self, session_id: str) -> UiSession:
        directory = self.directory(session_id)
        with self._lock:
            loading = self._loading.setdefault(session_id, threading.Lock())
        with loading:  # two requests for a changed session load it once
            key = stamp(directory)
            with self._lock:
                held = self._sessions.get(session_id)
                if held is not None and held.key == key:
                    self._sessions.move_to_end(session_id)
                    return held
            loaded = self._load(session_id, directory, key)
            with self._lock:
                self._sessions[session_id] = loaded
                self._sessions.move_to_end(session_id)
                while len(self._sessions) > KEEP:
                    self._sessions.popitem(last=False)
            return loaded

    def _load(self, session_id: str, directory: Path, key: tuple) -> UiSession:
        from otel_agents.persistence.gc_pause import collector_paused

        notes: list[str] = []
        with collector_paused():  # a decoded tree is many acyclic objects: see gc_pause.py
            try:
                saved = load_saved(directory, notes.append, tree_only=True)
                tree, meta = saved.tree, saved.meta
            except SessionUnreadable as exc:
                if not opening_now(None, directory):
                    raise ApiError(422, str(exc)) from None
                tree, meta = None, None  # a new session, its lock alone saved: running, nothing in it yet
            index = build_index(tree or {})
        live = key[-1]
        if meta is None and not opening_now(None, directory):
            notes.append(_meta_problem(directory) + ("; its status and summary are what its streams hold"
                                                     if tree is not None else ""))
        # meta.json lags a killed writer's, a running and a new session: listed as `sessions list` lists them.
        return UiSession(session_id, directory, key, tree, as_listed(meta, tree, directory), live, index, notes)

    def listed_meta(self, listing: SessionListing) -> dict[str, Any] | None:
        """``listing.meta`` as the session's detail has it (``listed.listed_meta``). A session whose meta.json
        lags (killed, running, new) is read once per change of its files (the list is asked for every 2 s), or
        taken from its load here; while it is being written, no sooner than ``REREAD_AFTER_READS`` times
        its last read took. One without a readable meta.json is read too: its streams say what it is."""
        if not must_read(listing.meta, listing.directory) and listing.meta is not None:
            return listing.meta
        key = stamp(listing.directory)
        with self._lock:
            held = self._sessions.get(listing.session_id)
            if held is not None and held.key == key:
                return held.meta
            known = self._listed.get(listing.session_id)
            if known is not None and (known.key == key or self._too_soon(known, key)):
                return known.meta
        started = self.clock()
        meta = listed_meta(listing, from_streams=True)
        ended = self.clock()
        with self._lock:
            self._listed[listing.session_id] = _Listed(key, meta, ended, ended - started)  # small: one per session
        return meta

    def _too_soon(self, known: _Listed, key: tuple) -> bool:
        """Whether a session still being written (as when last read) was read too recently to read again."""
        written = key[-1] and known.key[-1]
        return bool(written) and self.clock() - known.read_at < REREAD_AFTER_READS * known.took

