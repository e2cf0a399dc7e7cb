"""Summaries of the billing ledger (grouped, exact, parallel over large files).

Each ``record_id`` counts once, as in ``billing export``: a line repeated in the ledger is
one call billed once (ledger_shards.py). Costs are summed as integers of 1e-12 USD (the runtime rounds each cost to 12
decimals), so totals are exact and reconcile to the cent; a null cost is an
unpriced call, never a zero.
"""

from __future__ import annotations

import multiprocessing
import os
import stat
import threading
from array import array
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Callable, Iterable, Iterator

from otel_agents.persistence.ledger_read import (
    Warn,
    check_readable_ledger,
    default_warn,
    filter_records,
    iter_records,
    record_day,
)
from otel_agents.persistence.ledger_shards import (
    LedgerShards,
    ReadStats,
    disagreeing_warning,
    preferred_copies,
    repeated_warning,
)
from otel_agents.persistence.tree_shape import TOKEN_KEYS

GROUP_BY = ("session", "agent", "model", "day")
_COST_SCALE = 10**12  # picodollars: each cost has at most 12 decimals


@dataclass
class SummaryRow:
    key: str
    calls: int = 0
    llm_calls: int = 0
    tool_calls: int = 0
    failed_calls: int = 0
    unpriced_calls: int = 0
    priced_calls: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_KEYS, 0))
    cost_picousd: int = 0
    sessions: set[str] = field(default_factory=set)

    @property
    def cost_usd(self) -> Decimal | None:
        """Exact sum of the priced calls; None when nothing was priced but something was unpriced."""
        if self.priced_calls == 0 and self.unpriced_calls:
            return None
        return Decimal(self.cost_picousd) / _COST_SCALE

    def add(self, other: "SummaryRow") -> None:
        self.calls += other.calls
        self.llm_calls += other.llm_calls
        self.tool_calls += other.tool_calls
        self.failed_calls += other.failed_calls
        self.unpriced_calls += other.unpriced_calls
        self.priced_calls += other.priced_calls
        for k in TOKEN_KEYS:
            self.tokens[k] += other.tokens[k]
        self.cost_picousd += other.cost_picousd
        self.sessions |= other.sessions

    def as_dict(self) -> dict:
        cost = self.cost_usd
        return {
            "key": self.key,
            "calls": self.calls,
            "llm_calls": self.llm_calls,
            "tool_calls": self.tool_calls,
            "failed_calls": self.failed_calls,
            "unpriced_calls": self.unpriced_calls,
            "sessions": len(self.sessions),
            "tokens": dict(self.tokens),
            "cost_usd": float(cost) if cost is not None else None,
            # False: unpriced calls are missing from cost_usd, a partial sum (added after cost_usd, which is kept).
            "complete": self.unpriced_calls == 0,
        }


def cost_picousd(cost: float | int | str) -> int:
    return int((Decimal(str(cost)) * _COST_SCALE).to_integral_value())


def _key_function(by: str | None) -> Callable[[dict], str]:
    if by is None:
        return lambda record: "total"
    if by == "session":
        return lambda record: record.get("session_id") or "-"
    if by == "agent":
        return lambda record: record.get("agent_name") or record.get("agent_id") or "-"
    if by == "model":
        return lambda record: "(tools)" if record.get("type") == "tool" else record.get("model") or "-"
    if by == "day":

        def day(record: dict) -> str:
            ts = record.get("ts")
            if type(ts) is str and ts.endswith("Z"):
                return ts[:10]
            return record_day(record) or "-"

        return day
    raise ValueError(f"cannot group by {by!r} (use one of {', '.join(GROUP_BY)})")


# Accumulator slots: a flat list per group keeps the hot loop free of attribute lookups
# (a 1,000,000-record ledger must summarize within seconds).
_CALLS, _LLM, _TOOL, _FAILED, _UNPRICED, _PRICED, _COST = range(7)
_TOKENS0 = 7  # then one slot per TOKEN_KEYS entry


Groups = dict[str, tuple[list[int], set[str]]]
# Counted as failed calls: an interrupted one did not complete either (ledger_records.py).
_NOT_COMPLETED = frozenset({"failed", "interrupted"})


# Python's str hash: 64 bits, and the same in the forked workers (one hash secret).
_id_hash = hash


