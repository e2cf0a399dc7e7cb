"""Several billing ledgers (shards of one fleet) read as one stream, each record once."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator

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


class LedgerShards:
    """Iterates the records of several ledgers in order, dropping repeated ``record_id``s.

    A record id is ``<trace_id>:<span_id>`` of the billed span, the ledger's idempotency
    key: a span delivered to two shards (a Collector retry after a re-route) is one call.
    ``duplicates`` counts the records dropped so far.
    """

    def __init__(self, files: list[Path], warn: Warn | None = None) -> None:
        self.files = list(files)
        self.warn = warn or default_warn
        self.duplicates = 0

    def __iter__(self) -> Iterator[dict]:
        if len(self.files) == 1:  # one ledger: as before, no id set to hold
            yield from iter_records(self.files[0], self.warn)
            return
        seen: set[str] = set()
        for path in self.files:
            for record in iter_records(path, self.warn):
                rid = record["record_id"]
                if rid in seen:
                    self.duplicates += 1
                    continue
                seen.add(rid)
                yield record
