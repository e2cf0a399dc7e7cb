"""``tree.json.gz`` bytes: gzip members cut at run boundaries, so a growing tree is compressed only where it changed.

The file is the payload's compact JSON (``orjson.dumps``), gzipped as several
members, which every gzip reader reads as one stream. Members are cut:

- before the first run and after the last one (the session's summary and the meta, which change at every write);
- between runs, once the runs gathered since the last cut hold ``GROUP_BYTES`` of JSON;
- inside a run larger than ``PART_BYTES``, so the parts of a large tree compress on several cores.

The cuts depend only on the payload, so equal payloads give equal bytes. A
:class:`TreeEncoder` kept by one writer remembers each group's compressed bytes by
a digest of its JSON: the next write of a session compresses the groups that
changed (the running run's, as a rule) and copies the rest. Because the key is the
content, a changed run can never be written from a stale copy.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable, Iterator, Mapping

import orjson

# Fast and still small: the tree is rewritten at checkpoints, speed matters more than the last percent.
GZIP_LEVEL = 6
# Deflate looks back only 32 KiB, so cutting members this large costs nothing measurable in size.
GROUP_BYTES = 256 * 1024
PART_BYTES = 1 << 20


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
            text += orjson.dumps(value)
            continue
        text += b"{"
        for j, (session_key, session_value) in enumerate(session.items()):
            text += b"," if j else b""
            text += orjson.dumps(session_key) + b":"
            if session_key == "runs":
                head, text = bytes(text + b"["), bytearray(b"]")
            else:
                text += orjson.dumps(session_value)
        text += b"}"
    text += b"}"
    return head, [orjson.dumps(run) for run in session["runs"]], bytes(text)


def run_groups(runs: Iterable[bytes]) -> Iterator[bytes]:
    """The runs' JSON (with the commas between them) in the groups that become members."""
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


def _parts(text: bytes) -> list[bytes]:
    return [text[i:i + PART_BYTES] for i in range(0, len(text), PART_BYTES)] or [b""]


def _member(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0)  # no mtime, no name: deterministic


def _compress(texts: list[bytes]) -> list[bytes]:
    """Each text as its members (one per part), on threads when there is more than one part (zlib releases the GIL)."""
    parts = [_parts(text) for text in texts]
    flat = [part for text_parts in parts for part in text_parts]
    if len(flat) > 1 and sum(map(len, flat)) > PART_BYTES:
        with ThreadPoolExecutor(max_workers=min(len(flat), os.cpu_count() or 1)) as pool:
            members = list(pool.map(_member, flat))
    else:
        members = [_member(part) for part in flat]
    out, start = [], 0
    for text_parts in parts:
        out.append(b"".join(members[start:start + len(text_parts)]))
        start += len(text_parts)
    return out


def _digest(text: bytes) -> bytes:
    return hashlib.sha256(text).digest()  # sha256: hardware-accelerated here, a third of blake2b's time


class TreeEncoder:
    """Encodes one session's successive payloads, compressing again only the run groups that changed.

    Holds the compressed bytes of the groups of its last write (about the size of the
    file) and of any it was asked to :meth:`prepare`; nothing else.
    """

    def __init__(self) -> None:
        self._members: dict[bytes, bytes] = {}  # digest of a group's JSON -> its gzip members
        self.compressed_bytes = 0  # JSON bytes compressed so far, all writes and preparations together

    def encode(self, payload: Mapping[str, Any]) -> bytes:
        pieces = payload_pieces(payload)
        if pieces is None:
            text = orjson.dumps(payload)
            self.compressed_bytes += len(text)
            return b"".join(_compress([text]))
        head, runs, tail = pieces
        groups = list(run_groups(runs))
        keys = [_digest(group) for group in groups]
        missing = {key: group for key, group in zip(keys, groups) if key not in self._members}
        head_member, *compressed, tail_member = _compress([head, *missing.values(), tail])
        self.compressed_bytes += len(head) + sum(map(len, missing.values())) + len(tail)
        members = {**self._members, **dict(zip(missing, compressed))}
        self._members = {key: members[key] for key in keys}  # what this write holds: the next one's copies
        return head_member + b"".join(self._members[key] for key in keys) + tail_member

    def prepare(self, runs: list[Mapping[str, Any]]) -> Iterator[None]:
        """Compress the groups of these runs (a resumed session's saved ones) ahead of the next write,
        at most one part per step: a caller with spare time runs a step at a time."""
        for group in run_groups(orjson.dumps(run) for run in runs):
            key = _digest(group)
            if key in self._members:
                continue
            members = []
            for part in _parts(group):
                members.append(_member(part))
                self.compressed_bytes += len(part)
                yield
            self._members[key] = b"".join(members)


def encode_payload(payload: Mapping[str, Any]) -> bytes:
    """The file's bytes for this payload, with nothing remembered from earlier writes."""
    return TreeEncoder().encode(payload)
