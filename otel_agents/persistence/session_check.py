"""``sessions verify`` of one directory: the saved tree, events.jsonl and the ledger, read-only.

The checkpoint (tree.json.gz) is what is checked, as long as it stands for the
session. When its writer died after it (the checkpoint is merely behind the
journal), the tree rebuilt from the journal is checked instead, with open spans
shown interrupted: such a session is *recoverable*, not damaged, and what its
writer had not billed yet is not a disagreement (``resume`` or ``sessions
repair`` records and bills it). A journal shorter than the checkpoint (spans the
checkpoint holds, or holds ended, are missing from it) is a disagreement, and so is
an events.jsonl lacking records the checkpoint holds (one line says how many).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from otel_agents.persistence.saved import (
    NO_RUN_NOTE, SOURCE_JOURNAL, SessionUnreadable, checkpoint_contradiction, load_saved, no_run_recorded,
    events_shortfall, short_events_problem, short_journal_problem,
)
from otel_agents.persistence.ledger_read import read_records
from otel_agents.persistence.events_file import EventLine, EventsFileError, read_event_lines
from otel_agents.persistence.notices import Warn
from otel_agents.persistence.ownership import describe_busy, owner_of
from otel_agents.persistence.store import SessionStore, StoreError
from otel_agents.persistence.session_meta import AWAITING_TRACE, CUT_BY, checkpoint_is_current, values_cut
from otel_agents.persistence.tree import build_tree
from otel_agents.persistence.tree_flat import trees_equal
from otel_agents.persistence import verify


@dataclass
class SessionCheck:
    problems: list[str] = field(default_factory=list)  # disagreements: exit 1
    notes: list[str] = field(default_factory=list)  # states that are not disagreements (interrupted, live)
    records: int = 0  # lines of events.jsonl
    ledger_records: int = 0  # of this session


def verify_directory(directory: Path, billing_file: Path, warn: Warn) -> SessionCheck:
    """``sessions verify``: :func:`check_session` against the ledger at ``billing_file`` (absent: empty).

    The ledger's own warnings are said before the session's; a damaged ledger raises
    its LedgerError (one line) before the session is read.
    """
    ledger_warnings: list[str] = []
    ledger = read_records(billing_file, ledger_warnings.append) if Path(billing_file).exists() else []
    for message in ledger_warnings:
        warn(message)
    return check_session(directory, ledger, warn)


def check_session(directory: Path, ledger: list[dict[str, Any]] | None, warn: Warn) -> SessionCheck:
    """Every disagreement among the session's files and ``ledger`` (None: not checked)."""
    store = SessionStore(Path(directory))
    out = SessionCheck()
    tree = None
    empty = no_run_recorded(store)
    try:
        tree = store.load_tree()
    except StoreError as exc:
        if empty:  # stopped before its first span: nothing to disagree, but the ledger must hold none of it
            tree = build_tree([], store.session_id)
            out.notes.append(NO_RUN_NOTE)
        elif store.tree_path.exists() or not store.journal_path.exists():
            out.problems.append(str(exc))
    lines: list[EventLine] = []
    events_unreadable = False
    if store.events_path.exists():
        try:
            lines = read_event_lines(store.events_path, warn)
        except (EventsFileError, OSError) as exc:
            out.problems.append(str(exc))
            events_unreadable = True  # said once: not again as every record of the tree missing from it
    try:
        meta = store.read_meta()
    except StoreError as exc:
        meta = None
        if not (empty and not store.meta_path.exists()):  # a new session's start writes none
            out.problems.append(str(exc))
    owner = owner_of(store.directory)
    recoverable = False
    short = 0  # records of the checkpoint events.jsonl lacks: said in one line, not once each
    if tree is not None and store.events_path.exists() and not events_unreadable and tree.get("id") == store.session_id:
        short = events_shortfall(tree, lines)
    if short:
        out.problems.append(short_events_problem(store, short)
                            + "; `sessions repair` cannot mend it: restore events.jsonl from a whole copy")
    if store.journal_path.exists() and not checkpoint_is_current(store, meta) and not out.problems:
        try:
            loaded = load_saved(store.directory, warn)
        except SessionUnreadable as exc:
            out.problems.append(str(exc))
        else:
            if loaded.journal_lacks:  # loaded.tree is then the checkpoint: the comparisons below check it
                out.problems.append(short_journal_problem(store, loaded.journal_lacks)
                                    + "; `sessions repair` cannot mend it: restore spans.jsonl from a whole copy")
            rebuilt = loaded.tree
            if loaded.source == SOURCE_JOURNAL and rebuilt is not None and (tree is None or not trees_equal(rebuilt, tree)):
                # Merely behind: the journal's whole is checked. Otherwise the checkpoint is, and the
                # comparisons below name where the streams contradict it.
                if tree is None or checkpoint_contradiction(tree, rebuilt, lines) is None:
                    tree = rebuilt
            if loaded.interrupted:
                recoverable = True
                out.notes.append(f"interrupted, recoverable ({loaded.interrupted} spans without an end): "
                                 "`otel-agents resume` or `otel-agents sessions repair` records it")
            elif owner is None and meta is not None and meta.get("status") == "running" and not loaded.journal_lacks:
                recoverable = True
                out.notes.append("interrupted, recoverable (its writer ended without closing it): "
                                 "`otel-agents sessions repair` records it")
    if owner is None and not recoverable and meta is not None and meta.get(AWAITING_TRACE):
        recoverable = True
        out.notes.append("not billed yet: a trace of it was not whole when it was saved; the rest of it, imported or "
                         "received by collect, bills it, or `otel-agents sessions repair` bills what there is")
    cut = values_cut(tree) if tree is not None else 0
    if cut:
        out.notes.append(f"{cut} value(s) cut or event(s) dropped {CUT_BY} on the way here (a cap's cut ends in "
                         "a truncation marker, a standard limit's in none): views and billing hold, `resume` and "
                         "`fork` refuse it")
    if owner is not None:
        out.notes.append(describe_busy(store.session_id, owner) + ": what it has not finished is not checked")
    if tree is not None:
        out.problems += verify.verify_session(tree, None if events_unreadable else lines, ledger,
                                              live=owner is not None, recoverable=recoverable, missing_said=bool(short))
    out.records = len(lines)
    if ledger is not None:
        out.ledger_records = sum(1 for r in ledger if r.get("session_id") == store.session_id)
    return out
