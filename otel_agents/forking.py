"""Forking a saved session at a message: the source read without writing, its records cut there, a new Session built.

The source is loaded the way readers load it (``persistence.saved.load_saved`` without ownership or
repair: no lock taken, no file opened for writing). Its seed-001 records up to and
including the chosen message are the fork's state: restored by ``restore_session``
under a new session id, and emitted again, as they were, on the fork's first run, so
the fork's own directory holds everything a resume or a view of it needs. That first
run links to the source span that recorded the message and names the source session
and message (``otel_agents.run.fork.*``, copied into meta.json as ``forked_from``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from opentelemetry.trace import SpanContext, TraceFlags

from otel_agents.llm.budget import Budget, BudgetError, budget_from_json
from otel_agents.persistence.saved import SessionUnreadable, load_saved
from otel_agents.persistence.session_meta import values_cut
from otel_agents.persistence.gc_pause import collector_paused
from otel_agents.persistence.notices import Warn, stderr_warning
from otel_agents.persistence.tree_kinds import KIND_TOOL, STATUS_IN_PROGRESS, STATUS_INTERRUPTED
from otel_agents.persistence.tree_paths import node_at, position_of
from otel_agents.persistence.tree_walk import iter_ops, iter_records
from otel_agents.restore import (
    ResumeError, SavedSession, check_records, merge_records, restore_session, with_values_cut, without_contents,
)
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import message_id_number

# The result a tool call open at the fork point gets: its result came after the message forked at.
FORKED_RESULT = "Error: the session was forked before this tool call finished; it has no result in the fork."
_MESSAGE_ID = re.compile(r"msg_[0-9]+")


class ForkError(ValueError):
    """The source cannot be forked there; the message is one line and says why."""


@dataclass(frozen=True)
class ForkPoint:
    """Where a fork starts: the source session, its message, and the span that recorded that message."""

    session_id: str
    message_id: str
    trace_id: str
    span_id: str
    run: Mapping[str, Any]  # the source run (tree node) the message belongs to: its script, model, app, params

    def link(self) -> SpanContext:
        return SpanContext(int(self.trace_id, 16), int(self.span_id, 16), is_remote=True,
                           trace_flags=TraceFlags(TraceFlags.SAMPLED))

    def run_attributes(self) -> dict[str, Any]:
        """What the fork's first run says of its origin (ingress attributes: kept on the tree and in meta.json)."""
        return {sc.RUN_FORK_SESSION: self.session_id, sc.RUN_FORK_MESSAGE: self.message_id}

    def limits(self, given: Budget | None) -> Budget | None:
        """The fork's session limits: those the source run of the message kept (as a resume after it would
        carry them on), ``given`` on top. They count the fork's own spending, from zero."""
        attributes = self.run.get("attributes") or {}
        carried = attributes.get(sc.RUN_BUDGET_CARRIED)  # its own were for that run alone (--budget-scope run)
        try:
            recorded = budget_from_json(carried if carried is not None else attributes.get(sc.RUN_BUDGET),
                                        f"session {self.session_id}'s run of {self.message_id}")
        except BudgetError as exc:
            raise ForkError(str(exc)) from None
        return given if recorded is None else recorded.merged(given)


@dataclass
class ForkSource:
    """A saved session as read for forking: its records (message-id order) and its tree."""

    session_id: str
    records: list[dict[str, Any]]
    tree: Mapping[str, Any]
    redacted: bool = False
    truncated: int = 0  # values cut and events dropped by the sender's export (restore.with_values_cut)


def load_source(session_dir: Path, session_id: str, warn: Warn = stderr_warning) -> ForkSource:
    """The source session, read only (ForkError, one line, when it cannot be forked at all)."""
    with collector_paused():  # many small acyclic objects (persistence/gc_pause.py)
        try:
            saved = load_saved(session_dir, warn)  # not owned, no repair: nothing is written
        except SessionUnreadable as exc:
            raise ForkError(str(exc)) from None
        if saved.damaged:
            raise ForkError(f"session {session_id} cannot be forked: {saved.damaged[0]}")
        if saved.tree is None:
            raise ForkError(f"session {session_id} has no readable tree or journal: its spans are needed to fork")
        try:
            records = merge_records(saved.records)
            check_records(records)
        except ResumeError as exc:
            raise ForkError(f"session {session_id}: {exc}") from None
    meta = saved.meta or {}
    redacted = bool(meta.get("redacted")) or any(
        (run.get("attributes") or {}).get(sc.RUN_REDACTED_SAVE) for run in saved.tree.get("runs", [])
    )
    return ForkSource(session_id, records, saved.tree, redacted, values_cut(saved.tree))


