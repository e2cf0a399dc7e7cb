"""``tree.json.gz`` bytes: gzip members cut at run boundaries, so a growing tree is compressed only where it changed.

The file is the payload's compact JSON (``orjson.dumps``), gzipped as several
members, which every gzip reader reads as one stream. Members are cut:

- before the first run and after the last one (the session's summary and the meta, which change at every write);
- between runs, once the runs gathered since the last cut hold ``GROUP_BYTES`` of JSON;
- every ``PART_BYTES`` inside a group, so the parts of a large tree compress on several cores.

The cuts depend only on the payload, so equal payloads give equal bytes. A
:class:`TreeEncoder` kept by one writer remembers each member by a digest of the
JSON it holds: the next write of the session compresses the parts that changed (the
running run's, as a rule) and copies the rest, and a resumed session's writer
remembers the members of the file it read. Because the key is the content, a
changed run can never be written from a stale copy.

Members are deflated and inflated by zlib-ng (``zlib_ng``), zlib's format at about half
its compression CPU and a third of its decompression CPU here, a few percent smaller at
the same level. Any file zlib-ng cannot read whole is read by the standard ``gzip``
module, so what a damaged or foreign file gives, or the error it raises, is gzip's.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable, Iterator, Mapping

import orjson
from zlib_ng import gzip_ng, zlib_ng

from otel_agents.tracing.records import storable_json

# Fast and still small: the tree is rewritten at checkpoints, speed matters more than the last percent.
# The 500-call benchmark session's final tree (3.9 MB of JSON): level 6 took 25.7 ms for 237 KB,
# level 5 16.5 ms for 246 KB, level 4 14.8 ms for 283 KB. Members of other levels read and are kept alike.
GZIP_LEVEL = 5
# Deflate looks back only 32 KiB, so cutting members this large costs nothing measurable in size.
GROUP_BYTES = 256 * 1024
PART_BYTES = 1 << 20
# What every member this module writes begins with (no mtime, no name): only those are remembered.
_OUR_HEADER = gzip_ng.compress(b"", compresslevel=GZIP_LEVEL, mtime=0)[:10]
_READ_BYTES = 256 * 1024


def payload_pieces(payload: Mapping[str, Any]) -> tuple[bytes, list[bytes], bytes] | None:
    """``(head, runs, tail)`` with ``head + b",".join(runs) + tail == orjson.dumps(payload)``.

    None when the payload has no ``session.runs`` list to cut at (then it is one piece).
    """
    session = payload.get("session")
    if type(payload) is not dict or type(session) is not dict or type(session.get("runs")) is not list:
        return None
    head = b""
    text = bytearray(b"{")
    for i, (key, value) in enumerate(payload.items()):
        text += b"," if i else b""
        text += orjson.dumps(key) + b":"
        if key != "session":
            text += storable_json(value)
            continue
        text += b"{"
        for j, (session_key, session_value) in enumerate(session.items()):
            text += b"," if j else b""
            text += orjson.dumps(session_key) + b":"
            if session_key == "runs":
                head, text = bytes(text + b"["), bytearray(b"]")
            else:
                text += storable_json(session_value)
        text += b"}"
    text += b"}"
    return head, [storable_json(run) for run in session["runs"]], bytes(text)


def run_groups(runs: Iterable[bytes]) -> Iterator[bytes]:
    """The runs' JSON (with the commas between them) in the groups members are cut from."""
    group = bytearray()
    for number, run in enumerate(runs):
        if number:
            group += b","
        group += run
        if len(group) >= GROUP_BYTES:
            yield bytes(group)
            group = bytearray()
    if group:
        yield bytes(group)


def member_texts(payload: Mapping[str, Any]) -> list[bytes]:
    """The JSON each member of the payload's file holds, in order."""
    pieces = payload_pieces(payload)
    if pieces is None:
        return _parts(storable_json(payload))
    head, runs, tail = pieces
    return [*_parts(head), *(part for group in run_groups(runs) for part in _parts(group)), *_parts(tail)]


