"""Recovering a session its writer left unfinished: the one place, besides the recorder, that rewrites it.

Run by the session's owner (the caller holds its lock, ownership.py), through
``saved.load_saved(..., owned=True, repair=True)`` (resume) or :func:`repair_session`
(``sessions repair``): the ends of spans the dead writer left open are recorded as
interrupted, tree.json.gz and meta.json are rewritten from the journal when they are
behind it, and the runs not yet billed are billed once (ledger record ids make that
idempotent). A journal shorter than its checkpoint (cut short, or restored from an older
copy) is not repaired: its open spans ended in the checkpoint, so nothing is written; nor
is an events.jsonl lacking records the checkpoint holds.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Mapping

from otel_agents.persistence.events_file import EventLine, repair_torn_tail
from otel_agents.persistence.journal import JournalWriter
from otel_agents.persistence.ledger_records import ledger_records
from otel_agents.persistence.notices import Warn
from otel_agents.persistence.saved import LoadedSession, checkpoint_contradiction, load_saved
from otel_agents.persistence.store import SessionStore, StoreError
from otel_agents.persistence.session_meta import (
    AWAITING_TRACE, checkpoint_is_current, checkpoint_mark, closed_meta, created_ns_of,
)
from otel_agents.persistence.torn_record import line_bytes
from otel_agents.persistence.tree_file import make_payload
from otel_agents.persistence.tree_flat import trees_equal
from otel_agents.persistence.tree_kinds import STATUS_IN_PROGRESS
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.spandata import SpanData


def repair_session(directory: Path, billing_file: Path, warn: Warn) -> list[str]:
    """What was changed, one line each (empty: nothing needed it). ValueError (one line) if unreadable."""
    loaded = load_saved(directory, warn, owned=True, repair=True)
    if loaded.journal_lacks:
        # Its open spans ended in the checkpoint: recorded as interrupted they would be a false history.
        raise ValueError(f"{loaded.damaged[0]}; nothing was changed (restore spans.jsonl from a whole copy)")
    if loaded.events_lacks:
        # Not rebuilt from the tree either: its records' order in the stream is not known for certain.
        raise ValueError(f"{loaded.damaged[0]}; nothing was changed (restore events.jsonl from a whole copy)")
    if loaded.damaged:
        raise ValueError(loaded.damaged[0])
    changes = list(loaded.mended)
    if loaded.interrupted:
        changes.append(f"recorded {loaded.interrupted} span(s) left open as interrupted in spans.jsonl")
    if loaded.recovered:
        changes.append("rewrote tree.json.gz and meta.json from spans.jsonl and events.jsonl")
    billed = bill_unbilled(loaded, Path(billing_file))
    if billed:
        changes.append(f"billed {billed} ledger record(s) of runs that had not been billed")
    return changes


def bill_unbilled(loaded: LoadedSession, billing_file: Path) -> int:
    """Bill the runs a session's ledger lacks and mark meta.json ``billed``; the records appended.

    Nothing is read or written for a session already marked billed, or without a tree.
    """
    if loaded.tree is None or loaded.billed:
        return 0
    billed = flush_unbilled(loaded.tree, Path(billing_file))
    mark_billed(loaded.directory, loaded.meta)
    return billed


def write_back(loaded: LoadedSession, lines: list[EventLine] | None, warn: Warn) -> LoadedSession:
    """``load_saved(repair=True)``'s writes, on a session rebuilt from its journal: ``loaded`` as it now stands.

    The owner may also make them later, still holding the lock, from what ``load_saved(owned=True)`` gave
    (``lines`` None: ``loaded.event_lines``): resume does, once its checks have passed."""
    lines = (loaded.event_lines or []) if lines is None else lines
    store = SessionStore(loaded.directory)
    # Before the checkpoint's mark is taken: a mark over a torn tail made the next writer cut it (and warn).
    mended = _mend_events_tail(store, loaded)
    if loaded.interrupted_ends:
        _record_interrupted(store, list(loaded.interrupted_ends))
    return replace(_rewrite_checkpoint(store, loaded, lines, warn), mended=tuple(mended))


def _mend_events_tail(store: SessionStore, loaded: LoadedSession) -> list[str]:
    """events.jsonl's torn last line made whole again from tree.json.gz (as loaded read it), else cut off."""
    fragment = loaded.torn_events
    if fragment is None:
        return []
    path = store.events_path
    restored = loaded.restored_event
    if restored is not None:
        with open(path, "rb") as handle:
            handle.seek(-len(fragment), os.SEEK_END)
            still_torn = handle.read() == fragment  # as loaded: the owner holds the lock
        if still_torn:
            with open(path, "ab") as handle:
                # Only the rest is appended: a crash now leaves a longer start of the same line, mended alike.
                handle.write(line_bytes(restored)[len(fragment):])
                handle.flush()
                os.fsync(handle.fileno())
            return [f"restored record {restored.record.get('message_id')} in events.jsonl from tree.json.gz "
                    "(its line was torn)"]
    cut = repair_torn_tail(path)
    return [f"removed a torn last line of events.jsonl ({cut} bytes) that no checkpoint holds"] if cut else []


