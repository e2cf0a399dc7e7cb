"""Billing ledgers (one, or the shards of a fleet) read as one stream, each record once."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

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
    """What a reader dropped: ``duplicates``, the records already read under the same ``record_id``."""

    duplicates: int = 0


def repeated_warning(path: Path, count: int) -> str:
    """The one warning for ``count`` repeated records inside the ledger ``path``."""
    what = "record written more than once was" if count == 1 else "records written more than once were"
    return f"{path}: {count} {what} counted once (`otel-agents billing rebuild` drops the repeats)"


def first_exact(
    records: Iterable[dict], stats: ReadStats, suspects: set[int] | None, id_hash: Callable[[str], int]
) -> Iterator[dict]:
    """Each ``record_id``'s first record, counting the others in ``stats``; ids are held only when
    their ``id_hash`` is in ``suspects`` (None: every id)."""
    kept: set[str] = set()
    for record in records:
        rid = record["record_id"]
        if suspects is None or id_hash(rid) in suspects:
            if rid in kept:
                stats.duplicates += 1
                continue
            kept.add(rid)
        yield record


def preference(record: dict) -> tuple:
    """How much a copy of a record found in several ledgers is preferred (the greatest wins), so
    the copy counted does not depend on the order the ledgers are named in: a re-priced copy (it
    carries the recorded price in ``repriced``) over one not re-priced, a finished call over one
    shown interrupted, a priced one over one without a cost; then, between copies that still
    differ, the greatest canonical JSON, arbitrary but the same whatever the order."""
    return (
        isinstance(record.get(REPRICED), dict),
        record.get("status") != STATUS_INTERRUPTED,
        record.get("cost_usd") is not None,
        orjson.dumps(record, option=orjson.OPT_SORT_KEYS),
    )


class LedgerShards:
    """Iterates the records of one or several ledgers in order, dropping repeated ``record_id``s.

    A record id is ``<trace_id>:<span_id>`` of the billed span, the ledger's idempotency
    key: a span delivered to two shards (a Collector retry after a re-route) is one call, and
    so is a line repeated inside one ledger (a copy or a concatenation), which is also warned
    of, naming the ledger. ``duplicates`` counts the records dropped so far, ``across_ledgers``
    those of them first read in another ledger.

    Within one ledger its first copy of a record counts. Copies in several ledgers may differ
    (one re-priced by ``billing rebuild --reprice``, the other an older copy): the one counted is
    the :func:`preference`'s, whatever the order of the ledgers, and ``disagreeing`` says for how
    many ids the copies differed (warned of once). Several ledgers are therefore read twice: first
    their ids, then their records, each yielded where its last copy is read (a pipe's records are
    held from the first reading).
    """

    def __init__(self, files: list[Path], warn: Warn | None = None) -> None:
        self.files = list(files)
        self.warn = warn or default_warn
        self.duplicates = 0
        self.across_ledgers = 0
        self.disagreeing = 0
        self.repriced_over_older = 0  # of ``disagreeing``: a re-priced copy against one not re-priced

    def __iter__(self) -> Iterator[dict]:
        if len(self.files) == 1:
            yield from self._first_copies_of(self.files[0])  # nothing to compare with: streamed as read
            return
        # Exact ids, not hashes: an export streams each record as read, and cannot take one back.
        held: dict[int, list[dict]] = {}  # the records of a ledger that cannot be read twice (a pipe)
        copies: dict[str, int] = {}  # id -> how many ledgers hold it
        for index, path in enumerate(self.files):
            keep = None if _rereadable(path) else held.setdefault(index, [])
            for record in self._first_copies_of(path, keep):
                rid = record["record_id"]
                copies[rid] = copies.get(rid, 0) + 1
        contested: dict[str, list[dict]] = {}  # id -> the copies read so far, while some are still to come
        for index, path in enumerate(self.files):
            records = held[index] if index in held else self._first_copies_of(path, again=True)
            for record in records:
                rid = record["record_id"]
                count = copies[rid]
                if count == 1:
                    yield record
                    continue
                found = contested.setdefault(rid, [])
                found.append(record)
                if len(found) == count:
                    del contested[rid]
                    yield self._chosen(found)
        if self.disagreeing:
            what = "record was" if self.disagreeing == 1 else "records were"
            repriced = (f", {self.repriced_over_older} of them a re-priced copy and an older one"
                        if self.repriced_over_older else "")
            self.warn(f"{self.disagreeing} {what} found in more than one ledger with different contents{repriced}; "
                      "each counted once as its preferred copy (re-priced, else finished, else priced)")

    def _first_copies_of(self, path: Path, keep: list[dict] | None = None, again: bool = False) -> Iterator[dict]:
        """The ledger's records, each id's first copy in it (also put in ``keep``); its damage and
        repeats are counted and warned of on the first reading only (not ``again``)."""
        warn: Warn = (lambda _: None) if again else self.warn
        kept: set[str] = set()
        within = 0
        for record in iter_records(path, warn):
            rid = record["record_id"]
            if rid in kept:
                within += 1
                continue
            kept.add(rid)
            if keep is not None:
                keep.append(record)
            yield record
        if not again:
            self.duplicates += within
            if within:
                self.warn(repeated_warning(path, within))

    def _chosen(self, found: list[dict]) -> dict:
        """The copy counted of a record several ledgers hold."""
        self.duplicates += len(found) - 1
        self.across_ledgers += len(found) - 1
        first = found[0]
        if all(record == first for record in found[1:]):
            return first
        self.disagreeing += 1
        if len({isinstance(record.get(REPRICED), dict) for record in found}) > 1:
            self.repriced_over_older += 1
        return max(found, key=preference)


def _rereadable(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return True  # missing: read as empty both times
