"""A derived index of a large events.jsonl, so that a cold view parses only the lines it shows.

Parsing every line is most of a cold view of a large session (orjson over 100,000
lines is ~0.2 s), and the index needs only each line's message id and agent. After
a view has read a file the plain way, it saves the ``Layout`` (ids, each agent's
line numbers, entry counts, creations, system prompts) and each line's byte offset
in a cache directory outside the session directory. The next view of the same,
unchanged file reads that back and parses a line when a view first reads it.

The cache is never required and never trusted beyond what it was derived from:
- it is saved only when every line took the plain path (``orjson.loads`` of the line,
  no damage, no warning) and the records are the file's lines, in order (no replayed
  lines, nothing to sort), so record ``i`` is line ``i``;
- it is used only while events.jsonl has the size, mtime, ctime, inode and device it
  had when it was read; any change, or anything unreadable, means the plain path;
- it is written to a temporary file and renamed, so a reader sees a whole file or none,
  and a checksum over its body catches a file damaged since.
"""

from __future__ import annotations

import hashlib
import operator
import os
import sys
import time
import zlib
from array import array
from bisect import bisect_left
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import orjson

from otel_agents.views.index import Layout, Record, SessionIndex

FORMAT = 1
MIN_LINES = 10_000  # smaller files are read in a few tens of milliseconds: not worth a file
MAX_FILES = 32  # newest cache files kept; older ones are removed when one is written
SUFFIX = ".view-index"
_INT = "q"  # array type code of every saved integer (8 bytes)

FileKey = tuple[int, int, int, int, int]