def _aggregate(
    records: Iterable[dict],
    key_of: Callable[[dict], str],
    groups: Groups,
    seen: set[int] | None = None,
    repeated: set[int] | None = None,
) -> None:
    """Add ``records`` to ``groups``; with ``seen``, skip a record whose id hash is in it (added as read),
    putting that hash in ``repeated``. Here, not in a filter before: a generator per record costs."""
    width = _TOKENS0 + len(TOKEN_KEYS)
    id_hash, remember = _id_hash, seen.add if seen is not None else None
    for record in records:
        if remember is not None:
            h = id_hash(record["record_id"])
            if h in seen:  # type: ignore[operator]
                repeated.add(h)  # type: ignore[union-attr]
                continue
            remember(h)
        get = record.get
        key = key_of(record)
        group = groups.get(key)
        if group is None:
            group = groups[key] = ([0] * width, set())
        acc = group[0]
        acc[_CALLS] += 1
        failed = get("status") in _NOT_COMPLETED
        if failed:
            acc[_FAILED] += 1
        session = get("session_id")
        if session:
            group[1].add(session)
        if get("type") == "tool":
            acc[_TOOL] += 1
            continue
        acc[_LLM] += 1
        tokens = get("tokens")
        if tokens:
            tget = tokens.get
            acc[7] += tget("input") or 0
            acc[8] += tget("output") or 0
            acc[9] += tget("cache_read") or 0
            acc[10] += tget("cache_write") or 0
            acc[11] += tget("reasoning") or 0
            acc[12] += tget("total") or 0
        cost = get("cost_usd")
        if cost is None:
            # A failed attempt without a price is not an unpriced call (as in the tree totals).
            if not failed:
                acc[_UNPRICED] += 1
        else:
            acc[_PRICED] += 1
            # Costs carry at most 12 decimals; below $1000 a float times 1e12 rounds exactly.
            acc[_COST] += round(cost * _COST_SCALE) if type(cost) is float and -1e3 < cost < 1e3 else cost_picousd(cost)


def _rows(groups: Groups) -> list[SummaryRow]:
    rows = []
    for key in sorted(groups):
        acc, sessions = groups[key]
        rows.append(
            SummaryRow(
                key,
                calls=acc[_CALLS],
                llm_calls=acc[_LLM],
                tool_calls=acc[_TOOL],
                failed_calls=acc[_FAILED],
                unpriced_calls=acc[_UNPRICED],
                priced_calls=acc[_PRICED],
                tokens={k: acc[_TOKENS0 + i] for i, k in enumerate(TOKEN_KEYS)},
                cost_picousd=acc[_COST],
                sessions=sessions,
            )
        )
    return rows


def summarize(records: Iterable[dict], by: str | None = "session") -> list[SummaryRow]:
    """One row per group (sorted by key), in a single pass; ``by=None`` gives one total row."""
    groups: Groups = {}
    _aggregate(records, _key_function(by), groups)
    return _rows(groups)


@dataclass(frozen=True)
class Filters:
    since: date | None = None
    until: date | None = None
    session: str | None = None

    def apply(self, records: Iterable[dict]) -> Iterable[dict]:
        if self.since is None and self.until is None and self.session is None:
            return records
        return filter_records(records, self.since, self.until, self.session)


# Below this size one process is quicker than starting workers.
PARALLEL_MIN_BYTES = 64 << 20


