"""The ledger the saved sessions imply (``billing rebuild``): derived from every idle saved session, compared, written under the ledger's lock."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import orjson

from otel_agents.persistence.ledger import rewrite_records
from otel_agents.persistence.ledger_read import Warn
from otel_agents.persistence.ledger_records import carry_repricing, ledger_records
from otel_agents.persistence.paths import InvalidSessionId, Paths
from otel_agents.persistence.ownership import owner_of
from otel_agents.persistence.store import SessionStore
from otel_agents.persistence.session_meta import checkpoint_mark
from otel_agents.tracing.redaction import redact


@dataclass
class Derived:
    """Each saved session's ledger records as its files imply them, and what they were derived from."""

    by_session: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    stamps: dict[str, tuple[Path, Any]] = field(default_factory=dict)  # session id -> (directory, files' stamps)
    unreadable: int = 0
    live: int = 0  # sessions a process was writing: their records are left to it

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
        try:
            loaded = load_saved(entry, lambda _: None, records=False)
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
    return derived


@dataclass
class RebuildPlan:
    """What a rebuild changes, record ids by kind of difference."""

    records: list[dict] = field(default_factory=list)  # the new ledger, in order
    derived: int = 0
    added: list[str] = field(default_factory=list)
    changed: list[tuple[str, list[str]]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept: int = 0
    duplicates: int = 0
    repriced: int = 0  # LLM records priced again (--reprice)
    price_changes: list = field(default_factory=list)  # repricing.PriceChange, those priced differently
    prices_kept: list = field(default_factory=list)  # those the current prices cannot price: left as they were

    @property
    def differs(self) -> bool:
        return bool(self.added or self.changed or self.removed or self.duplicates or self.price_changes)


def plan_rebuild(old: list[dict], by_session: dict[str, list[dict[str, Any]]]) -> RebuildPlan:
    """Pure: the ledger the saved sessions imply, compared with the one on disk.

    Records of sessions with no readable saved tree are kept as they are.
    """
    plan = RebuildPlan()
    old_by_id: dict[str, dict] = {}
    for record in old:
        if record["record_id"] in old_by_id:
            plan.duplicates += 1
        old_by_id.setdefault(record["record_id"], record)
    new_records = []
    for records in by_session.values():
        for record in records:
            record = orjson.loads(orjson.dumps(redact(record)))  # exactly what a ledger line holds
            previous = old_by_id.get(record["record_id"])
            record = carry_repricing(previous, record)  # a re-price stays until the span's cost changes
            new_records.append(record)
            if previous is None:
                plan.added.append(record["record_id"])
            elif previous != record:
                fields = sorted(k for k in set(previous) | set(record) if previous.get(k) != record.get(k))
                plan.changed.append((record["record_id"], fields))
    plan.derived = len(new_records)
    new_ids = {r["record_id"] for r in new_records}
    kept = []
    for rid, record in old_by_id.items():
        if rid in new_ids:
            continue
        if record.get("session_id") in by_session:
            plan.removed.append(rid)
        else:
            kept.append(record)
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
        plan = plan_rebuild(old, derived.still_current(warn))
        if adjust is not None:
            adjust(plan)
        plans.append(plan)
        return plan.records if plan.differs and not dry_run else None

    if dry_run and not Path(billing_file).exists():
        # No ledger yet: no records to read. Taking the lock would create it (and its directory).
        written = rewrite([])
    else:
        written = rewrite_records(billing_file, rewrite, warn)
    return Rebuild(plans[0], written, len(derived.by_session), derived.unreadable, derived.live)
