"""spans.jsonl: the span journal of one session, append-only, flushed per line.

Every span of the session is written twice: once when it starts and once when
it ends, so after a crash each span is known whole (it ended) or by its start
(it was open). Seed-001 records are not repeated here: they are in events.jsonl
with the span they were emitted on and its time, and are put back as span events
when spans are rebuilt, so each fact is stored once. Line shapes (keys at their
default value are left out):

``{"ctx": id, "resource": {...}, "scope": name}``
    a resource and instrumentation scope, named by a hash of their content
    (so writers in different processes agree on ids without reading the file);
``{"start": span_id, "trace": trace_id, "parent": span_id, "name": ..., "kind": ...,
"ns": start_ns, "ctx": id, "attrs": {...}, "links": [[trace_id, span_id, {...}], ...]}``
    a span started, with the attributes and links it started with;
``{"end": span_id, "ns": end_ns, "attrs": {...}, "status": "OK"|"ERROR", "message": ...,
"events": [[name, time_ns, {...}], ...], "links": [...]}``
    it ended: the attributes set or changed since its start, its status, its span
    events other than records (log lines, hook decisions, exceptions), and its
    links only if they changed since its start.

A crash can tear only the last line: readers skip it with a warning, writers cut
it off before appending again (as for events.jsonl); a whole line that lost only
its newline is read, and kept by the next writer.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import orjson

from otel_agents.persistence.line_appender import LineAppender
from otel_agents.persistence.notices import Warn, stderr_warning
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import from_span_event, storable
from otel_agents.tracing.spandata import EventData, LinkData, SpanData

JOURNAL_FILE = "spans.jsonl"
_MESSAGE_ID = sc.EVENT_FIELD_PREFIX + "message_id"
_KINDS = frozenset({"INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"})
# Ids as spandata writes them: lowercase hex of the W3C widths (a flipped byte must not pass).
_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_SPAN_ID = re.compile(r"[0-9a-f]{16}")
_STATUSES = frozenset({"UNSET", "OK", "ERROR"})
_SCAN_BYTES = 8 << 20  # lines_mentioning reads this much at a time


class JournalError(ValueError):
    """spans.jsonl is damaged (somewhere other than a torn last line); one line naming it."""


# Spans back from journal lines live in journal_rebuild.py; named here too, where readers look for them.
from otel_agents.persistence.journal_rebuild import Rebuilt, rebuild, spans_from_journal  # noqa: E402,F401


# --------------------------------------------------------------------------- encoding


def context_id(resource: Mapping[str, Any], scope: str | None) -> str:
    digest = hashlib.blake2b(orjson.dumps([resource, scope], option=orjson.OPT_SORT_KEYS, default=str), digest_size=6)
    return digest.hexdigest()


def context_line(resource: Mapping[str, Any], scope: str | None) -> dict[str, Any]:
    return {"ctx": context_id(resource, scope), "resource": dict(resource), "scope": scope}


def _links(links: Iterable[LinkData]) -> list[list[Any]]:
    return [[link.trace_id, link.span_id, dict(link.attributes)] for link in links]


def start_line(span: SpanData, ctx: str | None = None) -> dict[str, Any]:
    """The line for a span's start (its context line must be written first: :func:`context_line`).

    ``ctx``: ``context_id`` of the span's resource and scope, when the writer knows it already.
    """
    line: dict[str, Any] = {"start": span.span_id, "trace": span.trace_id}
    if span.parent_span_id:
        line["parent"] = span.parent_span_id
    ctx = ctx if ctx is not None else context_id(span.resource, span.scope)
    line.update({"name": span.name, "kind": span.kind, "ns": span.start_ns, "ctx": ctx})
    if span.attributes:
        line["attrs"] = dict(span.attributes)
    if span.links:
        line["links"] = _links(span.links)
    return line


def is_record_event(event: EventData) -> bool:
    """Span events that decode as seed-001 records go to events.jsonl, not to the journal."""
    if event.name not in sc.SESSION_EVENT_NAMES:
        return False
    try:
        return from_span_event(event.name, event.attributes) is not None
    except (ValueError, TypeError):
        return False


def end_line(
    span: SpanData,
    started: SpanData | None,
    recorded: frozenset[str] | set[str] | None = None,
) -> dict[str, Any]:
    """The line for a span's end; ``started`` is the span as its start line wrote it.

    ``recorded``: message ids of the records written to events.jsonl for this span;
    their span events are left out. None: leave out every event that decodes as a record.
    """
    start_attrs = started.attributes if started is not None else {}
    changed = {k: v for k, v in span.attributes.items() if k not in start_attrs or start_attrs[k] != v}
    line: dict[str, Any] = {"end": span.span_id, "ns": span.end_ns}
    if changed:
        line["attrs"] = changed
    if span.status != "UNSET":
        line["status"] = span.status
    if span.status_message:
        line["message"] = span.status_message
    events = []
    for event in span.events:
        if recorded is None:
            if is_record_event(event):
                continue
        elif event.name in sc.SESSION_EVENT_NAMES and event.attributes.get(_MESSAGE_ID) in recorded:
            continue
        events.append([event.name, event.time_ns, dict(event.attributes)])
    if events:
        line["events"] = events
    if started is None or tuple(started.links) != tuple(span.links):
        if span.links or started is not None:
            line["links"] = _links(span.links)
    return line


def span_lines(span: SpanData) -> list[dict[str, Any]]:
    """Start and end lines of a span known whole (import); start only if it never ended."""
    started = SpanData(
        span.trace_id, span.span_id, span.parent_span_id, span.name, span.kind, span.start_ns, None,
        span.attributes, (), span.links, resource=span.resource, scope=span.scope,
    )
    lines = [start_line(started)]
    if span.end_ns is not None:
        lines.append(end_line(span, started))
    return lines


def encode(line: Mapping[str, Any]) -> bytes:
    try:
        return orjson.dumps(line, default=str) + b"\n"
    except orjson.JSONEncodeError:
        # Integers beyond 64 bits (only in traces from elsewhere) are kept as text; a lone surrogate
        # (an exception's text on a span) as U+FFFD: UTF-8 cannot hold it.
        return orjson.dumps(storable(_big_ints_as_text(line)), default=str) + b"\n"


def _big_ints_as_text(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and not -(2**63) <= value < 2**64:
        return str(value)
    if isinstance(value, dict):
        return {k: _big_ints_as_text(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_big_ints_as_text(v) for v in value]
    return value


class JournalWriter(LineAppender):
    """Appends journal lines (flushed per call unless in a batch, ``LineAppender``); opened lazily, torn tail cut off first."""

    def __init__(self, path: Path, warn: Warn = stderr_warning):
        super().__init__(path, _is_whole_line, warn)
        self._contexts: set[str] = set()
        self._last_context: tuple[Any, str | None, str] = (None, None, "")

    def write(self, lines: Iterable[Mapping[str, Any]]) -> None:
        data = b"".join(encode(line) for line in lines)
        if data:
            self.append_bytes(data)

    def start(self, span: SpanData) -> None:
        lines = []
        last_resource, last_scope, ctx = self._last_context
        if span.resource is not last_resource or span.scope != last_scope:
            # A reader shares one resource dict across a provider's spans: hash it once, not per span.
            ctx = context_id(span.resource, span.scope)
            self._last_context = (span.resource, span.scope, ctx)
        if ctx not in self._contexts:
            lines.append(context_line(span.resource, span.scope))
        lines.append(start_line(span, ctx))  # the resource serialised and hashed once per provider, not per span
        self.write(lines)
        self._contexts.add(ctx)

    def end(self, span: SpanData, started: SpanData | None, recorded: set[str] | None = None) -> None:
        self.write([end_line(span, started, recorded)])


# --------------------------------------------------------------------------- reading


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _bad_triples(items: Any, *, timed: bool) -> bool:
    """Events ``[name, ns, {attrs}]`` (timed) and links ``[trace_id, span_id, {attrs}]``."""
    if not isinstance(items, list):
        return True
    for item in items:
        if not isinstance(item, list) or len(item) != 3 or not isinstance(item[0], str):
            return True
        if not (_is_int(item[1]) if timed else _is_id(_SPAN_ID, item[1])) or not isinstance(item[2], dict):
            return True
        if not timed and not _is_id(_TRACE_ID, item[0]):
            return True
    return False


def _is_id(pattern: re.Pattern[str], value: Any) -> bool:
    return isinstance(value, str) and pattern.fullmatch(value) is not None


def is_span_id(value: Any) -> bool:
    """A span id as the journal writes it: 16 lowercase hex digits."""
    return _is_id(_SPAN_ID, value)


def _check_line(value: Any) -> str | None:
    """Why a parsed line is not a journal line (None: it is one)."""
    if not isinstance(value, dict):
        return "not a JSON object"
    if "start" in value:
        if not _is_id(_SPAN_ID, value["start"]) or not _is_id(_TRACE_ID, value.get("trace")):
            return "a start line needs a span id (16 hex digits) and a trace id (32 hex digits)"
        if "parent" in value and not _is_id(_SPAN_ID, value["parent"]):
            return "parent must be a span id (16 hex digits)"
        if not _is_int(value.get("ns")):
            return "a start line needs an integer ns"
        if not isinstance(value.get("parent", ""), str) or not isinstance(value.get("name", ""), str):
            return "parent and name must be strings"
        if not isinstance(value.get("ctx", ""), str):
            return "ctx must be a string"
        kind = value.get("kind", "INTERNAL")
        if not isinstance(kind, str) or kind not in _KINDS:
            return f"unknown span kind {value.get('kind')!r}"
        if not isinstance(value.get("attrs", {}), dict):
            return "attrs must be an object"
        if _bad_triples(value.get("links", []), timed=False):
            return "links must be [trace_id, span_id, {attributes}] lists"
        return None
    if "end" in value:
        if not _is_id(_SPAN_ID, value["end"]):
            return "an end line needs a span id (16 hex digits)"
        if not _is_int(value.get("ns")):
            return "an end line needs an integer ns"
        status = value.get("status", "UNSET")
        if not isinstance(status, str) or status not in _STATUSES:
            return f"unknown status {value.get('status')!r}"
        if not isinstance(value.get("message", ""), str):
            return "message must be a string"
        if not isinstance(value.get("attrs", {}), dict):
            return "attrs must be an object"
        if _bad_triples(value.get("events", []), timed=True):
            return "events must be [name, ns, {attributes}] lists"
        if _bad_triples(value.get("links", []), timed=False):
            return "links must be [trace_id, span_id, {attributes}] lists"
        return None
    if "ctx" in value:
        if not isinstance(value["ctx"], str) or not isinstance(value.get("resource", {}), dict):
            return "a context line needs a string id and a resource object"
        if value.get("scope") is not None and not isinstance(value["scope"], str):
            return "scope must be a string or null"
        return None
    return "neither a ctx, start nor end line"


def _is_whole_line(raw: bytes) -> bool:
    try:
        return _check_line(orjson.loads(raw)) is None
    except orjson.JSONDecodeError:
        return False


def decode(raw: bytes) -> dict[str, Any]:
    """One journal line back from its bytes; ValueError says why it is not one."""
    value = orjson.loads(raw)
    problem = _check_line(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def read_journal(path: Path, warn: Warn = stderr_warning) -> list[dict[str, Any]]:
    """Every line in order; a torn last line is skipped with a warning, other damage raises JournalError."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise JournalError(f"cannot read {path}: {exc.strerror or exc}") from None
    lines = data.split(b"\n")
    complete = data.endswith(b"\n") or not data
    if complete:
        lines = lines[:-1]
    out: list[dict[str, Any]] = []
    for number, raw in enumerate(lines, start=1):
        last = number == len(lines)
        try:
            value = orjson.loads(raw)
            problem = _check_line(value)
        except orjson.JSONDecodeError as exc:
            problem = f"invalid JSON ({exc})"
        if problem is None:
            out.append(value)
            continue
        if last and not complete:
            warn(f"{path}:{number}: skipped a torn last line ({len(raw)} bytes): {problem}")
            continue
        raise JournalError(f"{path}:{number}: not a valid journal line: {problem}")
    return out


