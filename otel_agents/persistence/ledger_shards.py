"""Billing ledgers (one, or the shards of a fleet) read as one stream, each record once."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from dataclasses import dataclass
from typing import IO, Iterable, Iterator

import orjson

from otel_agents.persistence.ledger_read import LedgerError, Warn, default_warn, iter_records
from otel_agents.persistence.ledger_records import REPRICED
from otel_agents.persistence.tree_kinds import STATUS_INTERRUPTED


def ledger_files(given: Iterable[Path | str]) -> list[Path]:
    """The ledger files named: files as given, a directory as its ``*.jsonl`` files, sorted.

    One plain file keeps the single-ledger meaning (missing = no records yet); with several
    sources a missing file is an error, since it is most likely a typo that would under-count.
    A name ending in a separator (``shards/``, as typed) is a directory: missing, it is an error too.
    """
    named = list(given)
    files: list[Path] = []
    for raw in named:
        path = Path(raw)
        if str(raw).endswith(("/", os.sep)) and not path.is_dir():
            raise LedgerError(f"no directory of ledgers {path}")
        if path.is_dir():
            found = sorted(p for p in path.glob("*.jsonl") if p.is_file())
            if not found:
                raise LedgerError(f"no *.jsonl ledgers in the directory {path}")
            files += found
        elif len(named) > 1 and not path.exists():
            raise LedgerError(f"no billing ledger {path}")
        else:
            files.append(path)
    unique: dict[Path, Path] = {}
    for path in files:
        unique.setdefault(path.resolve(), path)  # the same file named twice is read once
    return list(unique.values())


@dataclass
class ReadStats:
    """What a reader dropped: ``duplicates``, the records already read under the same ``record_id``;
    ``disagreeing``, the ids whose copies differed (``repriced_over_older`` of them a re-priced copy
    and one not re-priced)."""

    duplicates: int = 0
    disagreeing: int = 0
    repriced_over_older: int = 0


def repeated_warning(path: Path, count: int) -> str:
    """The one warning for ``count`` repeated records inside the ledger ``path``."""
    what = "record written more than once was" if count == 1 else "records written more than once were"
    return f"{path}: {count} {what} counted once (`otel-agents billing rebuild` drops the repeats)"


def disagreeing_warning(stats: ReadStats) -> str:
    """The one warning for the ids whose copies (in one ledger or several) differed."""
    what = "record was" if stats.disagreeing == 1 else "records were"
    repriced = (f", {stats.repriced_over_older} of them a re-priced copy and an older one"
                if stats.repriced_over_older else "")
    return (f"{stats.disagreeing} {what} found more than once with different contents{repriced}; "
            "each counted once as its preferred copy (re-priced, else finished, else priced)")


def preference(record: dict) -> tuple:
    """How much a copy of a record is preferred (the greatest wins), so the copy counted does not
    depend on the order the copies are read in (ledgers named, or lines of one ledger): a re-priced
    copy (it carries the recorded price in ``repriced``) over one not re-priced, a finished call
    over one shown interrupted, a priced one over one without a cost; then, between copies that
    still differ, the greatest canonical JSON, arbitrary but the same whatever the order."""
    return (
        isinstance(record.get(REPRICED), dict),
        record.get("status") != STATUS_INTERRUPTED,
        record.get("cost_usd") is not None,
        orjson.dumps(record, option=orjson.OPT_SORT_KEYS),
    )


def chosen(found: list[dict], stats: ReadStats) -> dict:
    """The copy counted of a record read ``len(found)`` times; the others counted in ``stats``."""
    stats.duplicates += len(found) - 1
    first = found[0]
    if all(record == first for record in found[1:]):
        return first
    stats.disagreeing += 1
    if len({isinstance(record.get(REPRICED), dict) for record in found}) > 1:
        stats.repriced_over_older += 1
    return max(found, key=preference)


def preferred_copies(records: Iterable[dict], stats: ReadStats) -> Iterator[dict]:
    """Each ``record_id``'s preferred copy among ``records``, all held: meant for the few records
    whose ids (or id hashes) were seen to repeat."""
    by_id: dict[str, list[dict]] = {}
    for record in records:
        by_id.setdefault(record["record_id"], []).append(record)
    for found in by_id.values():
        yield chosen(found, stats)


class LedgerShards:
    """Iterates the records of one or several ledgers, each ``record_id`` once.

    A record id is ``<trace_id>:<span_id>`` of the billed span, the ledger's idempotency
    key: a span delivered to two shards (a Collector retry after a re-route) is one call, and
    so is a line repeated inside one ledger (a copy or a concatenation), which is also warned
    of, naming the ledger. ``duplicates`` counts the records dropped, ``across_ledgers`` those
    of them read in another ledger than the copy counted.

    Copies may differ (one re-priced by ``billing rebuild --reprice``, the other an older copy):
    the one counted is the :func:`preference`'s, whatever the order of the ledgers or of the lines
    in one, and ``disagreeing`` says for how many ids the copies differed (warned of once). The
    ledgers are therefore read twice: first their ids, then their records, each yielded where its
    last copy is read (a pipe's records are spooled to an unnamed temporary file the first time).
    """

    def __init__(self, files: list[Path], warn: Warn | None = None) -> None:
        self.files = list(files)
        self.warn = warn or default_warn
        self.stats = ReadStats()
        self.across_ledgers = 0

    @property
    def duplicates(self) -> int:
        return self.stats.duplicates

    @property
    def disagreeing(self) -> int:
        return self.stats.disagreeing

    @property
    def repriced_over_older(self) -> int:
        return self.stats.repriced_over_older

    def __iter__(self) -> Iterator[dict]:
        # Exact ids, not hashes: an export streams each record as read, and cannot take one back.
        spools: dict[int, IO[bytes]] = {}  # the records of a ledger that cannot be read twice (a pipe)
        try:
            copies = self._count_copies(spools)
            contested: dict[str, list[tuple[int, dict]]] = {}  # id -> the copies read so far, more to come
            for index, path in enumerate(self.files):
                records = _spooled(spools[index]) if index in spools else iter_records(path, lambda _: None)
                for record in records:
                    rid = record["record_id"]
                    count = copies.get(rid)
                    if not count:  # appended since the first reading (not in the ledger as read), or done
                        continue
                    if count == 1:
                        copies[rid] = 0
                        yield record
                        continue
                    found = contested.setdefault(rid, [])
                    found.append((index, record))
                    if len(found) == count:
                        del contested[rid]
                        copies[rid] = 0
                        self.across_ledgers += len({i for i, _ in found}) - 1
                        yield chosen([r for _, r in found], self.stats)
        finally:
            for spool in spools.values():
                spool.close()
        if self.stats.disagreeing:
            self.warn(disagreeing_warning(self.stats))

    def _count_copies(self, spools: dict[int, IO[bytes]]) -> dict[str, int]:
        """How many copies of each id the ledgers hold; repeats inside one ledger are warned of,
        naming it, and damage once (this is the first reading)."""
        ledgers = len(self.files)
        copies: dict[str, int] = {}  # id -> copies * ledgers + index of the last ledger read in: one dict
        for index, path in enumerate(self.files):
            spool = None if _rereadable(path) else spools.setdefault(index, tempfile.TemporaryFile())
            within = 0
            for record in iter_records(path, self.warn):
                rid = record["record_id"]
                seen = copies.get(rid)
                if seen is None:
                    copies[rid] = ledgers + index
                else:
                    within += seen % ledgers == index
                    copies[rid] = (seen // ledgers + 1) * ledgers + index
                if spool is not None:
                    spool.write(orjson.dumps(record) + b"\n")
            if within:
                self.warn(repeated_warning(path, within))
        for rid, value in copies.items():
            copies[rid] = value // ledgers
        return copies


def _spooled(spool: IO[bytes]) -> Iterator[dict]:
    spool.seek(0)
    for line in spool:
        yield orjson.loads(line)


def _rereadable(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return True  # missing: read as empty both times
