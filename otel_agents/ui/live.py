"""``/api/sessions/{id}/live``: server-sent events fed by following spans.jsonl and events.jsonl by byte offset.

Both files are append-only and flushed per line, so a byte offset into each is a cursor
that never skips a line: every message's ``id:`` is ``<spans offset>.<events offset>``,
and a reconnecting EventSource (``Last-Event-ID``) resumes from it. Only whole lines
are read; a file that became shorter (replaced) is read again from its start.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from pathlib import Path
from typing import Any, AsyncIterator

import orjson
from starlette.concurrency import run_in_threadpool

from otel_agents.ui.loaded import SessionCache
from otel_agents.ui.security import ApiError
from otel_agents.ui.sessions_api import ui_status
from otel_agents.persistence.ownership import owner_of

POLL_S = 0.1
HEARTBEAT_S = 10.0
STATUS_EVERY_S = 1.0  # a writer that dies changes no file: liveness is asked of the lock this often
CURSOR = re.compile(r"^([0-9]{1,15})\.([0-9]{1,15})$")
READ_LIMIT = 8 << 20  # bytes read per file per poll: a huge backlog arrives in several messages
READ_BACK = 64 << 10  # bytes read at a time backwards from a file's end, for its last newline


def parse_cursor(value: str) -> tuple[int, int]:
    match = CURSOR.match(value.strip())
    if not match:
        raise ApiError(400, f"bad cursor {value[:40]!r}: <spans offset>.<events offset> expected")
    return int(match[1]), int(match[2])


def current_cursor(directory: Path) -> tuple[int, int]:
    """Where the files' whole lines end now: a line still being written is streamed once it is whole."""
    return _whole_lines_end(directory / "spans.jsonl"), _whole_lines_end(directory / "events.jsonl")


def _whole_lines_end(path: Path) -> int:
    try:
        with open(path, "rb") as fh:
            end = fh.seek(0, 2)
            while end > 0:  # backwards to the last newline: one read of the tail, unless a line is longer
                start = max(0, end - READ_BACK)
                fh.seek(start)
                newline = fh.read(end - start).rfind(b"\n")
                if newline >= 0:
                    return start + newline + 1
                end = start
            return 0
    except OSError:
        return 0


def read_lines(path: Path, offset: int) -> tuple[list[bytes], int]:
    """Whole lines after ``offset`` and the offset after the last of them (a torn tail waits for its newline)."""
    try:
        size = path.stat().st_size
    except OSError:
        return [], offset
    if size < offset:
        offset = 0  # the file was replaced: read it again (rows are upserts, so repeats are harmless)
    if size == offset:
        return [], offset
    with open(path, "rb") as fh:
        fh.seek(offset)
        data = fh.read(min(size - offset, READ_LIMIT))
    end = data.rfind(b"\n")
    if end < 0:
        return [], offset
    return data[:end].split(b"\n"), offset + end + 1


def spans_named(lines: list[bytes]) -> list[str]:
    """Span ids that started or ended in these journal lines, in order."""
    seen: dict[str, None] = {}
    for line in lines:
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            span_id = value.get("start") or value.get("end")
            if isinstance(span_id, str):
                seen[span_id] = None
    return list(seen)


def messages_named(lines: list[bytes]) -> list[str]:
    out = []
    for line in lines:
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict) and isinstance(value.get("message_id"), str):
            out.append(value["message_id"])
    return out


def _event(name: str | None, data: Any, cursor: tuple[int, int] | None) -> bytes:
    out = b""
    if cursor is not None:
        out += f"id: {cursor[0]}.{cursor[1]}\n".encode()
    if name is not None:
        out += f"event: {name}\n".encode()
    return out + b"data: " + orjson.dumps(data) + b"\n\n"


def _gone(session_id: str, cursor: tuple[int, int]) -> bytes:
    """The stream's last message once the session was removed (``sessions rm``): the page says so and stops
    following, where a plain end would have the browser reconnect to a 404 every second."""
    return _event("gone", {"error": f"session {session_id!r} was removed"}, cursor)


def _rows(cache: SessionCache, session_id: str, span_ids: list[str]) -> list[dict[str, Any]]:
    """Rows of the changed spans and of their ancestors (whose counts and inclusive totals changed), parents first."""
    session = cache.get(session_id)
    index = session.index
    wanted: dict[str, int] = {}
    for span_id in span_ids:
        if span_id not in index.entries:
            continue
        chain = index.ancestors(span_id)
        for depth, ancestor in enumerate(chain):
            wanted.setdefault(ancestor, depth)
        wanted[span_id] = len(chain)
    return [index.row(span_id) for span_id in sorted(wanted, key=lambda s: wanted[s])]