def _record_interrupted(store: SessionStore, ended: list[SpanData]) -> None:
    """Append the ends readers showed for spans a dead writer left open: the journal then says it."""
    writer = JournalWriter(store.journal_path)
    try:
        for span in ended:
            # The open span as its start line wrote it: only what the end adds is written.
            started = replace(span, end_ns=None, attributes={k: v for k, v in span.attributes.items()
                                                             if k != sc.INTERRUPTED},
                              status="UNSET", status_message=None)
            writer.end(span, started)
    finally:
        writer.close()


def _rewrite_checkpoint(store: SessionStore, loaded: LoadedSession, lines: list[EventLine], warn: Warn) -> LoadedSession:
    """Write the rebuilt tree back when tree.json.gz is behind (a writer died after its last checkpoint).

    Only a checkpoint that is missing, or consistent with the streams and merely
    behind them, is replaced: a damaged one or one that contradicts them is left
    for a person to look at (``sessions verify`` names the differences).
    """
    tree = loaded.tree
    assert tree is not None
    saved = None
    if store.tree_path.exists():
        try:
            saved = store.load_tree()
        except StoreError as exc:
            warn(f"{exc}; using the tree rebuilt from spans.jsonl and events.jsonl (the damaged file is left as is)")
            return loaded
    differs = not trees_equal(saved, tree)  # once: at 100k entries an equal pair takes a walk of both trees
    if saved is not None and differs:
        problem = checkpoint_contradiction(saved, tree, lines)
        if problem is not None:
            loaded.notes.append(problem)
            warn(f"session {store.session_id}: {problem}; tree.json.gz is left as is")
            return loaded
    meta = loaded.meta
    behind = differs or (meta is not None and meta.get("status") == "running")
    created = created_ns_of(meta) or tree.get("started_ns") or time.time_ns()
    new_meta = closed_meta(tree, created_ns=created, updated_ns=time.time_ns())
    if not behind and meta is not None and isinstance(meta.get("updated"), str):
        new_meta["updated"] = meta["updated"]  # only the mark is new: the session itself did not change
    try:
        if differs:
            store.save_tree(make_payload(tree, new_meta))
        new_meta["checkpoint"] = checkpoint_mark(store)  # the next load takes the checkpoint as it is
        store.write_meta(new_meta)
    except (OSError, StoreError) as exc:
        loaded.notes.append(f"cannot rewrite {store.tree_path}: {exc}")
        warn(f"session {store.session_id}: tree.json.gz is behind spans.jsonl and cannot be rewritten ({exc}); "
             "using the tree rebuilt from the journal")
        return loaded
    if differs:
        warn(f"session {store.session_id}: recovered from spans.jsonl what its last checkpoint lacked "
             "(the writer stopped early); tree.json.gz is rewritten")
    return replace(loaded, meta=new_meta, recovered=behind)


def flush_unbilled(
    tree: Mapping[str, Any],
    billing_file: Path,
    *,
    live: bool = False,
    append: Callable[[Path, list[dict]], int] | None = None,
) -> int:
    """Append the ledger records of every run of a session (``live``: but those still in progress).

    Called by the session's owner (resume, repair). Record ids are stable and the
    ledger skips ids it holds, so this is idempotent: finished runs add nothing,
    crashed runs are billed once.
    """
    if live:
        runs = [r["index"] for r in tree.get("runs", []) if r["status"] != STATUS_IN_PROGRESS]
    else:
        runs = [r["index"] for r in tree.get("runs", [])]
    records = ledger_records(tree, runs=runs)
    if not records:
        return 0
    if append is None:
        from otel_agents.persistence.ledger import append_records as append
    return append(Path(billing_file), records)


def mark_awaiting_trace(store: SessionStore) -> None:
    """Say in meta.json that import or collect left the session unbilled for want of the rest of a trace
    (``sessions verify`` then counts its missing ledger records as not billed yet, not as lost)."""
    try:
        meta = store.read_meta()
        if meta is not None and not meta.get(AWAITING_TRACE):
            store.write_meta({**meta, AWAITING_TRACE: True})
    except (OSError, StoreError):
        pass  # only verify's note is lost: the missing records are then reported as such


def mark_billed(session_dir: Path, meta: Mapping[str, Any] | None) -> bool:
    """After :func:`flush_unbilled`: say in meta.json that every run is in the ledger.

    Only a meta.json whose checkpoint is current is marked (its runs are all the
    session's), so a later resume need not decode tree.json.gz to bill again.
    Returns whether it was marked.
    """
    store = SessionStore(Path(session_dir))
    if meta is None or meta.get("billed") or not checkpoint_is_current(store, meta):
        return False
    try:
        store.write_meta({**{k: v for k, v in meta.items() if k != AWAITING_TRACE}, "billed": True})
    except (OSError, StoreError):
        return False  # only a shortcut is lost: the next load bills (idempotently) again
    return True