def _parts(text: bytes) -> list[bytes]:
    return [text[i:i + PART_BYTES] for i in range(0, len(text), PART_BYTES)] or [b""]


def _member(data: bytes) -> bytes:
    return gzip_ng.compress(data, compresslevel=GZIP_LEVEL, mtime=0)


def _digest(text: bytes) -> bytes:
    return hashlib.sha256(text).digest()  # hardware-accelerated here: a third of blake2b's time


class TreeEncoder:
    """Encodes one session's successive payloads, compressing again only the parts that changed.

    Holds the members of its last write, or of the file it last decompressed
    (about the size of that file), and nothing else.
    """

    def __init__(self) -> None:
        self._members: dict[bytes, bytes] = {}  # digest of a member's JSON -> the member
        self.compressed_bytes = 0  # JSON bytes compressed so far, all writes together

    def encode(self, payload: Mapping[str, Any]) -> bytes:
        texts = member_texts(payload)
        keys = [_digest(text) for text in texts]
        missing = {key: text for key, text in zip(keys, texts) if key not in self._members}
        todo = list(missing.values())
        if len(todo) > 1 and sum(map(len, todo)) > PART_BYTES:  # zlib-ng releases the GIL
            with ThreadPoolExecutor(max_workers=min(len(todo), os.cpu_count() or 1)) as pool:
                fresh = list(pool.map(_member, todo))
        else:
            fresh = [_member(text) for text in todo]
        self.compressed_bytes += sum(map(len, todo))
        members = {**self._members, **dict(zip(missing, fresh))}
        self._members = {key: members[key] for key in keys}  # what this write holds: the next one's copies
        return b"".join(self._members[key] for key in keys)

    def decompress(self, data: bytes) -> bytes:
        """The JSON of a tree file, remembering each of its members this module wrote for the next write.

        Anything this reader does not take (damage, or a header zlib-ng refuses and the gzip
        module reads, such as a reserved flag bit) is read by ``gzip.decompress`` itself, so
        the result, or the error, is always gzip's; such a file lends no members.
        """
        self._members = {}  # filled as members are read; emptied again if gzip has to read the file
        return decompress_tree(data, self._members)


def decompress_tree(data: bytes, remember: dict[bytes, bytes] | None = None) -> bytes:
    """The JSON of a tree file: gzip's answer (or error), read member by member with zlib-ng.

    ``remember``: filled with this module's members by the digest of their JSON.
    """
    try:
        return _inflate_members(data, remember)
    except (zlib_ng.error, EOFError):
        if remember is not None:
            remember.clear()
        return gzip.decompress(data)


def _inflate_members(data: bytes, remember: dict[bytes, bytes] | None) -> bytes:
    texts: list[bytes] = []
    view = memoryview(data)
    end = len(view)
    position = 0
    while position < end:
        if texts and view[position] == 0:
            position += 1  # zero padding after a member, as gzip.decompress allows
            continue
        inflater = zlib_ng.decompressobj(wbits=31)  # one gzip member, its CRC and size checked
        start, chunks = position, []
        while not inflater.eof:  # fed a slice at a time: the rest of the file is never copied
            if position >= end:
                raise EOFError("compressed file ended before the end-of-stream marker was reached")
            chunk = view[position:position + _READ_BYTES]
            chunks.append(inflater.decompress(chunk))
            position += len(chunk)
        position -= len(inflater.unused_data)
        text = b"".join(chunks)
        if remember is not None and view[start:start + len(_OUR_HEADER)] == _OUR_HEADER:
            remember[_digest(text)] = bytes(view[start:position])
        texts.append(text)
    return b"".join(texts)


def encode_payload(payload: Mapping[str, Any]) -> bytes:
    """The file's bytes for this payload, with nothing remembered from earlier writes."""
    return TreeEncoder().encode(payload)
