"""The ledger the saved sessions imply (``billing rebuild``): derived from every idle saved session, compared, written under the ledger's lock."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Collection

import orjson

from otel_agents.persistence.ledger import rewrite_records
from otel_agents.persistence.ledger_read import Warn
from otel_agents.persistence.ledger_records import carry_repricing, ledger_records
from otel_agents.persistence.ledger_shards import preference
from otel_agents.persistence.paths import InvalidSessionId, Paths
from otel_agents.persistence.ownership import owner_of
from otel_agents.persistence.store import SessionStore
from otel_agents.persistence.session_meta import checkpoint_mark
from otel_agents.persistence.tree_kinds import STATUS_INTERRUPTED
from otel_agents.tracing.redaction import redact


@dataclass
class Derived:
    """Each saved session's ledger records as its files imply them, and what they were derived from."""

    by_session: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    stamps: dict[str, tuple[Path, Any]] = field(default_factory=dict)  # session id -> (directory, files' stamps)
    unreadable: int = 0
    live: int = 0  # sessions a process was writing: their records are left to it
    incomplete: dict[str, str] = field(default_factory=dict)  # session id -> why its saved state is not whole

    def still_current(self, warn: Warn) -> dict[str, list[dict[str, Any]]]:
        """``by_session`` without the sessions written to since they were read (a run started or went on
        meanwhile): their records, some appended after the read, are kept as they are. Asked under the
        ledger's lock, which every append takes, so nothing appended from here on is missed."""
        out = {}
        for session_id, records in self.by_session.items():
            directory, stamp = self.stamps[session_id]
            if owner_of(directory) is not None or checkpoint_mark(SessionStore(directory))["files"] != stamp:
                warn(f"session {session_id} was written to during the rebuild; its ledger records are kept "
                     "as they are (rebuild again once it is idle)")
                continue
            out[session_id] = records
        return out


def derived_records(sessions_dir: Path, warn: Warn) -> Derived:
    """Ledger records of every saved session, by session id, from its tree as a reader loads it: the
    checkpoint when current, else rebuilt from the journal (a writer that died after its last
    checkpoint billed runs the checkpoint lacks). A session a live process holds is left to it."""
    from otel_agents.persistence.saved import SessionUnreadable, load_saved

    derived = Derived()
    if not sessions_dir.is_dir():
        return derived
    checker = Paths(sessions_dir, Path("/dev/null"))
    for entry in sorted(sessions_dir.iterdir()):
        if not entry.is_dir():
            continue
        try:
            checker.session_dir(entry.name)
        except InvalidSessionId:
            continue
        store = SessionStore(entry)
        if not (store.tree_path.exists() or store.journal_path.exists()):
            continue
        if owner_of(entry) is not None:
            derived.live += 1
            continue
        stamp = checkpoint_mark(store)["files"]
        heard: list[str] = []  # anything the loader had to say means it read less than the session holds
        try:
            loaded = load_saved(entry, heard.append, records=False)
        except (SessionUnreadable, OSError) as exc:
            warn(f"{exc}; its ledger records are kept as they are")
            derived.unreadable += 1
            continue
        if loaded.tree is None or loaded.damaged:
            why = "; ".join(loaded.damaged) or f"session {entry.name} has no readable tree"
            warn(f"{why}; its ledger records are kept as they are")
            derived.unreadable += 1
            continue
        session_id = loaded.tree.get("id") or entry.name
        derived.by_session[session_id] = ledger_records(loaded.tree)
        derived.stamps[session_id] = (entry, stamp)
        why = heard[0] if heard else _contradicted(loaded)
        if why is not None:
            derived.incomplete[session_id] = why
            warn(f"session {session_id}: {why}; its saved state is not whole, so its ledger records are kept as "
                 f"they are (only those missing are added): `otel-agents sessions verify {session_id}` says what "
                 f"is wrong, before any `otel-agents sessions repair`")
    return derived


def _contradicted(loaded: Any) -> str | None:
    """Why the tree rebuilt from the journal is not the whole session (None: it is): a checkpoint
    holding what the journal lacks (a journal cut short) makes it a part, which proves no record wrong."""
    from otel_agents.persistence.saved import SOURCE_CHECKPOINT, checkpoint_contradiction
    from otel_agents.persistence.store import StoreError
    from otel_agents.persistence.tree_flat import trees_equal

    store = loaded.store
    if loaded.source == SOURCE_CHECKPOINT or not store.tree_path.exists():
        return None
    try:
        saved = store.load_tree()
    except StoreError as exc:
        return str(exc)
    if trees_equal(saved, loaded.tree):
        return None
    return checkpoint_contradiction(saved, loaded.tree, loaded.event_lines or [])


