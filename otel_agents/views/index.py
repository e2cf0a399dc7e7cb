"""The lookups the views need, built in two steps so a view pays only for what it shows.

The seed's sample viewer rescans the event list per message (quadratic). Here one
pass over the records' ids and agents (a ``Layout``) says where each agent's records
are; each agent's transcript states, tool calls and tool names are then built the
first time a view asks about that agent, from that agent's records alone. A view of
two agents out of forty never reads the other thirty-eight's records.
"""

from __future__ import annotations

import functools
import operator
import re
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

from otel_agents.persistence.gc_pause import collector_paused
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import message_id_number
from otel_agents.views.model import CauseLink, ToolCallView

T = TypeVar("T")
Record = dict[str, Any]


def paused(method: Callable[..., T]) -> Callable[..., T]:
    """Views build many small acyclic objects over a large live index: same reasoning."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        with collector_paused():
            return method(*args, **kwargs)

    return wrapper


def _plainly_increasing(ids: list[Any]) -> bool:
    """Ids that are all ``PREFIX_<k ASCII digits>`` with one prefix and one k, in increasing string order.

    For such ids string order is numeric order, so this proves (at C speed, without
    ``message_id_number`` per record) that they are already in message-id order.
    """
    if not ids:
        return True
    try:
        joined = "\n".join(ids)
    except TypeError:  # an id that is not a string
        return False
    head, underscore, digits = ids[0].rpartition("_")
    if not underscore or len(set(map(len, ids))) != 1:
        return False
    one = re.escape(head) + "_[0-9]{%d}" % len(digits)
    if re.fullmatch(f"{one}(?:\n{one})*", joined) is None:
        return False
    return all(map(operator.lt, ids, ids[1:]))


def _order(records: list[Record], ids: list[Any]) -> tuple[list[Record], list[Any]]:
    """Message-id order (ids are allocated as records are logged); file order if ids are foreign."""
    if _plainly_increasing(ids):
        return records, ids  # the usual case: the file is already in id order
    try:
        numbers = [message_id_number(i) for i in ids]
    except (ValueError, IndexError, TypeError, AttributeError):
        return records, ids
    if all(a < b for a, b in zip(numbers, numbers[1:])):
        return records, ids
    order = sorted(range(len(records)), key=numbers.__getitem__)  # stable: ties keep file order
    return [records[i] for i in order], [ids[i] for i in order]


def unique_records(records: Iterable[Mapping[str, Any]]) -> tuple[list[Record], list[Any], dict[Any, Record]]:
    """Session records (known event types, with an id) in message-id order, their ids, and records by id.

    A replayed line keeps its first copy.
    """
    unique: dict[Any, Record] = {}
    kinds = sc.SESSION_EVENT_TYPES
    for record in records:
        message_id = record.get("message_id")
        if message_id is not None and message_id not in unique and record.get("event_type") in kinds:
            unique[message_id] = record  # type: ignore[assignment]
    rows, ids = _order(list(unique.values()), list(unique))
    return rows, ids, unique


def causes_of(record: Mapping[str, Any]) -> tuple[str, ...]:
    cause = record.get("cause")
    if cause is None:
        return ()
    if isinstance(cause, (list, tuple)):
        return tuple(str(c) for c in cause)
    return (str(cause),)


def tool_calls_of(record: Mapping[str, Any]) -> tuple[ToolCallView, ...]:
    """The tool calls of an entry as far as they are shaped as calls: views show what a damaged
    line still says (a name of ``?``) rather than fail on it."""
    raw = record.get("tool_calls")
    calls = []
    for call in raw if isinstance(raw, list) else ():
        if not isinstance(call, dict):
            continue
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        call_id, name, arguments = call.get("id"), function.get("name"), function.get("arguments")
        calls.append(ToolCallView(
            call_id if isinstance(call_id, str) else None,
            name if isinstance(name, str) and name else "?",
            arguments if isinstance(arguments, str) else "",
        ))
    return tuple(calls)


def is_utterance(record: Mapping[str, Any]) -> bool:
    """Seed 001: an assistant entry with content and no tool calls."""
    return record.get("role") == "assistant" and bool(record.get("content")) and not record.get("tool_calls")


@dataclass
class Layout:
    """Where each agent's records are, and the per-agent facts every view's agent list needs.

    Positions index ``ids``. Built in one pass over the records (``of``), or read
    back from ``views.cache`` without parsing the records at all.
    """

    ids: list[Any]  # message ids in message-id order
    agents: dict[Any, list[int]] = field(default_factory=dict)  # agent id -> its records; first appearance order
    entries: dict[Any, int] = field(default_factory=dict)  # agent id -> transcript entries ever logged
    created: dict[Any, int] = field(default_factory=dict)  # agent id -> its (first) agent_created
    system: dict[Any, int] = field(default_factory=dict)  # agent id -> its first system entry

    @classmethod
    def of(cls, records: Sequence[Mapping[str, Any]], ids: list[Any]) -> "Layout":
        """``records`` in message-id order, ``ids`` their message ids."""
        # Hot loop (once per record): containers bound to locals.
        layout = cls(ids)
        agents, entries, created, system = layout.agents, layout.entries, layout.created, layout.system
        for position, record in enumerate(records):
            agent_id = record.get("agent_id")
            if agent_id is None:
                continue  # a record about no agent (e.g. a piece of text nobody owns)
            positions = agents.get(agent_id)
            if positions is None:
                agents[agent_id] = positions = []
                entries[agent_id] = 0
            positions.append(position)
            event_type = record["event_type"]
            if event_type == "transcript_entry":
                entries[agent_id] += 1
                if agent_id not in system and record.get("role") == "system":
                    system[agent_id] = position
            elif event_type == "agent_created" and agent_id not in created:
                created[agent_id] = position
        return layout


@dataclass
class AgentLog:
    """One agent's transcript replayed: built from that agent's records only."""

    current: list[str] = field(default_factory=list)  # the transcript now (truncations applied)
    # entry id -> the entry before it in the transcript when it was appended:
    # the transcript as it stood after any entry is a walk back along these links.
    previous: dict[str, str | None] = field(default_factory=dict)
    call_message: dict[str, str] = field(default_factory=dict)  # tool result id -> its call's message
    tool_names: dict[str, str] = field(default_factory=dict)  # tool result id -> tool name

    @classmethod
    def replay(cls, records: Iterable[Mapping[str, Any]]) -> "AgentLog":
        log = cls()
        current, previous = log.current, log.previous
        call_message, tool_names = log.call_message, log.tool_names
        open_calls: dict[str, tuple[str, str]] = {}  # tool_call_id -> (latest assistant entry holding it, tool name)
        for record in records:
            message_id = record["message_id"]
            event_type = record["event_type"]
            if event_type == "transcript_entry":
                previous[message_id] = current[-1] if current else None
                current.append(message_id)
                if record.get("role") == "tool":
                    call_id = record.get("tool_call_id")
                    found = open_calls.get(str(call_id)) if call_id is not None else None
                    if found is not None:
                        call_message[message_id], tool_names[message_id] = found
                    if record.get("name"):
                        tool_names[message_id] = record["name"]
                calls = record.get("tool_calls")
                if calls:
                    for call in calls:
                        if isinstance(call, Mapping) and call.get("id") is not None:
                            name = (call.get("function") or {}).get("name") or "?"
                            open_calls[str(call["id"])] = (message_id, name)
            elif event_type == "transcript_truncated":
                del current[max(int(record.get("keep", 0)), 0):]
        return log


class SessionIndex:
    """Records by id and by agent, and each agent's ``AgentLog`` on first use.

    ``rows`` and ``by_id`` are the same records by position and by message id: a
    list and a dict, or (from the cache) views that parse a line when first read.
    """

    def __init__(self, layout: Layout, rows: Sequence[Record], by_id: Mapping[str, Record]):
        self.layout = layout
        self.rows = rows
        self.by_id = by_id
        self.agent_order: list[str] = list(layout.agents)
        self.entry_count = layout.entries
        self.created = {agent: rows[p] for agent, p in layout.created.items()}
        self.system_prompt = {agent: rows[p].get("content") for agent, p in layout.system.items()}
        self._logs: dict[str, AgentLog] = {}
        self._references: dict[str, list[str]] | None = None
        self._denials: dict[str, str] | None = None

    @classmethod
    def build(cls, records: Iterable[Mapping[str, Any]]) -> "SessionIndex":
        """Records are kept as given (never modified)."""
        with collector_paused():
            rows, ids, by_id = unique_records(records)
            return cls(Layout.of(rows, ids), rows, by_id)

    @property
    def records(self) -> list[Record]:
        """Every record, in message-id order."""
        return self.rows if isinstance(self.rows, list) else list(self.rows)

    def _take(self, positions: Iterable[int]) -> list[Record]:
        rows = self.rows
        take = getattr(rows, "take", None)  # records parsed on first read parse in one loop
        return take(positions) if take is not None else [rows[p] for p in positions]

    def agent_records(self, agent_id: str) -> list[Record]:
        return self._take(self.layout.agents.get(agent_id, ()))

    def records_of(self, agent_ids: Iterable[str]) -> list[Record]:
        """The records of several agents, in message-id order."""
        agents = self.layout.agents
        return self._take(sorted(chain.from_iterable(agents.get(a, ()) for a in agent_ids)))  # sorted runs: fast

    def log(self, agent_id: str) -> AgentLog:
        log = self._logs.get(agent_id)
        if log is None:
            with collector_paused():
                log = self._logs[agent_id] = AgentLog.replay(self.agent_records(agent_id))
        return log

    def _log_of(self, record: Mapping[str, Any]) -> AgentLog | None:
        agent_id = record.get("agent_id")
        return self.log(agent_id) if agent_id is not None else None

    # --- per-record facts ---
    def call_message(self, message_id: str) -> str | None:
        """The assistant entry holding the call a tool result answers (only tool results have one)."""
        record = self.by_id[message_id]
        if record["event_type"] != "transcript_entry" or record.get("role") != "tool":
            return None
        log = self._log_of(record)
        return log.call_message.get(message_id) if log is not None else None

    def tool_name(self, record: Mapping[str, Any]) -> str | None:
        """A tool result's tool: its own ``name``, else its call's."""
        if record.get("name"):
            return record["name"]
        log = self._log_of(record)
        return log.tool_names.get(record["message_id"]) if log is not None else None

    def references(self, message_id: str) -> list[str]:
        """Transcript entries whose substance is ``message_id``, in order (built for all on first use)."""
        if self._references is None:
            with collector_paused():
                self._references = self._all_references()
        return self._references.get(message_id, [])

    def _all_references(self) -> dict[str, list[str]]:
        references: dict[str, list[str]] = {}
        for record in self.records:
            substance = record.get("substance")
            if (
                substance is not None
                and record["event_type"] == "transcript_entry"
                and record.get("agent_id") is not None
            ):
                references.setdefault(str(substance), []).append(record["message_id"])
        return references

    def link(self, message_id: str) -> CauseLink:
        """Why a record exists: its cause (first of a list), else substance, else its tool call."""
        record = self.by_id[message_id]
        causes = causes_of(record)
        if causes:
            return CauseLink(message_id, causes[0], "cause", causes)
        if record.get("substance") is not None:
            return CauseLink(message_id, str(record["substance"]), "substance")
        denial = self._denial_on(record.get("span_id")) if record.get("role") == "tool" else None
        if denial is not None:  # a blocked call's result follows from the denial (and it from the verdict)
            return CauseLink(message_id, denial, "denial")
        call = self.call_message(message_id)
        if call is not None:
            return CauseLink(message_id, call, "tool_call")
        return CauseLink(message_id, None, None)

    def _denial_on(self, span_id: Any) -> str | None:
        """The denial notice recorded on this span (the denied call's ``execute_tool``, where its
        result is recorded too); the notices are found in one pass, when first asked."""
        if self._denials is None:
            self._denials = {
                str(r["span_id"]): r["message_id"] for r in self.rows
                if r.get("event_type") == sc.EVENT_HOST_NOTICE and r.get("notice") == "denial" and r.get("span_id")
            }
        return self._denials.get(str(span_id)) if span_id else None

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
        """Entry ids of the agent's transcript as it stood right after entry ``message_id`` was appended."""
        previous = self.log(self.by_id[message_id]["agent_id"]).previous
        ids: list[str] = []
        cursor: str | None = message_id
        while cursor is not None:
            ids.append(cursor)
            cursor = previous.get(cursor)
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