def lines_mentioning(path: Path, text: str) -> Iterator[dict[str, Any]]:
    """The valid lines that hold ``text`` as a JSON string (a span id, a message id), in file order.

    Found by searching the file's bytes, a block at a time, for the string as the writer
    encodes it, so no other line is parsed: looking up one span of a large session costs
    a scan of its bytes, not a decode of the journal. (Read, not mapped: a writer cutting
    a torn tail meanwhile must not crash the reader.) Lines that are torn or not journal
    lines are passed over (:func:`read_journal` is the reader that reports them).
    JournalError when the file cannot be read.
    """
    needle = orjson.dumps(text)
    try:
        with open(path, "rb") as handle:
            pending = b""  # the start of a line the last block cut
            while True:
                block = handle.read(_SCAN_BYTES)
                data = pending + block
                whole = len(data) if not block else data.rfind(b"\n") + 1  # at the end: the last line too
                found = data.find(needle, 0, whole)
                while found >= 0:
                    start = data.rfind(b"\n", 0, found) + 1
                    end = data.find(b"\n", found, whole)
                    end = whole if end < 0 else end
                    try:
                        yield decode(data[start:end])
                    except ValueError:  # orjson's decode errors are ValueErrors too
                        pass
                    found = data.find(needle, end, whole)
                if not block:
                    return
                pending = data[whole:]
    except OSError as exc:
        raise JournalError(f"cannot read {path}: {exc.strerror or exc}") from None
