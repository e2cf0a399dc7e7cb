"""Reading the billing ledger: streaming its records, and picking records by session and day.

Reading is one streaming pass with orjson. A torn last line (a writer killed mid-write)
is skipped with a warning; the next append (``ledger.py``) terminates it first so it never
swallows a good record.
"""

from __future__ import annotations

import codecs
import itertools
import os
import stat
import warnings
from datetime import date, datetime, timezone
from pathlib import Path
from typing import IO, Callable, Iterable, Iterator, Mapping

import orjson

from otel_agents.persistence.tree_shape import TOKEN_KEYS

# A ledger record's fields that hold an object, flattened in CSV as <field>_<key>.
CSV_NESTED = ("tokens", "repriced")
# The fields of a ledger record, in CSV export's column order. Every field the record writer
# (ledger_records.py) can give has a column: tests/persistence/test_ledger_read.py checks it.
CSV_COLUMNS = (
    "record_id", "ts", "session_id", "trace_id", "span_id", "run", "path", "agent_id", "agent_name",
    "call_path", "type", "status", "latency_ms", "error",
    "provider", "model", "response_model", "attempt",
    *(f"tokens_{k}" for k in TOKEN_KEYS),
    "cost_usd", "price_source", "tool", "chars_in", "chars_out",
    # Optional fields, at the end so existing columns keep their places.
    "served_provider", "upstream_cost_usd", "upstream_inference_cost_usd", "price_id", "tool_provider",
    "usage_estimated",
    "repriced_cost_usd", "repriced_price_source",  # a re-priced record's call-time price
)

Warn = Callable[[str], None]


class LedgerError(ValueError):
    """A record that cannot go into the ledger, or a ledger that cannot be opened (one line)."""


def unopenable(billing_file: Path, exc: OSError) -> LedgerError:
    return LedgerError(f"cannot open the billing ledger {billing_file}: {exc.strerror or exc}")


def not_a_ledger(billing_file: Path) -> str | None:
    """Why a file already at the ledger's path is not a ledger (its first whole line is no record), or None.

    Empty, missing, or one torn line that begins as our writer begins a record (a first write cut short,
    which the next append ends) is a ledger.
    One line is read, so a mistyped ``--billing-file`` naming another file is refused before anything
    is appended to it.
    """
    try:
        # A device or a pipe is never a ledger: it would be made private, replaced by a rebuild, or
        # block the read below (stat follows a symlink to what it names, which is what is written).
        mode = os.stat(billing_file).st_mode
        if stat.S_ISDIR(mode):
            return None  # no file: opening it for writing fails, and that error names it
        if not stat.S_ISREG(mode):
            return f"{billing_file} is not a billing ledger (not a regular file)"
        with open(billing_file, "rb") as fh:
            line = fh.readline(_FIRST_LINE_LIMIT)
    except (FileNotFoundError, NotADirectoryError):
        return None  # nothing there yet; whether it can be created is the writability check's to say
    except OSError as exc:
        return f"cannot read {billing_file}: {exc.strerror or exc}"
    return _first_line_problem(billing_file, line)


def _first_line_problem(billing_file: Path, line: bytes) -> str | None:
    """Why ``line`` (the file's first, read up to ``_FIRST_LINE_LIMIT`` bytes) shows it is no ledger, or None."""
    if not line.endswith(b"\n"):
        if len(line) >= _FIRST_LINE_LIMIT:
            return f"{billing_file} is not a billing ledger (its first line is longer than any ledger record)"
        if _torn_record(line):
            return None  # empty, or a first write cut short (the next append cuts or ends it)
        return f"{billing_file} is not a billing ledger (its first line is not a ledger record)"
    if record_id_of(line) is not None:
        return None
    return f"{billing_file} is not a billing ledger (its first line is not a ledger record)"


def check_readable_ledger(billing_file: Path) -> None:
    """LedgerError if a regular file at ``billing_file`` is not a ledger, judged as ``not_a_ledger`` judges it.

    For readers that must refuse before writing anything (an export's CSV header, the records of
    an earlier shard). Missing, unopenable or not a regular file is left to :func:`iter_records`:
    the first is no records yet, the second its own error, and a pipe's first line can be read
    only once, so it is checked as it is streamed.
    """
    try:
        if not stat.S_ISREG(os.stat(billing_file).st_mode):
            return
        with open(billing_file, "rb") as fh:
            line = fh.readline(_FIRST_LINE_LIMIT)
    except OSError:
        return
    reason = _first_line_problem(billing_file, line)
    if reason is not None:
        raise LedgerError(reason)


_ID_PREFIX = b'{"record_id":"'