def summarize_file(
    billing_file: Path,
    by: str | None = "session",
    filters: Filters = Filters(),
    warn: Warn | None = None,
    workers: int | None = None,
    stats: ReadStats | None = None,
) -> list[SummaryRow]:
    """:func:`summarize` over a ledger file, each record id once; large files are split across CPU cores.

    Each worker streams one slice (cut at line boundaries) and the partial groups are merged, so
    the result is the same as one pass, only sooner. Repeats among the records the filters keep are
    found by id hash (a set of ints, leaner than of the ids); if a hash repeats, the file is read
    again holding the ids of those hashes only, so counts stay exact. ``stats`` gets their number.
    """
    warn = warn or default_warn
    billing_file = Path(billing_file)
    key_of = _key_function(by)  # validates ``by`` before any work
    try:
        info = billing_file.stat()
    except FileNotFoundError:
        return []
    check_readable_ledger(billing_file)  # here, not in the worker that reads the first slice
    found = ReadStats()
    groups: Groups = {}
    if not stat.S_ISREG(info.st_mode):  # a pipe can be read only once: LedgerShards spools it
        shards = LedgerShards([billing_file], warn)  # which warns of repeats and disagreeing copies
        _aggregate(filters.apply(shards), key_of, groups)
        if stats is not None:
            stats.duplicates += shards.duplicates
        return _rows(groups)
    size = info.st_size
    if workers is None:
        workers = (os.cpu_count() or 1) if size >= PARALLEL_MIN_BYTES else 1
    seen: set[int] = set()
    repeated: set[int] = set()
    bounds = _slices(billing_file, size, workers) if workers > 1 else []
    # fork is only safe without other threads; otherwise stay in this process.
    parallel = len(bounds) > 1 and threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods()
    if parallel:
        with multiprocessing.get_context("fork").Pool(len(bounds)) as pool:
            parts = pool.starmap(_summarize_slice, [(billing_file, by, filters, a, b) for a, b in bounds])
        for index, (part, messages, part_seen, part_repeated) in enumerate(parts):
            for message in messages:
                warn(message)
            _merge(groups, part)
            repeated |= part_repeated
            if seen:  # a record first read in an earlier slice
                repeated.update(h for h in part_seen if h in seen)
            if index < len(parts) - 1:
                seen.update(part_seen)
    else:
        _aggregate(filters.apply(iter_records(billing_file, warn)), key_of, groups, seen, repeated)
    del seen
    if repeated:
        # Hashes met twice (repeats, or rarely two ids sharing one): read again, holding only their ids.
        groups = {}
        if parallel:  # the slices again, each setting aside its records of those hashes, in order
            with multiprocessing.get_context("fork").Pool(len(bounds)) as pool:
                parts2 = pool.starmap(_slice_without, [(billing_file, by, filters, a, b, repeated) for a, b in bounds])
            for part, _ in parts2:
                _merge(groups, part)
            held = [record for _, records in parts2 for record in records]
        else:
            held = []
            records = iter_records(billing_file, lambda message: None)  # its damage was warned of
            _aggregate(_without(filters.apply(records), repeated, held), key_of, groups)
        # Each id's preferred copy, as LedgerShards counts it: not the first, which depends on the order.
        _aggregate(preferred_copies(held, found), key_of, groups)
    return _rows(_counted(groups, billing_file, found, stats, warn))


def _counted(groups: Groups, billing_file: Path, found: ReadStats, stats: ReadStats | None, warn: Warn) -> Groups:
    if found.duplicates:  # one line for the ledger, however many
        warn(repeated_warning(billing_file, found.duplicates))
    if found.disagreeing:
        warn(disagreeing_warning(found))
    if stats is not None:
        stats.duplicates += found.duplicates
    return groups


def _slices(billing_file: Path, size: int, count: int) -> list[tuple[int, int]]:
    cuts = [0]
    with open(billing_file, "rb") as fh:
        for i in range(1, count):
            fh.seek(max(size * i // count, cuts[-1]))
            fh.readline()  # move to the start of the next line
            cut = fh.tell()
            if cut >= size:
                break
            if cut > cuts[-1]:
                cuts.append(cut)
    cuts.append(size)
    return list(zip(cuts, cuts[1:]))


def _summarize_slice(
    billing_file: Path, by: str | None, filters: Filters, start: int, end: int
) -> tuple[Groups, list[str], array, set[int]]:
    """One slice's groups, warnings, and id hashes: all of them, and those met twice in it."""
    messages: list[str] = []
    groups: Groups = {}
    seen: set[int] = set()
    repeated: set[int] = set()
    records = filters.apply(iter_records(billing_file, messages.append, start, end))
    _aggregate(records, _key_function(by), groups, seen, repeated)
    # 8 bytes a hash to send back, not a set's: the parent holds every slice's at once.
    return groups, messages, array("q", seen), repeated


def _slice_without(
    billing_file: Path, by: str | None, filters: Filters, start: int, end: int, suspects: set[int]
) -> tuple[Groups, list[dict]]:
    """One slice's groups without the records whose id hash is in ``suspects``, and those records."""
    held: list[dict] = []
    groups: Groups = {}
    records = filters.apply(iter_records(billing_file, lambda message: None, start, end))
    _aggregate(_without(records, suspects, held), _key_function(by), groups)
    return groups, held


def _without(records: Iterable[dict], suspects: set[int], held: list[dict]) -> Iterator[dict]:
    """``records`` but those whose id hash is in ``suspects``, which go to ``held``."""
    for record in records:
        if _id_hash(record["record_id"]) in suspects:
            held.append(record)
        else:
            yield record


def _merge(into: Groups, part: Groups) -> None:
    for key, (acc, sessions) in part.items():
        mine = into.get(key)
        if mine is None:
            into[key] = (acc, sessions)
            continue
        for i, value in enumerate(acc):
            mine[0][i] += value
        mine[1].update(sessions)


def total(rows: Iterable[SummaryRow]) -> SummaryRow:
    out = SummaryRow("total")
    for row in rows:
        out.add(row)
    return out
