"""Appending to the billing ledger ``billing.jsonl``: locked, idempotent by record id, atomic rewrite.

Every LLM attempt and tool call (failed ones too) of every run, appended at the
run's end. Writers hold an exclusive ``flock`` for the whole read-ids-then-append,
so concurrent processes interleave whole lines only and a ``record_id``
(``<trace_id>:<span_id>``) is never written twice: re-export, a retried flush,
importing the same trace and recovery after a crash are all harmless. A line a
killed writer left torn is cut by the next append (a whole record missing only its newline is kept), and a file that is not a ledger is never
opened for append (``ledger_read.not_a_ledger``). Reading is ``ledger_read.py``;
summaries and exports are ``ledger_summary.py``.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Callable, Iterable, Mapping

import orjson

from otel_agents.persistence.ledger_read import (
    CSV_COLUMNS, LedgerError, Warn, iter_records, not_a_ledger, record_id_of, unopenable,
)
from otel_agents.persistence.private import FILE_MODE, make_private_dir, private_fd
from otel_agents.persistence.tree_shape import TOKEN_KEYS
from otel_agents.tracing.records import storable_json
from otel_agents.tracing.redaction import MARKER, is_secret_key, redact, redact_text_once


def _line(record: Mapping, seen: dict[str, str] | None = None) -> bytes:
    """``seen``: texts already redacted in this batch (a run's records repeat most of theirs:
    session, trace, agent, model), each redacted once."""
    record_id = record.get("record_id")
    if not isinstance(record_id, str) or not record_id:
        raise LedgerError(f"ledger record without a record_id: {dict(record)!r:.200}")
    # record_id first, so that reading the ids back never needs a full parse.
    ordered = {"record_id": record_id, **{k: v for k, v in record.items() if k != "record_id"}}
    return storable_json(_redacted(ordered, {} if seen is None else seen)) + b"\n"


# The ledger's own field names, none of them a secret's: not asked about again for every record.
_OWN_KEYS = frozenset(k for k in (*CSV_COLUMNS, "tokens", *TOKEN_KEYS) if not is_secret_key(k))


def _redacted(record: Mapping, seen: dict[str, str]) -> dict:
    """``redact(record)``, with the ledger's own fields taken the short way."""
    out = {}
    for key, value in record.items():
        kind = type(value)
        if key not in _OWN_KEYS:
            out[key] = MARKER if isinstance(key, str) and is_secret_key(key) else redact(value)
        elif kind is str:
            out[key] = redact_text_once(value, seen)
        elif kind is dict and all(k in _OWN_KEYS and type(v) is int for k, v in value.items()):
            out[key] = dict(value)  # the token counts
        else:
            out[key] = redact(value)
    return out


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
            rid = record_id_of(line)
            if rid is not None:
                ids.add(rid)
            if limit is not None and end - offset >= limit:
                break
    return ids, end, None, last


def _whole_record(tail: bytes) -> bool:
    """Whether the bytes after the last newline are a whole ledger record (a JSON object with its id)."""
    try:
        value = orjson.loads(tail)
    except orjson.JSONDecodeError:
        return False
    return isinstance(value, dict) and isinstance(value.get("record_id"), str)


def _open_locked(billing_file: Path) -> int:
    """Open for append and take the exclusive lock, on the file that is at the path *now*.

    ``rebuild`` replaces the file by rename; a writer that was waiting on the old file's
    lock must not append to the unlinked inode, so it checks and reopens.
    """
    while True:
        try:
            fd = private_fd(os.open(billing_file, os.O_RDWR | os.O_APPEND | os.O_CREAT, FILE_MODE))
        except OSError as exc:
            raise unopenable(billing_file, exc) from None
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
        seen: dict[str, str] = {}
        lines = [(_line(r, seen), r["record_id"]) for r in records]  # validate before touching the file
        if not lines:
            return 0
        if self._offset == 0:  # nothing of it read yet: it must be a ledger before it is opened (and made private)
            reason = not_a_ledger(self.billing_file)
            if reason is not None:
                raise LedgerError(reason)
        make_private_dir(self.billing_file.parent, own_existing=False)
        fd = _open_locked(self.billing_file)
        try:
            self._catch_up(fd)
            end, torn_at = self._read_new(fd, None)
            if torn_at is not None and _whole_record(os.pread(fd, os.fstat(fd).st_size - torn_at, torn_at)):
                # A whole record whose newline alone is missing (a hand edit, another tool): kept, not cut, as
                # the file's other appenders (line_appender) keep a whole last line.
                _write_all(fd, b"\n")
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
    # Asked of the path as given (stat follows links): a pipe's real path (/proc/PID/fd/pipe:[N]) names nothing.
    reason = not_a_ledger(Path(billing_file))
    if reason is not None:
        raise LedgerError(reason)  # a device renamed over, a stranger's file rewritten: never
    # The file a symlink names is what is replaced: the link stays, and so does what it shares.
    billing_file = Path(os.path.realpath(billing_file))
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