def _torn_record(line: bytes) -> bool:
    """Whether an unterminated first line can be what our writer left when killed mid-line: every
    line it writes starts with ``_ID_PREFIX``. Anything else (a note, a settings file, gzip bytes)
    is another file, which an append would cut and a rebuild replace."""
    if _ID_PREFIX.startswith(line):
        return True  # empty, or cut inside the prefix
    if not line.startswith(_ID_PREFIX):
        return False
    try:
        # Not final: the cut may fall inside a character's bytes.
        codecs.getincrementaldecoder("utf-8")().decode(line, final=False)
    except UnicodeDecodeError:
        return False
    return True


def record_id_of(line: bytes) -> str | None:
    """A ledger line's record id (None: not a record), read from its start without a full parse
    when the writer put it first (it always does)."""
    if line.startswith(_ID_PREFIX):
        end = line.find(b'"', len(_ID_PREFIX))
        if end > 0 and b"\\" not in line[len(_ID_PREFIX) : end]:
            return line[len(_ID_PREFIX) : end].decode()
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    rid = value.get("record_id") if isinstance(value, dict) else None
    return rid if isinstance(rid, str) else None


# A ledger line is a few hundred bytes; 1 MiB leaves room for any record's long error text.
_FIRST_LINE_LIMIT = 1 << 20


def default_warn(message: str) -> None:
    warnings.warn(message, stacklevel=3)


def iter_records(
    billing_file: Path, warn: Warn | None = None, start: int = 0, end: int | None = None
) -> Iterator[dict]:
    """Stream the ledger's records; unreadable lines are skipped with a warning naming them.

    A file whose first line is no record is not a ledger at all (LedgerError, as ``not_a_ledger``
    tells writers), not one damaged line per line. ``start``/``end`` (byte offsets on line
    boundaries) read one slice of the file; only the slice at 0 checks that first line.
    """
    warn = warn or default_warn
    billing_file = Path(billing_file)
    try:
        fh = open(billing_file, "rb")
    except FileNotFoundError:
        return
    except OSError as exc:
        raise unopenable(billing_file, exc) from None
    with fh:
        number = _lines_before(fh, start) if start else 0
        if start:
            fh.seek(start)  # only then: a pipe (``<(zcat old.jsonl.gz)``) cannot seek, and is read from its start
        lines: Iterable[bytes] = fh
        if start == 0:
            first = fh.readline(_FIRST_LINE_LIMIT)  # bounded: a huge first line is refused, not read whole
            reason = _first_line_problem(billing_file, first)
            if reason is not None:
                raise LedgerError(reason)
            lines = itertools.chain([first], fh) if first else fh
        position = start
        loads = orjson.loads
        for number, line in enumerate(lines, number + 1):
            if end is not None:
                if position >= end:
                    return
                position += len(line)
            try:
                record = loads(line)
            except orjson.JSONDecodeError:
                if not line.strip():
                    continue
                torn = "a torn last line" if not line.endswith(b"\n") else "an unreadable line"
                warn(f"{billing_file}:{number}: skipped {torn}")
                continue
            if type(record) is not dict or "record_id" not in record:
                warn(f"{billing_file}:{number}: skipped a line that is not a ledger record")
                continue
            yield record


def _lines_before(fh: IO[bytes], offset: int) -> int:
    fh.seek(0)
    count, remaining = 0, offset
    while remaining > 0:
        chunk = fh.read(min(remaining, 1 << 22))
        if not chunk:
            break
        count += chunk.count(b"\n")
        remaining -= len(chunk)
    return count


def read_records(billing_file: Path, warn: Warn | None = None) -> list[dict]:
    return list(iter_records(billing_file, warn))


def record_day(record: Mapping) -> str:
    """The UTC day (YYYY-MM-DD) of a record's ``ts`` (ISO 8601 text, or epoch s/ms/ns)."""
    ts = record.get("ts")
    if isinstance(ts, str):
        if len(ts) == 10 or ts.endswith("Z") or ts.endswith("+00:00"):
            return ts[:10]  # the common case, without parsing
        try:
            parsed = datetime.fromisoformat(ts.replace("Z", "+00:00"))
        except ValueError:
            return ""
        if parsed.tzinfo is not None:
            parsed = parsed.astimezone(timezone.utc)
        return parsed.date().isoformat()
    if isinstance(ts, (int, float)) and not isinstance(ts, bool):
        seconds = ts / 1e9 if ts > 1e14 else ts / 1e3 if ts > 1e11 else ts
        return datetime.fromtimestamp(seconds, timezone.utc).date().isoformat()
    return ""


def filter_records(
    records: Iterable[dict],
    since: date | None = None,
    until: date | None = None,
    session: str | None = None,
) -> Iterator[dict]:
    """Records of one session and/or between two UTC days, both inclusive."""
    lo = since.isoformat() if since else None
    hi = until.isoformat() if until else None
    for record in records:
        if session is not None and record.get("session_id") != session:
            continue
        if lo is not None or hi is not None:
            day = record_day(record)
            if (lo is not None and day < lo) or (hi is not None and day > hi):
                continue
        yield record

