"""Order for spans that came in any order: records in message order, events.jsonl sorted, traces known whole or never billed."""

from __future__ import annotations

import os
from pathlib import Path

import orjson

from otel_agents.persistence.events_file import EventLine
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.foreign import LLM_OPERATIONS, operation_of
from otel_agents.tracing.records import message_id_number
from otel_agents.tracing.spandata import SpanData


def _number(message_id: object) -> int | None:
    try:
        return message_id_number(message_id)  # type: ignore[arg-type]
    except (AttributeError, IndexError, TypeError, ValueError):
        return None


def in_message_order(lines: list[EventLine]) -> list[EventLine]:
    """Records by message number, as the run wrote them (a record without one keeps its place at the end)."""
    numbered = [(_number(line.record.get("message_id")), i, line) for i, line in enumerate(lines)]
    return [line for _, _, line in sorted(numbered, key=lambda n: (n[0] is None, n[0] or 0, n[1]))]


_COUNTED = ((sc.total_attr("inclusive", "llm_calls"), True), (sc.total_attr("inclusive", "tool_calls"), False))


def every_trace_whole(spans: list[SpanData]) -> bool:
    """Each trace has its root ended, every parent present and, where the root counts its run's LLM
    attempts and tool calls (``otel_agents.totals.inclusive.*``, on every otel-agents run), that many
    chat and execute_tool spans: nothing known to be missing.

    A record's path and run number depend on every span of its session (a Collector may deliver
    an earlier sibling after the root), so a session is billed on its own only once this holds.
    """
    ids = {span.span_id for span in spans}
    roots: dict[str, SpanData] = {}
    calls: dict[tuple[str, bool], int] = {}  # (trace, is an LLM attempt) -> spans
    for span in spans:
        if span.parent_span_id is None:
            if span.end_ns is not None or span.trace_id not in roots:
                roots[span.trace_id] = span
        elif span.parent_span_id not in ids:
            return False
        operation = operation_of(span)
        if operation in LLM_OPERATIONS or operation == sc.OP_EXECUTE_TOOL:
            key = (span.trace_id, operation in LLM_OPERATIONS)
            calls[key] = calls.get(key, 0) + 1
    for trace_id in {span.trace_id for span in spans}:
        root = roots.get(trace_id)
        if root is None or root.end_ns is None:
            return False
        for attribute, llm in _COUNTED:
            expected = root.attributes.get(attribute)
            if isinstance(expected, int) and calls.get((trace_id, llm), 0) < expected:
                return False
    return True


def sort_events_file(path: Path) -> bool:
    """events.jsonl in message order, as the run wrote it (batches may bring a session's records in any
    order; each batch's are written sorted). Replaced atomically, only when out of order; True if so."""
    try:
        raw_lines = [line for line in path.read_bytes().split(b"\n") if line]
    except FileNotFoundError:
        return False
    keyed = []
    for raw in raw_lines:
        try:
            number = _number(orjson.loads(raw).get("message_id"))
        except (orjson.JSONDecodeError, AttributeError):
            number = None
        if number is None:
            return False  # not ours to reorder: left as it is
        keyed.append((number, raw))
    if all(a[0] < b[0] for a, b in zip(keyed, keyed[1:])):
        return False
    keyed.sort(key=lambda item: item[0])
    tmp = path.with_name(path.name + ".sorting")
    with open(tmp, "wb") as handle:
        handle.write(b"".join(raw + b"\n" for _, raw in keyed))
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(tmp, path.stat().st_mode & 0o777)
    os.replace(tmp, path)
    return True


_BILLED_OPERATIONS = LLM_OPERATIONS | {sc.OP_EXECUTE_TOOL, sc.OP_INVOKE_AGENT}


def ready_to_bill(spans: list[SpanData]) -> bool:
    """Whether a session of these spans is billed now: every trace is whole, or none holds an agent,
    model or tool span, so no part of it still to come could give a ledger record (a plain HTTP
    trace is not left waiting, and marked so, for ever)."""
    return every_trace_whole(spans) or not any(operation_of(span) in _BILLED_OPERATIONS for span in spans)