@dataclass
class RebuildPlan:
    """What a rebuild changes, record ids by kind of difference."""

    records: list[dict] = field(default_factory=list)  # the new ledger, in order
    derived: int = 0
    added: list[str] = field(default_factory=list)
    changed: list[tuple[str, list[str]]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept: int = 0
    held: int = 0  # of ``kept``: records of sessions whose saved state is not whole, left as they are
    duplicates: int = 0
    disagreeing: int = 0  # of the ids repeated: those whose copies differed (the preferred one kept)
    repriced: int = 0  # LLM records priced again (--reprice)
    price_changes: list = field(default_factory=list)  # repricing.PriceChange, those priced differently
    source_changes: list = field(default_factory=list)  # those whose cost stays but price source changed
    prices_kept: list = field(default_factory=list)  # those the current prices cannot price: left as they were

    @property
    def differs(self) -> bool:
        return bool(self.added or self.changed or self.removed or self.duplicates or self.price_changes
                    or self.source_changes)


def plan_rebuild(
    old: list[dict], by_session: dict[str, list[dict[str, Any]]], incomplete: Collection[str] = ()
) -> RebuildPlan:
    """Pure: the ledger the saved sessions imply, compared with the one on disk.

    Money recorded is never lost unless a whole saved session proves the record wrong:
    records of sessions with no readable saved tree are kept as they are, and so are
    those of the ``incomplete`` sessions (saved state damaged or cut short), which only
    add the records the ledger lacks; nor does a span shown interrupted (its end never
    saved) replace a record of how it ended.
    """
    plan = RebuildPlan()
    old_by_id: dict[str, dict] = {}
    disagreeing: set[str] = set()
    for record in old:
        rid = record["record_id"]
        previous = old_by_id.get(rid)
        if previous is not None:
            plan.duplicates += 1
            if previous != record:
                disagreeing.add(rid)
                # The copy billing summary counts (its preferred), not the first: the lines' order is no choice.
                record = max(previous, record, key=preference)
        old_by_id[rid] = record
    plan.disagreeing = len(disagreeing)
    new_records = []
    standing: set[str] = set()  # derived, but the ledger's record stands
    for records in by_session.values():
        for record in records:
            record = orjson.loads(orjson.dumps(redact(record)))  # exactly what a ledger line holds
            previous = old_by_id.get(record["record_id"])
            if previous is not None and (record.get("session_id") in incomplete or (
                    record.get("status") == STATUS_INTERRUPTED and previous.get("status") != STATUS_INTERRUPTED)):
                standing.add(record["record_id"])
                continue
            record = carry_repricing(previous, record)  # a re-price stays until the span's cost changes
            new_records.append(record)
            if previous is None:
                plan.added.append(record["record_id"])
            elif previous != record:
                fields = sorted(k for k in set(previous) | set(record) if previous.get(k) != record.get(k))
                plan.changed.append((record["record_id"], fields))
    plan.derived = len(new_records) + len(standing)
    new_ids = {r["record_id"] for r in new_records}
    kept = []
    for rid, record in old_by_id.items():
        if rid in new_ids:
            continue
        session_id = record.get("session_id")
        if session_id in by_session and session_id not in incomplete and rid not in standing:
            plan.removed.append(rid)
        else:
            kept.append(record)
            plan.held += session_id in incomplete
    plan.kept = len(kept)
    plan.records = sorted(kept + new_records, key=lambda r: (str(r.get("ts") or ""), r["record_id"]))
    return plan


@dataclass(frozen=True)
class Rebuild:
    """What ``rebuild_ledger`` found and did."""

    plan: RebuildPlan
    written: int | None  # records written, None when the ledger was left as it was
    sessions: int  # saved sessions whose records were derived
    unreadable: int  # saved trees that could not be read (their records kept)
    live: int = 0  # sessions a process was writing (their records kept: theirs to bill)
    incomplete: int = 0  # sessions whose saved state is not whole (their records kept, missing ones added)


def rebuild_ledger(
    billing_file: Path,
    sessions_dir: Path,
    warn: Warn,
    dry_run: bool = False,
    adjust: Callable[[RebuildPlan], None] | None = None,
) -> Rebuild:
    """Compare the ledger with the saved sessions and, unless ``dry_run``, write what they imply.

    ``adjust`` may change the plan's records before they are written (``--reprice``,
    which needs the price table: a layer above this one). The comparison runs under
    the ledger's lock, so no concurrent append is lost.
    """
    derived = derived_records(sessions_dir, warn)
    plans: list[RebuildPlan] = []

    def rewrite(old: list[dict]) -> list[dict] | None:
        plan = plan_rebuild(old, derived.still_current(warn), derived.incomplete)
        if adjust is not None:
            adjust(plan)
        plans.append(plan)
        return plan.records if plan.differs and not dry_run else None

    if dry_run and not Path(billing_file).exists():
        # No ledger yet: no records to read. Taking the lock would create it (and its directory).
        written = rewrite([])
    else:
        written = rewrite_records(billing_file, rewrite, warn)
    return Rebuild(plans[0], written, len(derived.by_session), derived.unreadable, derived.live,
                   len(derived.incomplete))