def resolve_at(source: ForkSource, at: str) -> ForkPoint:
    """``at`` as a fork point: a message id (``msg_000017``) or a path label (``4-3-2``, or ``RUN:LABEL`` for run RUN)."""
    if _MESSAGE_ID.fullmatch(at):
        message_id = at
    else:
        message_id = _last_message_under(source.tree, at)
    for ref in iter_records(source.tree):
        if ref.record.get("message_id") == message_id:
            run = _run_of_trace(source.tree, ref.trace_id)
            if run is None:  # told between runs (Session.external): goes on as the run before it ran
                run = _run_before(source.tree, message_id_number(message_id))
            if run is None:
                raise ForkError(f"message {message_id} of session {source.session_id} was recorded before any run")
            if ref.trace_id and ref.span_id:
                return ForkPoint(source.session_id, message_id, ref.trace_id, ref.span_id, run)
            return ForkPoint(source.session_id, message_id, run["trace_id"], run["span_id"], run)
    raise ForkError(f"session {source.session_id} has no message {at}")


def _run_before(tree: Mapping[str, Any], number: int) -> Mapping[str, Any] | None:
    """The last run that recorded something before message ``number``: a message told between runs goes on
    from the state it left (its script, model and limits), as the next run would have."""
    before = [(max(ids), run) for run in tree.get("runs", []) if (ids := [n for n in _ids_under(run) if n < number])]
    return max(before, key=lambda pair: pair[0])[1] if before else None


def _run_of_trace(tree: Mapping[str, Any], trace_id: str | None) -> Mapping[str, Any] | None:
    return next((run for run in tree.get("runs", []) if run.get("trace_id") == trace_id), None)


def _last_message_under(tree: Mapping[str, Any], at: str) -> str:
    """The last message recorded inside the node a path label names (the state just after that node)."""
    run_text, colon, label = at.rpartition(":")
    runs = tree.get("runs", [])
    try:
        if colon and not run_text.isdigit():  # ":1" names no run: refused like "x:1", not read as "1"
            raise ValueError(at)
        index = int(run_text) if colon else 1
        position = position_of(label)
    except ValueError:
        raise ForkError(f"fork point {at!r} is neither a message id (msg_000017) nor a path label ([RUN:]4-3-2)") from None
    run = next((r for r in runs if r.get("index") == index), None)
    if run is None:
        raise ForkError(f"fork point {at!r}: the session has no run {index}")
    try:
        node = node_at(run, position)
    except (KeyError, IndexError):
        raise ForkError(f"fork point {at!r}: run {index} has no node at {label}") from None
    last = None
    stack = [node]
    while stack:  # a stack of our own: a label can sit thousands of levels deep
        item = stack.pop()
        for event in item.get("events", []):
            number = message_id_number(event["record"]["message_id"])
            if last is None or number > last[0]:
                last = (number, event["record"]["message_id"])
        stack.extend(item.get("ops", []))
        stack.extend(item.get("turns", []))
        if item.get("session") is not None:
            stack.append(item["session"])
    if last is None:
        raise ForkError(f"fork point {at!r}: nothing was said inside run {index} {label}")
    return last[1]


def records_until(records: list[dict[str, Any]], message_id: str) -> list[dict[str, Any]]:
    """The records up to and including ``message_id`` (records are in message-id order)."""
    end = message_id_number(message_id)
    return [r for r in records if message_id_number(r["message_id"]) <= end]


def open_at(tree: Mapping[str, Any], message_id: str) -> frozenset[str]:
    """Ids of the tool calls cut by a fork just after ``message_id``: something of the call (its result, a
    reply, what its sub-agents said) was recorded after that message, or its span never ended. A call
    that replied as it went (discuss) has results in the prefix, and the fork must say after them that
    it was cut; one whose every record is in the prefix is done, though its span ended a moment later."""
    end = message_id_number(message_id)
    unfinished = (STATUS_INTERRUPTED, STATUS_IN_PROGRESS)
    open_ids: set[str] = set()
    later: dict[int, bool] = {}  # id(node) -> a record under it comes after the message
    # Post-order with a stack of its own: a chain of sub-agents may be thousands deep.
    stack: list[tuple[Mapping[str, Any], bool]] = [(run, False) for run in tree.get("runs", [])]
    stack += [(op, False) for op in tree.get("ops", [])]
    while stack:
        node, children_done = stack.pop()
        children = [*node.get("ops", []), *node.get("turns", [])]
        if node.get("session") is not None:
            children.append(node["session"])
        if not children_done:
            stack.append((node, True))
            stack.extend((child, False) for child in children)
            continue
        cut = any(message_id_number(event["record"]["message_id"]) > end for event in node.get("events", [])) \
            or any(later.pop(id(child)) for child in children)
        later[id(node)] = cut
        request = (node.get("request") or {}) if node.get("kind") == KIND_TOOL else {}
        call_id, asked = request.get("tool_call_id"), request.get("call_message_id")
        if asked and message_id_number(asked) > end:
            continue  # called after the message: not in the fork
        if call_id and (cut or node.get("status") in unfinished):
            open_ids.add(call_id)
    return frozenset(open_ids)


