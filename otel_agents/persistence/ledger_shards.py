"""Billing ledgers (one, or the shards of a fleet) read as one stream, each record once."""

from __future__ import annotations

from pathlib import Path
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from otel_agents.persistence.ledger_read import LedgerError, Warn, default_warn, iter_records


def ledger_files(given: Iterable[Path]) -> list[Path]:
    """The ledger files named: files as given, a directory as its ``*.jsonl`` files, sorted.

    One plain file keeps the single-ledger meaning (missing = no records yet); with several
    sources a missing file is an error, since it is most likely a typo that would under-count.
    """
    given = [Path(p) for p in given]
    files: list[Path] = []
    for path in given:
        if path.is_dir():
            found = sorted(p for p in path.glob("*.jsonl") if p.is_file())
            if not found:
                raise LedgerError(f"no *.jsonl ledgers in the directory {path}")
            files += found
        elif len(given) > 1 and not path.exists():
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


class LedgerShards:
    """Iterates the records of one or several ledgers in order, dropping repeated ``record_id``s.

    A record id is ``<trace_id>:<span_id>`` of the billed span, the ledger's idempotency
    key: a span delivered to two shards (a Collector retry after a re-route) is one call, and
    so is a line repeated inside one ledger (a copy or a concatenation), which is also warned
    of, naming the ledger. ``duplicates`` counts the records dropped so far, ``across_ledgers``
    those of them first read in another ledger.
    """

    def __init__(self, files: list[Path], warn: Warn | None = None) -> None:
        self.files = list(files)
        self.warn = warn or default_warn
        self.duplicates = 0
        self.across_ledgers = 0

    def __iter__(self) -> Iterator[dict]:
        # Exact ids, not hashes: an export streams each record as read, and cannot take one back.
        seen: dict[str, int] = {}  # id -> index of the ledger it was first read in
        for index, path in enumerate(self.files):
            within = 0
            for record in iter_records(path, self.warn):
                rid = record["record_id"]
                first = seen.get(rid)
                if first is None:
                    seen[rid] = index
                    yield record
                    continue
                self.duplicates += 1
                if first == index:
                    within += 1
                else:
                    self.across_ledgers += 1
            if within:
                self.warn(repeated_warning(path, within))