def file_key(path: Path) -> FileKey | None:
    """What must be unchanged for a saved index to describe ``path``: size, mtime, ctime, inode, device."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def cache_file(cache_dir: Path, events: Path) -> Path:
    digest = hashlib.sha256(os.fsencode(events.resolve())).hexdigest()[:32]
    return cache_dir / f"{digest}{SUFFIX}"


# --------------------------------------------------------------------------- records parsed on first read


class LineRecords(Sequence[Record]):
    """Record ``i`` is ``orjson.loads`` of line ``i`` of ``data``, parsed when first read."""

    def __init__(self, data: bytes, offsets: Sequence[int]):
        self._data = data
        self._offsets = offsets  # line i is data[offsets[i]:offsets[i + 1] - 1]
        self._parsed: list[Record | None] = [None] * (len(offsets) - 1)

    def __len__(self) -> int:
        return len(self._parsed)

    def __getitem__(self, position: int) -> Record:  # type: ignore[override]
        record = self._parsed[position]
        if record is None:
            start, end = self._offsets[position], self._offsets[position + 1] - 1
            record = self._parsed[position] = orjson.loads(self._data[start:end])
        return record

    def __iter__(self) -> Iterator[Record]:
        return iter(self.take(range(len(self))))

    def take(self, positions: Iterable[int]) -> list[Record]:
        """``[self[p] for p in positions]`` in one loop (an agent's whole history is tens of thousands)."""
        parsed, data, offsets, loads = self._parsed, self._data, self._offsets, orjson.loads
        out = []
        for position in positions:
            record = parsed[position]
            if record is None:
                record = parsed[position] = loads(data[offsets[position]:offsets[position + 1] - 1])
            out.append(record)
        return out


class RecordsById(Mapping[str, Record]):
    """``rows`` by message id (ids are unique: the file had no replayed lines).

    Ids in increasing string order are found by bisection; others through a dict
    built on first use (~15 ms at 100k, which most views need not pay).
    """

    def __init__(self, rows: LineRecords, ids: list[str], ids_sorted: bool):
        self._rows = rows
        self._ids = ids
        self._sorted = ids_sorted
        self._positions: dict[str, int] | None = None

    def _position(self, message_id: object) -> int | None:
        if self._sorted:
            if type(message_id) is not str:
                return None  # every id is a str
            i = bisect_left(self._ids, message_id)
            return i if i < len(self._ids) and self._ids[i] == message_id else None
        if self._positions is None:
            self._positions = dict(zip(self._ids, range(len(self._ids))))
        return self._positions.get(message_id)  # type: ignore[call-overload]

    def __getitem__(self, message_id: str) -> Record:
        position = self._position(message_id)
        if position is None:
            raise KeyError(message_id)
        return self._rows[position]

    def get(self, message_id: str, default: Any = None) -> Any:  # type: ignore[override]
        position = self._position(message_id)
        return default if position is None else self._rows[position]

    def __contains__(self, message_id: object) -> bool:
        return self._position(message_id) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


# --------------------------------------------------------------------------- saving and loading


@dataclass
class Cached:
    layout: Layout
    rows: LineRecords
    by_id: RecordsById


def cached_index(events: Path, warn: Any, cache_dir: Path) -> SessionIndex:
    """events.jsonl's index: the saved one while the file is unchanged, else built and saved."""
    from otel_agents.views.loading import read_event_file

    cached = load(cache_dir, events)
    if cached is not None:
        return SessionIndex(cached.layout, cached.rows, cached.by_id)
    key = file_key(events)  # before reading: a file that changes meanwhile is not cached
    records, lines = read_event_file(events, warn)
    index = SessionIndex.build(records)
    if lines is not None:
        save(cache_dir, events, key, lines, records, index)
    return index


def save(
    cache_dir: Path, events: Path, key: FileKey | None, lines: list[bytes], records: list[Record], index: SessionIndex
) -> bool:
    """Save the layout of ``index``; False when there is nothing (safe) to save.

    ``records`` are ``orjson.loads`` of each of ``lines``, read from ``events`` while
    it had ``key``; ``index`` was built from ``records``.
    """
    if len(lines) < MIN_LINES or key is None or not _line_for_line(records, index.rows):
        return False
    offsets = array(_INT, accumulate(map((1).__add__, map(len, lines)), initial=0))
    if offsets[-1] - key[0] not in (0, 1) or file_key(events) != key:
        return False  # changed while it was read
    ids = index.layout.ids
    joined = "\n".join(ids)
    if joined.count("\n") != len(lines) - 1:
        return False  # an id holding a newline
    ids_sorted = all(map(operator.lt, ids, ids[1:]))
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        blob = _encode(key, offsets, index.layout, joined.encode(), ids_sorted)
        _write_atomically(cache_file(cache_dir, events), blob)
        _prune(cache_dir)
    except OSError:
        return False
    return True


def _line_for_line(records: list[Record], rows: Sequence[Record]) -> bool:
    """Whether the index's records are the file's lines, in order: none replayed, dropped or moved."""
    return len(rows) == len(records) and all(map(operator.is_, rows, records))


def load(cache_dir: Path, events: Path) -> Cached | None:
    """The saved index of ``events`` if it still describes the file, else None (read the plain way)."""
    key = file_key(events)
    if key is None:
        return None
    try:
        blob = cache_file(cache_dir, events).read_bytes()
    except OSError:
        return None
    try:
        layout, offsets, ids_sorted = _decode(blob, key)
        data = events.read_bytes()
    except (OSError, ValueError, KeyError, TypeError, IndexError, orjson.JSONDecodeError):
        return None
    if len(data) != key[0] or file_key(events) != key or offsets[-1] - len(data) not in (0, 1):
        return None  # changed since the key was taken
    rows = LineRecords(data, offsets)
    return Cached(layout, rows, RecordsById(rows, layout.ids, ids_sorted))


def _encode(key: FileKey, offsets: array, layout: Layout, ids: bytes, ids_sorted: bool) -> bytes:
    agents = [
        [agent, len(positions), layout.entries[agent], layout.created.get(agent), layout.system.get(agent)]
        for agent, positions in layout.agents.items()
    ]
    positions = array(_INT, [p for agent_positions in layout.agents.values() for p in agent_positions])
    body = b"".join([offsets.tobytes(), ids, positions.tobytes()])
    header = {
        "format": FORMAT, "byteorder": sys.byteorder, "key": list(key), "lines": len(offsets) - 1,
        "ids": len(ids), "ids_sorted": ids_sorted, "agents": agents, "crc32": zlib.crc32(body),
    }
    return orjson.dumps(header) + b"\n" + body


def _decode(blob: bytes, key: FileKey) -> tuple[Layout, array, bool]:
    end = blob.index(b"\n")
    header: dict[str, Any] = orjson.loads(blob[:end])
    if header["format"] != FORMAT or header["byteorder"] != sys.byteorder or tuple(header["key"]) != key:
        raise ValueError("another file or format")
    lines, id_bytes = header["lines"], header["ids"]
    body = memoryview(blob)[end + 1:]
    if zlib.crc32(body) != header["crc32"]:
        raise ValueError("damaged cache file")
    offsets = _ints(body[: 8 * (lines + 1)])
    ids = bytes(body[8 * (lines + 1): 8 * (lines + 1) + id_bytes]).decode().split("\n")
    positions = _ints(body[8 * (lines + 1) + id_bytes:])
    if len(offsets) != lines + 1 or len(ids) != lines or len(positions) != sum(a[1] for a in header["agents"]):
        raise ValueError("truncated cache file")
    layout, start = Layout(ids), 0
    for agent, count, entries, created, system in header["agents"]:
        layout.agents[agent] = positions[start: start + count].tolist()
        layout.entries[agent] = entries
        if created is not None:
            layout.created[agent] = created
        if system is not None:
            layout.system[agent] = system
        start += count
    return layout, offsets, header["ids_sorted"] is True


def _ints(buffer: memoryview) -> array:
    values = array(_INT)
    values.frombytes(buffer)
    return values


def _write_atomically(path: Path, data: bytes) -> None:
    import tempfile  # only when saving

    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _prune(cache_dir: Path) -> None:
    """Keep the newest ``MAX_FILES`` cache files (sessions come and go; their caches must not pile up),
    and drop temporary files a killed writer left behind."""
    files, stale = [], time.time_ns() - 3600 * 10**9
    for path in [*cache_dir.glob(f"*{SUFFIX}"), *cache_dir.glob(".*.tmp")]:
        try:
            files.append((path.stat().st_mtime_ns, path))
        except OSError:
            continue
    cached = sorted((f for f in files if f[1].suffix == SUFFIX), reverse=True)
    leftovers = [f for f in files if f[1].suffix == ".tmp" and f[0] < stale]
    for _, path in cached[MAX_FILES:] + leftovers:
        path.unlink(missing_ok=True)