def _ids_under(node: Mapping[str, Any]) -> list[int]:
    """Numbers of the messages recorded inside ``node`` (its sub-agents' sessions too)."""
    ids, stack = [], [node]
    while stack:  # a stack of our own: sub-agents may nest thousands deep
        item = stack.pop()
        ids.extend(message_id_number(event["record"]["message_id"]) for event in item.get("events", []))
        stack.extend([*item.get("ops", []), *item.get("turns", [])])
        if item.get("session") is not None:
            stack.append(item["session"])
    return ids


def replies_due(source: ForkSource, message_id: str) -> dict[tuple[str, str], tuple[str, ...]]:
    """The reply a call that replies as it goes (discuss) made to its caller for the speaker's words at
    ``message_id``: recorded just after them, it is cut off by a fork there, though the words were said.
    ``{(caller's agent id, tool call id): (reply,)}``; empty unless the message is a speaker's last words
    of its turn inside such a call, and the call's next record is that reply."""
    end = message_id_number(message_id)
    by_number = {message_id_number(r["message_id"]): r for r in source.records}
    said = by_number.get(end) or {}
    if said.get("event_type") != sc.EVENT_TRANSCRIPT_ENTRY or said.get("role") != "assistant" \
            or said.get("tool_calls"):
        return {}
    for ref in iter_ops(source.tree):
        op = ref.op
        request = (op.get("request") or {}) if op.get("kind") == KIND_TOOL else {}
        call_id = request.get("tool_call_id")
        after = sorted(n for n in (message_id_number(e["record"]["message_id"]) for e in op.get("events", []))
                       if n > end)  # the call's own records (its replies) after the words: cheap, checked first
        reply = by_number.get(after[0]) if call_id and after else None
        if not reply or reply.get("role") != "tool" or reply.get("tool_call_id") != call_id:
            continue
        speaking = next((child for child in op.get("ops", []) if end in _ids_under(child)), None)
        if speaking is None:
            continue
        # Nothing more said in that turn after the words (a reset hook's truncation may follow them).
        if any(n > end and by_number[n].get("event_type") == sc.EVENT_TRANSCRIPT_ENTRY
               for n in _ids_under(speaking) if n in by_number):
            return {}
        # A reply, not the call's result (task's answer): the call went on after it. A call that never
        # ended (a killed source) shows it by a later result only.
        response = op.get("response")
        if (response.get("message_id") == reply["message_id"]) if response else not any(
                (by_number.get(n) or {}).get("tool_call_id") == call_id for n in after[1:]):
            return {}
        return {(reply["agent_id"], call_id): (reply["content"],)}
    return {}


def fork_session(source: ForkSource, point: ForkPoint, new_session_id: str, pending_result: str = FORKED_RESULT,
                 **restore_kwargs: Any):
    """A runtime Session in state just after ``point``: agents, transcripts and id counters as the source had them.

    Its first run links to the source span of the message and records the inherited
    records again (before its prompt), so the fork's directory is complete on its own.
    ``restore_kwargs``: as for :func:`otel_agents.restore.restore_session` (tools, models, telemetry, llm...);
    ``pending_result``: for tool calls open at the point (replay, cutting between runs, gives resume's).
    """
    if source.redacted:
        raise ForkError(without_contents(source.session_id))  # resume's words
    if source.truncated:
        raise ForkError(with_values_cut(source.session_id, source.truncated))
    prefix = records_until(source.records, point.message_id)
    saved = SavedSession(new_session_id, prefix, open_tool_calls=open_at(source.tree, point.message_id),
                         late_replies=replies_due(source, point.message_id))
    try:
        session = restore_session(saved, pending_result=pending_result, **restore_kwargs)
    except ResumeError as exc:
        raise ForkError(str(exc)) from None
    session.previous_run = point.link()

    def record_inherited() -> None:
        for record in prefix:
            session.telemetry.record(record)
        session.telemetry.log("VRB", f"forked from session {point.session_id} just after {point.message_id}: "
                                     f"{len(prefix)} records inherited")

    session.before_next_run.insert(0, record_inherited)  # before any repair: those ids come after
    return session