def _interrupted_rows(cache: SessionCache, session_id: str) -> list[dict[str, Any]]:
    """Rows of the spans a dead writer left open (now shown interrupted) and of their ancestors: its death changed
    no file, so no line names them, and a page would keep showing them running."""
    try:
        index = cache.get(session_id).index
        return _rows(cache, session_id, [s for s, e in index.entries.items() if e.node.get("status") == "interrupted"])
    except ApiError:
        return []  # unreadable or removed: the next poll says so


def _status(cache: SessionCache, session_id: str, directory: Path) -> dict[str, Any] | None:
    """The session's status as its row and its detail say it (``SessionCache.listed_meta``); None once it
    was removed."""
    from otel_agents.persistence.store import SessionListing, SessionStore, StoreError

    try:
        meta, problem = SessionStore(directory).read_meta(), None
    except StoreError as exc:
        meta, problem = None, str(exc)
    listed = cache.listed_meta(SessionListing(session_id, directory, meta, problem))
    status = {"status": ui_status(listed, directory), "live": owner_of(directory) is not None}
    return status if directory.is_dir() else None


async def _new_lines(cache: SessionCache, session_id: str, directory: Path,
                     at: tuple[int, int]) -> tuple[list[bytes], tuple[int, int], bool]:
    """The events for the lines after cursor ``at``, the cursor after them, and whether any line was read.

    Raises ApiError when the session was removed or became unreadable.
    """
    span_lines, spans_next = read_lines(directory / "spans.jsonl", at[0])
    event_lines, events_next = read_lines(directory / "events.jsonl", at[1])
    cursor = (spans_next, events_next)
    out = []
    changed = spans_named(span_lines)
    if changed:
        rows = await run_in_threadpool(_rows, cache, session_id, changed)
        out.append(_event("nodes", {"nodes": rows}, cursor))
    if event_lines:
        out.append(_event("records", {"message_ids": messages_named(event_lines)}, cursor))
    if not out and cursor != at:
        out.append(_event("cursor", {}, cursor))  # lines that named nothing: the cursor still moves on
    return out, cursor, bool(span_lines or event_lines)


async def follow(cache: SessionCache, session_id: str, start: tuple[int, int],
                 disconnected, stopping: threading.Event | None = None) -> AsyncIterator[bytes]:
    """The event stream of one session until the client goes away or the server stops (``stopping`` set).

    Lines after cursor ``start`` are streamed. A status saying the writer is gone (``live``
    false) comes after every line it wrote and after the rows of the spans it left open (interrupted): its last lines may land between a poll's read
    and its look at the owner, so they are read once more before that status is sent.
    """
    directory = cache.directory(session_id)
    cursor = start
    yield b"retry: 1000\n\n"
    last_status: dict[str, Any] | None = None
    status_at = heartbeat_at = 0.0
    # A stream left running at shutdown outlived the server's graceful timeout, then died in a traceback.
    while not (stopping is not None and stopping.is_set()) and not await disconnected():
        now = time.monotonic()
        try:
            events, cursor, read_any = await _new_lines(cache, session_id, directory, cursor)
        except ApiError:
            if not directory.is_dir():
                yield _gone(session_id, cursor)
            return  # unreadable now: the client reconnects and is told why, in one line
        for event in events:
            yield event
        sent = bool(events)
        if sent or now - status_at >= STATUS_EVERY_S:
            status_at = now
            status = await run_in_threadpool(_status, cache, session_id, directory)
            if status is None:
                yield _gone(session_id, cursor)
                return
            if status != last_status:
                more = not status["live"]
                while more:  # to the files' ends (a read takes at most READ_LIMIT of each)
                    try:
                        last_lines, cursor, more = await _new_lines(cache, session_id, directory, cursor)
                    except ApiError:
                        if not directory.is_dir():
                            yield _gone(session_id, cursor)
                        return
                    for event in last_lines:
                        yield event
                if not status["live"]:
                    # Open spans of a writer that died are interrupted now, though no line says so.
                    rows = await run_in_threadpool(_interrupted_rows, cache, session_id)
                    if rows:
                        yield _event("nodes", {"nodes": rows}, cursor)
                last_status = status
                yield _event("status", status, cursor)
                sent = True
        if sent:
            heartbeat_at = now
        elif now - heartbeat_at >= HEARTBEAT_S:
            heartbeat_at = now
            yield b": heartbeat\n\n"
        if not read_any:
            await asyncio.sleep(POLL_S)
