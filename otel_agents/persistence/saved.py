"""Reading a saved session directory: the one entry point (``load_saved``), with crash recovery in memory.

A session closed cleanly has a ``meta.json`` whose checkpoint mark says that
``tree.json.gz`` covers the journal and the event stream as they are on disk:
that checkpoint is read as it is (:func:`load_checkpoint`). Otherwise the tree is
rebuilt from the span journal (``spans.jsonl``) plus the event stream
(``events.jsonl``) whenever both are readable: both are flushed per line, so they
are always at least as complete as the last checkpoint. Spans that a dead writer
left open are shown interrupted (``interrupted.py``), in memory: readers never
write, and do not even import the code that does. The session's owner (``resume``,
``sessions repair``) loads with ``repair=True``: repair.py appends the interrupted
ends to the journal and writes the rebuilt tree back (atomically), with a mark, so
that the next load is the quick one. Without a usable journal the checkpoint stands
in, and without either, events.jsonl alone. tree.json.gz is decoded by tree_file.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from otel_agents.persistence.checkpoint_shortfall import (  # noqa: F401 (also imported from here)
    events_shortfall, journal_shortfall, short_events_problem, short_journal_problem,
)
from otel_agents.persistence.events_file import EventLine, EventsFileError, read_event_lines
from otel_agents.persistence.interrupted import close_interrupted
from otel_agents.persistence.journal import JournalError, read_journal, rebuild
from otel_agents.persistence.notices import Warn, stderr_warning
from otel_agents.persistence.ownership import LOCK_FILE, owner_of
from otel_agents.persistence.store import SessionStore, StoreError
from otel_agents.persistence.session_meta import checkpoint_is_current, closed_meta, writer_died
from otel_agents.persistence.timestamps import iso_ts
from otel_agents.persistence.torn_record import torn_record
from otel_agents.persistence.tree_file import TREE_FILE
from otel_agents.persistence.tree import build_tree
from otel_agents.persistence.tree_walk import iter_nodes, iter_records, records_of
from otel_agents.tracing.spandata import SpanData

SOURCE_CHECKPOINT = "checkpoint"  # tree.json.gz, known to cover spans.jsonl + events.jsonl
SOURCE_JOURNAL = "journal"  # spans.jsonl + events.jsonl
SOURCE_TREE = "tree"  # tree.json.gz (records from events.jsonl when readable)
SOURCE_EVENTS = "events"  # events.jsonl only: no tree
NO_RUN_NOTE = "no run was recorded (stopped before its first run started)"


class SessionUnreadable(ValueError):
    """Neither the journal, tree.json.gz nor events.jsonl can be read; the message says why (one line)."""


@dataclass(frozen=True)
class LoadedSession:
    """A saved session as read: what every reader (resume, views, sessions, billing, verify) starts from."""

    directory: Path
    tree: dict[str, Any] | None  # None: no journal and tree.json.gz is missing or unreadable
    records: list[dict[str, Any]]  # seed-001 records: events.jsonl, else the tree's
    meta: dict[str, Any] | None
    notes: list[str] = field(default_factory=list)  # what was missing or damaged
    spans: list[SpanData] | None = None  # the journal's spans (interrupted ones ended), when the tree was rebuilt
    source: str = SOURCE_TREE
    recovered: bool = False  # tree.json.gz (and meta.json) were rewritten from the journal (repair only)
    live: bool = False  # a process holds the session (its latest run may still be adding spans)
    interrupted: int = 0  # spans a dead writer left open, shown (or, repaired, recorded) as interrupted
    damaged: list[str] = field(default_factory=list)  # files that exist but could not be read whole
    interrupted_ends: tuple[SpanData, ...] = ()  # the ends readers show for those spans
    event_lines: list[EventLine] | None = None  # rebuilt from the journal: the lines, for a later repair.write_back
    torn_events: bytes | None = None  # a torn last line of events.jsonl, skipped (rebuilt from the journal)
    restored_event: EventLine | None = None  # that line's record, whole in tree.json.gz: read from there
    mended: tuple[str, ...] = ()  # what repair.write_back mended of the streams, one line each
    journal_lacks: int = 0  # spans tree.json.gz holds (or holds ended) that spans.jsonl lacks: a journal cut short
    events_lacks: int = 0  # records tree.json.gz holds that events.jsonl lacks: an event stream cut short

    @property
    def session_id(self) -> str:
        return self.directory.name

    @property
    def store(self) -> SessionStore:
        return SessionStore(self.directory)

    @property
    def events_path(self) -> Path:
        return self.store.events_path

    @property
    def journal_path(self) -> Path:
        return self.store.journal_path

    @property
    def billed(self) -> bool:
        """Every run is in the ledger it was run with: a current checkpoint whose meta.json says so
        (loading need not bill it again, nor read the ledger to find that out)."""
        return self.source == SOURCE_CHECKPOINT and bool(self.meta and self.meta.get("billed"))


def load_saved(
    session_dir: Path, warn: Warn = stderr_warning, *, repair: bool = False, records: bool = True,
    owned: bool = False, tree_only: bool = False,
) -> LoadedSession:
    """The tree and the event stream of a session directory; SessionUnreadable (one line) when nothing is.

    Preference: a checkpoint known to be current, else the journal with events.jsonl
    (always the most complete), else tree.json.gz, else events.jsonl alone; each
    fallback is said through ``warn``. ``owned``: the caller holds the session's lock
    (no other process writes it); otherwise whether one does is asked of the lock.
    ``repair`` (only with ``owned``): record the interrupted spans' ends in the journal
    and, when it shows more than tree.json.gz, rewrite tree.json.gz and meta.json from
    it. Without ``repair`` nothing is opened for writing. ``records=False``: a caller
    that needs only the tree (``sessions show``) gets no records from a current
    checkpoint, whose events.jsonl is then not read; every other path reads them, as
    rebuilding needs them. ``tree_only``: a caller that needs only the tree and meta.json
    (the web UI) also skips events.jsonl when there is no journal and tree.json.gz is
    readable: that tree is then taken as saved (what the full read gives, without records),
    sparing a large session's every event line; anything else falls back as without it.
    """
    if repair and not owned:
        raise ValueError("only the session's owner repairs it: load with owned=True while holding its lock")
    store = SessionStore(Path(session_dir))
    current = load_checkpoint(store.directory, warn, records=records and not tree_only)
    if current is not None:
        return current
    live = not owned and owner_of(store.directory) is not None
    if tree_only and not repair:
        saved_tree = _tree_as_saved(store, warn, live)
        if saved_tree is not None:
            return saved_tree
    if no_run_recorded(store):
        return LoadedSession(store.directory, build_tree([], store.session_id), [], _read_meta(store), [NO_RUN_NOTE],
                             spans=[], source=SOURCE_JOURNAL, live=live)  # nothing to repair: no event_lines
    notes: list[str] = []
    damaged: list[str] = []
    # Read before the streams: a live writer appends to them before it checkpoints, so a checkpoint
    # read first never holds what the streams read after it lack (unless they were cut short).
    saved_tree, tree_error = _checkpoint_as_saved(store)
    lines: list[EventLine] | None = None
    torn: list[bytes] = []
    if store.events_path.exists():
        try:
            lines = read_event_lines(store.events_path, warn, torn)
        except (EventsFileError, OSError) as exc:
            notes.append(str(exc))
            damaged.append(str(exc))
    else:
        notes.append(f"{store.events_path} does not exist")
    restored = _torn_record(store, saved_tree, torn[0], lines, warn) if torn and lines is not None else None
    if restored is not None:
        lines.append(restored)  # where its line was: the torn one is the last
    meta = _read_meta(store)

    rebuilt = None
    lacks = events_lacks = 0
    if lines is not None and saved_tree is not None and saved_tree.get("id") == store.session_id:
        events_lacks = events_shortfall(saved_tree, lines)
    if events_lacks:
        # As for a journal cut short (below): the checkpoint is the most complete, and what the owner
        # would append to the stream after it would make the history it lacks lost for good.
        problem = short_events_problem(store, events_lacks)
        notes.append(problem)
        if owned:
            damaged.append(problem)  # said by the owner's refusal
        else:
            warn(f"{problem}; using tree.json.gz")
    elif not store.journal_path.exists():
        notes.append(f"{store.journal_path} does not exist")
    elif lines is None and store.events_path.exists():
        notes.append(f"{store.journal_path} cannot be used without its events.jsonl")
    else:
        try:
            rebuilt = rebuild(read_journal(store.journal_path, warn), lines or [])
            spans, interrupted = close_interrupted(rebuilt.spans, live=live)
            rebuilt_tree = build_tree(spans, store.session_id)
        except (JournalError, OSError) as exc:
            notes.append(str(exc))
            damaged.append(str(exc))
            rebuilt = None
        except (ValueError, TypeError, LookupError, AttributeError) as exc:  # values no span of ours could have
            problem = f"{store.journal_path} holds spans that cannot be put in a tree ({type(exc).__name__}: {exc})"
            notes.append(problem)
            damaged.append(problem)
            rebuilt = None
    if rebuilt is not None and saved_tree is not None and saved_tree.get("id") == store.session_id:
        lacks = journal_shortfall(saved_tree, rebuilt.spans)  # another session's checkpoint contradicts, said elsewhere
        if lacks:
            # The checkpoint is then the most complete: the journal's tree would hide what it holds, and
            # its open spans (ended in the checkpoint) must not be recorded as interrupted. The owner's
            # writes (resume, repair) would do just that: for them it is damage.
            problem = short_journal_problem(store, lacks)
            notes.append(problem)
            if owned:
                damaged.append(problem)
            rebuilt = None

    if rebuilt is not None and (lines is not None or not store.tree_path.exists()):
        if rebuilt.orphans:
            warn(
                f"{len(rebuilt.orphans)} record(s) of {store.events_path} name spans that are not in "
                f"{store.journal_path}; they are in the event stream but not in the tree"
            )
        loaded = LoadedSession(
            store.directory, rebuilt_tree, [line.record for line in lines or []], meta, notes, spans=spans,
            source=SOURCE_JOURNAL, live=live, interrupted=len(interrupted), damaged=damaged,
            interrupted_ends=tuple(interrupted), event_lines=lines or [],
            torn_events=torn[0] if torn and lines is not None else None, restored_event=restored,
        )
        if repair:
            from otel_agents.persistence.repair import write_back  # the owner's writes: readers never import them

            return write_back(loaded, lines or [], warn)
        if tree_error is not None and store.tree_path.exists():  # said to readers too: a repair would replace it
            notes.append(str(tree_error))
            warn(f"{tree_error}; using the tree rebuilt from spans.jsonl and events.jsonl")
        return loaded

    tree = saved_tree
    if tree_error is not None:
        notes.append(str(tree_error))
        if store.tree_path.exists():
            damaged.append(str(tree_error))
    if tree is not None and not events_lacks:  # that said above
        why = next((n for n in notes if "spans.jsonl" in n), "the journal cannot be used")
        warn(f"{why}; using tree.json.gz (spans that ended after its last checkpoint may be missing)")
    found = dict(meta=meta, notes=notes, live=live, damaged=damaged, journal_lacks=lacks, events_lacks=events_lacks)
    if events_lacks:
        return LoadedSession(store.directory, tree, records_of(tree), source=SOURCE_TREE, **found)
    if lines is None:
        if tree is None:
            raise SessionUnreadable(f"session {store.session_id} cannot be read: " + "; ".join(notes))
        warn(f"{_first(notes, 'events.jsonl')}; using the records held in tree.json.gz")
        return LoadedSession(store.directory, tree, records_of(tree), source=SOURCE_TREE, **found)
    line_records = [line.record for line in lines]
    if tree is None:
        warn(f"{_first(notes, TREE_FILE)}; using events.jsonl only (no timings, accounting or logs)")
        return LoadedSession(store.directory, None, line_records, source=SOURCE_EVENTS, **found)
    return LoadedSession(store.directory, tree, line_records, source=SOURCE_TREE, **found)


def load_checkpoint(
    session_dir: Path, warn: Warn = stderr_warning, *, tree: bool = True, records: bool = True
) -> LoadedSession | None:
    """The quick load: records from events.jsonl, tree.json.gz decoded once; None if it does not apply.

    It applies while meta.json's checkpoint mark holds (``session_meta.checkpoint_is_current``):
    then nothing needs rebuilding or repairing. ``tree=False`` leaves the tree unread
    (None) for a caller that needs only the records and meta.json (resume);
    ``records=False`` leaves events.jsonl unread (no records) for one that needs only
    the tree.
    """
    store = SessionStore(Path(session_dir))
    meta = _read_meta(store)
    if not checkpoint_is_current(store, meta):
        return None
    try:
        lines = read_event_lines(store.events_path, warn) if records else []
        saved_tree = store.load_tree() if tree else None
    except (EventsFileError, StoreError, OSError):
        return None  # the careful path says what is wrong
    return LoadedSession(store.directory, saved_tree, [line.record for line in lines], meta, source=SOURCE_CHECKPOINT)


def _tree_as_saved(store: SessionStore, warn: Warn, live: bool) -> LoadedSession | None:
    """tree.json.gz as the full read would fall back to it when there is no journal, without reading
    events.jsonl; None when that does not apply (a journal, or no readable tree: the full read says why)."""
    if store.journal_path.exists():
        return None
    try:
        tree = store.load_tree()
    except StoreError:
        return None
    notes = [f"{store.journal_path} does not exist"]
    warn(f"{notes[0]}; using tree.json.gz (spans that ended after its last checkpoint may be missing)")
    return LoadedSession(store.directory, tree, [], _read_meta(store), notes, source=SOURCE_TREE, live=live)


def _checkpoint_as_saved(store: SessionStore) -> tuple[dict[str, Any] | None, StoreError | None]:
    """tree.json.gz decoded, or why not (missing too)."""
    try:
        return store.load_tree(), None
    except StoreError as exc:
        return None, exc


RECOVERED_KEYS = ("title", "updated", "runs", "agents", "totals")  # of meta.json, stale after a kill mid-run


def reader_meta(
    meta: dict[str, Any] | None, tree: Mapping[str, Any] | None, directory: Path,
) -> dict[str, Any] | None:
    """meta.json as readers should summarise the session, given the tree they loaded.

    A writer killed mid-run last wrote meta.json as the run began: its title, runs, agents and totals
    are then those of ``tree`` (recovered from the journal) as ``sessions repair`` would write them,
    and ``updated`` is the journal's last write. The rest stays (the status is read as
    ``session_meta.effective_status`` says). Anything else is meta.json as it is.
    """
    if tree is None or not writer_died(meta, directory):
        return meta
    store = SessionStore(directory)
    written = [p.stat().st_mtime_ns for p in (store.journal_path, store.events_path) if p.exists()]
    closed = closed_meta(tree, created_ns=0, updated_ns=max(written, default=0))
    return {**meta, **{key: closed[key] for key in RECOVERED_KEYS}}


def _torn_record(
    store: SessionStore, saved: dict[str, Any] | None, fragment: bytes, lines: list[EventLine], warn: Warn,
) -> EventLine | None:
    """The record of events.jsonl's torn last line, when tree.json.gz (``saved``, None when missing or damaged:
    said where the tree is used) holds it whole (in memory: readers never write; the owner's repair mends the
    file). Without it the rebuilt tree would lose a record the checkpoint has, and contradict it."""
    line = torn_record(fragment, saved, lines)
    if line is not None:
        warn(f"{store.events_path}: the torn last line is record {line.record.get('message_id')}, "
             f"which {TREE_FILE} holds whole: read from there")
    return line


def no_run_recorded(store: SessionStore) -> bool:
    """A session stopped (or killed) before its first span: its start made its directory, took the lock (and,
    stopped cleanly, wrote meta.json), nothing else; killed between the first two, the directory is empty.
    It reads as a session with no runs, which resume carries on; a directory holding other files and neither
    of these is no session of ours and stays unreadable, and so does one whose meta.json counts runs (their
    files are gone: damage, not a new session) or cannot be read."""
    if any(path.exists() for path in (store.events_path, store.journal_path, store.tree_path)):
        return False
    if not store.meta_path.exists():
        return (store.directory / LOCK_FILE).exists() or next(store.directory.iterdir(), None) is None
    meta = _read_meta(store)
    return meta is not None and not meta.get("runs")


def _first(notes: list[str], about: str) -> str:
    return next((n for n in notes if about in n), notes[-1] if notes else about)


def _read_meta(store: SessionStore) -> dict[str, Any] | None:
    try:
        return store.read_meta()
    except StoreError:
        return None


def checkpoint_contradiction(saved: Mapping[str, Any], rebuilt: Mapping[str, Any], lines: list[EventLine]) -> str | None:
    """Why a checkpoint is not merely an earlier state of the rebuilt tree (None: it is).

    An earlier state holds only records that events.jsonl holds identically (same
    content, span and time), and only spans the journal holds: those it shows
    ended exactly as rebuilt (an ended span's subtree is complete), the others
    with the same start.
    """
    if saved.get("id") != rebuilt.get("id"):
        return f"tree.json.gz names session {saved.get('id')!r}, not {rebuilt.get('id')!r} (its directory's name)"
    by_id = {line.record.get("message_id"): line for line in lines}
    for ref in iter_records(saved):
        mid = ref.record.get("message_id")
        line = by_id.get(mid)
        if line is None:
            return f"record {mid} of tree.json.gz is not in events.jsonl"
        if line.record != ref.record or line.span_id != ref.span_id or line.ts != iso_ts(ref.ts_ns):
            return f"record {mid} of tree.json.gz contradicts events.jsonl"
    # A sub-agent's operation node and its session node share the span id: keyed apart.
    nodes = {(node["span_id"], "session" in node): node for _, node in iter_nodes(rebuilt)}
    # Whether a saved node equals its rebuilt one, subtree included: children are met first,
    # so a node is compared alone and its children by their answers (no deep ``==``).
    same: dict[int, bool] = {}
    for _, node in reversed(list(iter_nodes(saved))):  # innermost first: the message names the span itself
        mine = nodes.get((node["span_id"], "session" in node))
        what = f"span {node['span_id']} ({node.get('name')}) of tree.json.gz"
        if mine is None:
            return f"{what} is not in spans.jsonl"
        same[id(node)] = _same_node(node, mine, same, nodes)
        if node.get("ended_ns") is not None:
            if not same[id(node)]:
                return f"{what} differs from spans.jsonl"
        elif (mine.get("started_ns"), mine.get("name")) != (node.get("started_ns"), node.get("name")):
            return f"{what} started otherwise in spans.jsonl"
    return None


def _same_node(saved: Mapping[str, Any], mine: Mapping[str, Any], same: dict[int, bool], nodes: Mapping) -> bool:
    """``saved == mine``, given ``same`` for each of saved's children and ``nodes`` matching them to mine's."""
    if saved.keys() != mine.keys():
        return False
    for key, value in saved.items():
        other = mine[key]
        if key in ("ops", "turns", "session") and value is not None:
            children = value if key != "session" else [value]
            theirs = other if key != "session" else [other]
            if not isinstance(children, list) or not isinstance(theirs, list) or len(children) != len(theirs):
                return False
            for child, their in zip(children, theirs):
                if not same.get(id(child)) or nodes.get((child["span_id"], "session" in child)) is not their:
                    return False
        elif value != other:
            return False
    return True
