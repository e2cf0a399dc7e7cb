"""The billing ledger: ``billing.jsonl``, one accounting record per line.

Every LLM attempt and tool call (failed ones too) of every run, appended at the
run's end. Writers hold an exclusive ``flock`` for the whole read-ids-then-append,
so concurrent processes interleave whole lines only and a ``record_id``
(``<trace_id>:<span_id>``) is never written twice: re-export, a retried flush,
importing the same trace and recovery after a crash are all harmless.

Reading is one streaming pass with orjson. A torn last line (a writer killed
mid-write) is skipped with a warning; the next append terminates it first so
it never swallows a good record.

Costs are summed as integers of 1e-12 USD (the runtime rounds each cost to 12
decimals), so totals are exact and reconcile to the cent; a null cost is an
unpriced call, never a zero.
"""

from __future__ import annotations

import csv
import fcntl
import multiprocessing
import os
import threading
import warnings
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import IO, Callable, Iterable, Iterator, Mapping

import orjson

from otel_agents.persistence.private import FILE_MODE, make_private_dir, private_fd
from otel_agents.persistence.tree_shape import TOKEN_KEYS
from otel_agents.tracing.redaction import MARKER, is_secret_key, redact, redact_text

GROUP_BY = ("session", "agent", "model", "day")
_COST_SCALE = 10**12  # picodollars: each cost has at most 12 decimals
_ID_PREFIX = b'{"record_id":"'

# Column order for CSV export (tokens flattened as tokens_<key>).
CSV_COLUMNS = (
    "record_id", "ts", "session_id", "trace_id", "span_id", "run", "path", "agent_id", "agent_name",
    "call_path", "type", "status", "latency_ms", "error",
    "provider", "model", "response_model", "attempt",
    *(f"tokens_{k}" for k in TOKEN_KEYS),
    "cost_usd", "price_source", "tool", "chars_in", "chars_out",
)

Warn = Callable[[str], None]


class LedgerError(ValueError):
    """A record that cannot go into the ledger, or a ledger that cannot be opened (one line)."""


def _unopenable(billing_file: Path, exc: OSError) -> LedgerError:
    return LedgerError(f"cannot open the billing ledger {billing_file}: {exc.strerror or exc}")


def _default_warn(message: str) -> None:
    warnings.warn(message, stacklevel=3)


# --- writing -----------------------------------------------------------------------------


def _line(record: Mapping) -> bytes:
    record_id = record.get("record_id")
    if not isinstance(record_id, str) or not record_id:
        raise LedgerError(f"ledger record without a record_id: {dict(record)!r:.200}")
    # record_id first, so that reading the ids back never needs a full parse.
    ordered = {"record_id": record_id, **{k: v for k, v in record.items() if k != "record_id"}}
    return orjson.dumps(_redacted(ordered)) + b"\n"


# The ledger's own field names, none of them a secret's: not asked about again for every record.
_OWN_KEYS = frozenset(k for k in (*CSV_COLUMNS, "tokens", *TOKEN_KEYS) if not is_secret_key(k))


def _redacted(record: Mapping) -> dict:
    """``redact(record)``, with the ledger's own fields taken the short way."""
    out = {}
    for key, value in record.items():
        kind = type(value)
        if key not in _OWN_KEYS:
            out[key] = MARKER if isinstance(key, str) and is_secret_key(key) else redact(value)
        elif kind is str:
            out[key] = redact_text(value)
        elif kind is dict and all(k in _OWN_KEYS and type(v) is int for k, v in value.items()):
            out[key] = dict(value)  # the token counts
        else:
            out[key] = redact(value)
    return out


def _record_id_of(line: bytes) -> str | None:
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


def _scan_ids(fd: int, offset: int, limit: int | None = None) -> tuple[set[str], int, int | None, int]:
    """Record ids of the whole lines from ``offset``: (ids, end of the last whole line, torn line
    start, start of the last whole line).

    A line without its newline at the end of the file is what a writer killed mid-write left
    (or, read without the lock, a line being written): its id is not counted, so the record
    is written whole again by the next flush of the same run. ``limit`` stops after about that
    many bytes, at a line's end (a slice; the torn start is then None).
    """
    ids: set[str] = set()
    end = last = offset
    with os.fdopen(os.dup(fd), "rb") as fh:
        fh.seek(offset)
        for line in fh:
            if not line.endswith(b"\n"):
                return ids, end, end, last
            last = end
            end += len(line)
            rid = _record_id_of(line)
            if rid is not None:
                ids.add(rid)
            if limit is not None and end - offset >= limit:
                break
    return ids, end, None, last


