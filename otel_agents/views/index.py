"""One linear pass over a session's records builds every lookup the views need.

The seed's sample viewer rescans the event list per message (quadratic); here
each record is visited once after an n log n sort, and every view is then a
walk over the part of the indexes it concerns.
"""

from __future__ import annotations

import functools
import gc
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, TypeVar

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import message_id_number
from otel_agents.views.model import CauseLink, ToolCallView

T = TypeVar("T")
# Keys events.jsonl adds to a record; not part of the seed-001 record itself.
LOCATION_KEYS = ("ts", "trace_id", "span_id")


@contextmanager
def collector_paused() -> Iterator[None]:
    """Building allocates ~10 objects per record and frees none: the cyclic collector
    would rescan every live record again and again (half the build time at 100k)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def paused(method: Callable[..., T]) -> Callable[..., T]:
    """Views build many small acyclic objects over a large live index: same reasoning."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        with collector_paused():
            return method(*args, **kwargs)

    return wrapper


def _order(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Message-id order (ids are allocated as records are logged); file order if ids are foreign."""
    try:
        numbers = [message_id_number(r["message_id"]) for r in records]
    except (ValueError, IndexError, TypeError, AttributeError):
        return records
    if all(a < b for a, b in zip(numbers, numbers[1:])):
        return records  # the usual case: the file is already in id order
    order = sorted(range(len(records)), key=numbers.__getitem__)  # stable: ties keep file order
    return [records[i] for i in order]


def causes_of(record: Mapping[str, Any]) -> tuple[str, ...]:
    cause = record.get("cause")
    if cause is None:
        return ()
    if isinstance(cause, (list, tuple)):
        return tuple(str(c) for c in cause)
    return (str(cause),)


def tool_calls_of(record: Mapping[str, Any]) -> tuple[ToolCallView, ...]:
    calls = []
    for call in record.get("tool_calls") or ():
        function = call.get("function") or {}
        calls.append(ToolCallView(call.get("id"), function.get("name") or "?", function.get("arguments") or ""))
    return tuple(calls)


def is_utterance(record: Mapping[str, Any]) -> bool:
    """Seed 001: an assistant entry with content and no tool calls."""
    return record.get("role") == "assistant" and bool(record.get("content")) and not record.get("tool_calls")


@dataclass
class SessionIndex:
    records: list[dict[str, Any]]  # message-id order, duplicates dropped
    by_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    agent_order: list[str] = field(default_factory=list)  # first appearance
    created: dict[str, dict[str, Any]] = field(default_factory=dict)  # agent id -> agent_created
    history: dict[str, list[str]] = field(default_factory=dict)  # agent id -> entries and truncations
    current: dict[str, list[str]] = field(default_factory=dict)  # agent id -> transcript now
    entry_count: dict[str, int] = field(default_factory=dict)  # agent id -> entries ever logged
    system_prompt: dict[str, str | None] = field(default_factory=dict)  # agent id -> first system entry
    # entry id -> the entry before it in its agent's transcript when it was appended:
    # the transcript as it stood after any entry is a walk back along these links.
    previous: dict[str, str | None] = field(default_factory=dict)
    references: dict[str, list[str]] = field(default_factory=dict)  # substance -> entries
    call_message: dict[str, str] = field(default_factory=dict)  # tool result id -> its call's message
    tool_names: dict[str, str] = field(default_factory=dict)  # tool result id -> tool name

    @classmethod
    def build(cls, records: Iterable[Mapping[str, Any]]) -> "SessionIndex":
        """Records are kept as given (never modified); a replayed line keeps its first copy."""
        with collector_paused():
            unique: dict[str, dict[str, Any]] = {}
            kinds = sc.SESSION_EVENT_TYPES
            for record in records:
                message_id = record.get("message_id")
                if message_id is not None and message_id not in unique and record.get("event_type") in kinds:
                    unique[message_id] = record  # type: ignore[assignment]
            index = cls(_order(list(unique.values())))
            index.by_id = unique
            index._scan()
        return index

    def _scan(self) -> None:
        # Hot loop (once per record): attributes bound to locals.
        history, current, created = self.history, self.current, self.created
        previous, references, entry_count = self.previous, self.references, self.entry_count
        call_message, tool_names, system_prompt = self.call_message, self.tool_names, self.system_prompt
        # (agent, tool_call_id) -> (the latest assistant entry holding that call, tool name)
        open_calls: dict[tuple[str, str], tuple[str, str]] = {}
        for record in self.records:
            agent_id = record.get("agent_id")
            if agent_id is None:
                continue
            if agent_id not in history:
                self.agent_order.append(agent_id)
                history[agent_id], current[agent_id], entry_count[agent_id] = [], [], 0
            message_id = record["message_id"]
            event_type = record["event_type"]
            if event_type == "transcript_entry":
                stack = current[agent_id]
                previous[message_id] = stack[-1] if stack else None
                stack.append(message_id)
                history[agent_id].append(message_id)
                entry_count[agent_id] += 1
                role = record.get("role")
                if role == "tool":
                    call_id = record.get("tool_call_id")
                    found = open_calls.get((agent_id, str(call_id))) if call_id is not None else None
                    if found is not None:
                        call_message[message_id], tool_names[message_id] = found
                    if record.get("name"):
                        tool_names[message_id] = record["name"]
                elif role == "system" and agent_id not in system_prompt:
                    system_prompt[agent_id] = record.get("content")
                calls = record.get("tool_calls")
                if calls:
                    for call in calls:
                        if isinstance(call, Mapping) and call.get("id") is not None:
                            name = (call.get("function") or {}).get("name") or "?"
                            open_calls[(agent_id, str(call["id"]))] = (message_id, name)
                substance = record.get("substance")
                if substance is not None:
                    references.setdefault(str(substance), []).append(message_id)
            elif event_type == "agent_created":
                created.setdefault(agent_id, record)
            elif event_type == "transcript_truncated":
                del current[agent_id][max(int(record.get("keep", 0)), 0):]
                history[agent_id].append(message_id)

    def link(self, message_id: str) -> CauseLink:
        """Why a record exists: its cause (first of a list), else substance, else its tool call."""
        record = self.by_id[message_id]
        causes = causes_of(record)
        if causes:
            return CauseLink(message_id, causes[0], "cause", causes)
        if record.get("substance") is not None:
            return CauseLink(message_id, str(record["substance"]), "substance")
        if message_id in self.call_message:
            return CauseLink(message_id, self.call_message[message_id], "tool_call")
        return CauseLink(message_id, None, None)

    def causality(self) -> dict[str, CauseLink]:
        return {r["message_id"]: self.link(r["message_id"]) for r in self.records}

    # --- derived facts ---
    def origin(self, message_id: str) -> str:
        """Follow substance links to the original content (a message without substance)."""
        seen = {message_id}
        while True:
            record = self.by_id.get(message_id)
            substance = record.get("substance") if record is not None else None
            if substance is None or substance in seen:
                return message_id
            seen.add(substance)
            message_id = str(substance)

    def transcript_after(self, message_id: str) -> list[str]:
        """Entry ids of the agent's transcript as it stood right after ``message_id`` was appended."""
        ids: list[str] = []
        cursor: str | None = message_id
        while cursor is not None:
            ids.append(cursor)
            cursor = self.previous.get(cursor)
        ids.reverse()
        return ids

    def parent_agent(self, agent_id: str) -> str | None:
        created = self.created.get(agent_id)
        if created is None:
            return None
        if created.get("parent"):
            return str(created["parent"])
        for cause in causes_of(created):
            owner = self.by_id.get(cause, {}).get("agent_id")
            if owner is not None and owner != agent_id:
                return owner
        return None