def _open_locked(billing_file: Path) -> int:
    """Open for append and take the exclusive lock, on the file that is at the path *now*.

    ``rebuild`` replaces the file by rename; a writer that was waiting on the old file's
    lock must not append to the unlinked inode, so it checks and reopens.
    """
    while True:
        try:
            fd = private_fd(os.open(billing_file, os.O_RDWR | os.O_APPEND | os.O_CREAT, FILE_MODE))
        except OSError as exc:
            raise _unopenable(billing_file, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                current = os.stat(billing_file)
            except FileNotFoundError:
                current = None
            opened = os.fstat(fd)
            if current is not None and (current.st_ino, current.st_dev) == (opened.st_ino, opened.st_dev):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def append_records(billing_file: Path, records: Iterable[Mapping]) -> int:
    """Append the records whose ``record_id`` is not in the ledger yet; returns how many.

    One call reads every id in the ledger; a writer that appends again and again keeps a
    :class:`LedgerAppender`.
    """
    return LedgerAppender(billing_file).append(records)


class LedgerAppender:
    """Appends to one ledger for a long-lived writer (the session recorder), remembering its ids.

    A ledger is shared by every session, so reading all of it at each run's end made a
    run end cost the whole billing history (0.3 s at 200,000 records). The appender reads
    it once and afterwards, still under the lock at each append, only what other writers
    appended since. It reads it all again when the file is not the one it read: replaced
    (``billing rebuild``), shorter than what it read, or with another line where its last
    read line began (rewritten in place). Idempotency is as with :func:`append_records`.
    """

    _HEAD = 256  # bytes of the last line read, compared at each append: its record id is unique

    def __init__(self, billing_file: Path):
        self.billing_file = Path(billing_file)
        self.bytes_read = 0  # ledger bytes scanned for ids, all calls together
        self._ids: set[str] = set()
        self._file: tuple[int, int] | None = None  # (st_dev, st_ino) of the file read
        self._offset = 0  # the ids of every whole line before this offset are in _ids
        self._last = 0  # where the last line before _offset starts
        self._head = b""  # the first bytes of that line

    def append(self, records: Iterable[Mapping]) -> int:
        lines = [(_line(r), r["record_id"]) for r in records]  # validate before touching the file
        if not lines:
            return 0
        make_private_dir(self.billing_file.parent, own_existing=False)
        fd = _open_locked(self.billing_file)
        try:
            self._catch_up(fd)
            end, torn_at = self._read_new(fd, None)
            if torn_at is not None:  # cut what a killed writer left half-written (we hold the lock)
                os.ftruncate(fd, torn_at)
            out, new_ids = [], set()
            for line, rid in lines:
                if rid in self._ids or rid in new_ids:
                    continue
                new_ids.add(rid)
                out.append(line)
            if out:
                data = b"".join(out)
                try:
                    _write_all(fd, data)
                    os.fsync(fd)
                except BaseException:
                    # A full disk or a file-size limit mid-batch: take the partial batch back,
                    # so no reader ever sees a torn line (shrinking works in both cases).
                    os.ftruncate(fd, end)
                    raise
                self._ids.update(new_ids)  # only once written: a failed batch is offered again
                self._remember(fd, end + len(data) - len(out[-1]), end + len(data))
            return len(out)
        finally:
            os.close(fd)  # closing releases the lock

    def read_ahead(self, limit: int) -> bool:
        """Read up to about ``limit`` bytes of ids now, without the lock; True once caught up.

        The recorder calls this while it waits for the run, so a run's end reads only the
        records appended meanwhile. A line being written (or torn) is left for the append,
        which reads under the lock: caught up means no whole line is left unread.
        """
        try:
            fd = os.open(self.billing_file, os.O_RDONLY)
        except FileNotFoundError:
            return True
        try:
            self._catch_up(fd)
            if self._offset >= os.fstat(fd).st_size:
                return True
            _, torn_at = self._read_new(fd, limit)
            return torn_at is not None or self._offset >= os.fstat(fd).st_size
        finally:
            os.close(fd)

    def _catch_up(self, fd: int) -> None:
        """Forget what was read if the open file is not what was read."""
        st = os.fstat(fd)
        same = (
            self._file == (st.st_dev, st.st_ino)
            and st.st_size >= self._offset
            and os.pread(fd, len(self._head), self._last) == self._head
        )
        if not same:
            self._ids, self._offset, self._last, self._head = set(), 0, 0, b""
            self._file = (st.st_dev, st.st_ino)

    def _read_new(self, fd: int, limit: int | None) -> tuple[int, int | None]:
        ids, end, torn_at, last = _scan_ids(fd, self._offset, limit)
        self.bytes_read += end - self._offset
        self._ids |= ids
        if end != self._offset:
            self._remember(fd, last, end)
        return end, torn_at

    def _remember(self, fd: int, last: int, end: int) -> None:
        self._offset, self._last = end, last
        self._head = os.pread(fd, min(self._HEAD, end - last), last)


def rewrite_records(
    billing_file: Path,
    rewrite: Callable[[list[dict]], Iterable[Mapping] | None],
    warn: Warn | None = None,
) -> int | None:
    """Replace the whole ledger atomically with ``rewrite(current records)`` (``billing rebuild``).

    The current records are read and the new file renamed over the ledger while the
    lock is held, so a concurrent append lands either before (and is seen by
    ``rewrite``) or after (in the new file), never lost. ``rewrite`` returning None
    leaves the ledger untouched. Returns the number of records written, or None.
    """
    billing_file = Path(billing_file)
    make_private_dir(billing_file.parent, own_existing=False)
    fd = _open_locked(billing_file)
    tmp = billing_file.with_name(f".{billing_file.name}.{os.getpid()}.tmp")
    try:
        new = rewrite(list(iter_records(billing_file, warn)))
        if new is None:
            return None
        data = b"".join(_line(r) for r in new)
        with os.fdopen(private_fd(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)), "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, billing_file)
        dir_fd = os.open(billing_file.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        return data.count(b"\n")
    finally:
        tmp.unlink(missing_ok=True)
        os.close(fd)


# --- reading -----------------------------------------------------------------------------


def iter_records(
    billing_file: Path, warn: Warn | None = None, start: int = 0, end: int | None = None
) -> Iterator[dict]:
    """Stream the ledger's records; unreadable lines are skipped with a warning naming them.

    ``start``/``end`` (byte offsets on line boundaries) read one slice of the file.
    """
    warn = warn or _default_warn
    billing_file = Path(billing_file)
    try:
        fh = open(billing_file, "rb")
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _unopenable(billing_file, exc) from None
    with fh:
        number = _lines_before(fh, start) if start else 0
        fh.seek(start)
        position = start
        loads = orjson.loads
        for number, line in enumerate(fh, number + 1):
            if end is not None:
                if position >= end:
                    return
                position += len(line)
            try:
                record = loads(line)
            except orjson.JSONDecodeError:
                if not line.strip():
                    continue
                torn = "torn last line" if not line.endswith(b"\n") else "unreadable line"
                warn(f"{billing_file}:{number}: skipped a {torn}")
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


# --- summary -----------------------------------------------------------------------------


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


def _aggregate(records: Iterable[dict], key_of: Callable[[dict], str], groups: Groups) -> None:
    width = _TOKENS0 + len(TOKEN_KEYS)
    for record in records:
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
) -> list[SummaryRow]:
    """:func:`summarize` over a ledger file; large files are split across CPU cores.

    Each worker streams one slice (cut at line boundaries) and the partial groups are
    merged, so the result is the same as one pass, only sooner.
    """
    warn = warn or _default_warn
    billing_file = Path(billing_file)
    key_of = _key_function(by)  # validates ``by`` before any work
    try:
        size = billing_file.stat().st_size
    except FileNotFoundError:
        return []
    if workers is None:
        workers = (os.cpu_count() or 1) if size >= PARALLEL_MIN_BYTES else 1
    # fork is only safe without other threads; otherwise stay in this process.
    if workers > 1 and threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        bounds = _slices(billing_file, size, workers)
        if len(bounds) > 1:
            with multiprocessing.get_context("fork").Pool(len(bounds)) as pool:
                parts = pool.starmap(_summarize_slice, [(billing_file, by, filters, a, b) for a, b in bounds])
            groups: Groups = {}
            for part, messages in parts:
                for message in messages:
                    warn(message)
                _merge(groups, part)
            return _rows(groups)
    groups = {}
    _aggregate(filters.apply(iter_records(billing_file, warn)), key_of, groups)
    return _rows(groups)


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


def _summarize_slice(billing_file: Path, by: str | None, filters: Filters, start: int, end: int) -> tuple[Groups, list[str]]:
    messages: list[str] = []
    groups: Groups = {}
    _aggregate(filters.apply(iter_records(billing_file, messages.append, start, end)), _key_function(by), groups)
    return groups, messages


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


# --- export ------------------------------------------------------------------------------


def export_jsonl(records: Iterable[dict], out: IO[bytes]) -> int:
    count = 0
    for record in records:
        out.write(orjson.dumps(record) + b"\n")
        count += 1
    return count


def _csv_cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return orjson.dumps(value).decode()
    return value


def export_csv(records: Iterable[dict], out: IO[str]) -> int:
    """CSV with a fixed header (tokens flattened); empty cells for absent or null fields."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    count = 0
    for record in records:
        tokens = record.get("tokens") or {}
        row = []
        for column in CSV_COLUMNS:
            if column.startswith("tokens_"):
                row.append(_csv_cell(tokens.get(column[7:])) if record.get("type") != "tool" else "")
            else:
                row.append(_csv_cell(record.get(column)))
        writer.writerow(row)
        count += 1
    return count
