"""Restoring a saved session: every agent rebuilt exactly as it was, so a resume carries on (issue 4).

The saved seed-001 records are the state: replaying them in message-id order
gives every agent (id, name, model, parent), every transcript (truncations
applied) and both id counters, so no id is ever reused. A run that was killed
may leave an assistant turn whose tool calls have no results, or a call that
replied as it went (discuss) whose span never ended; those calls get an error
result saying the run was interrupted, logged at the start of the next run, so
the next LLM request is valid and the model knows the call was cut off.

An agent continues with its saved model unless the resume says otherwise: ``--model``
moves every agent; a script other than the session's moves the agents on a scripted
model (``scripted/<old name>``, no longer loaded) to the new script's. Each change from
the model the agent ran on in the last run (restored_models.previous_model) is
recorded on the first resumed run: ``otel_agents.run.model_changes`` on its root span
and a VRB line ``model changed: <old> -> <new> for N agents``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from opentelemetry.trace import SpanContext, TraceFlags

from otel_agents.llm.budget import Budget, BudgetError, budget_from_json
from otel_agents.llm.model_settings import ModelSettings, ModelSettingsError, settings_from_json
from otel_agents.persistence.gc_pause import collector_paused
from otel_agents.restored_models import continued_model, previous_model, record_model_changes
from otel_agents.runtime.agent import Agent
from otel_agents.runtime.tool_call import INTERRUPTED_RESULT
from otel_agents.runtime.session import Session
from otel_agents.runtime.tools import Tool
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import message_id_number



class ResumeError(ValueError):
    """A saved session that cannot be resumed; the message says why."""


@dataclass(frozen=True)
class SavedRun:
    index: int
    trace_id: str
    span_id: str
    script: str | None = None
    model_override: str | None = None
    app: str | None = None  # `run --app` reference the resume re-imports
    params: str | None = None  # JSON of the request parameters every agent was given (--param)
    budget: str | None = None  # JSON of the session's limits in force (--max-cost-usd ...), carried on by resume
    budget_carried: str | None = None  # JSON of the limits to carry on instead, when ``budget`` was the run's own
    api_base: str | None = None  # --api-base its calls went to (secrets redacted), gone on with


@dataclass
class SavedSession:
    session_id: str
    records: list[dict[str, Any]]
    runs: int = 0  # runs so far: the next one is runs + 1
    last_run: SavedRun | None = None  # the run the next one links to
    redacted: bool = False  # saved without message contents: see without_contents
    truncated: int = 0  # values cut and events dropped by the sender's export: see with_values_cut
    open_tool_calls: frozenset[str] = frozenset()  # ids of calls whose tool span never ended (a killed run)
    # (agent id, call id) -> replies the call made just after the records kept (a fork at a discuss speaker's
    # words: the caller's copy, recorded next), given before the call's cut result
    late_replies: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)


def without_contents(session_id: str) -> str:
    """Why a session saved without message contents cannot have its agents rebuilt (resume and fork say the same)."""
    return (f"session {session_id} was saved without message contents (run with --redacted-save, or "
            "received from a run exporting with OTEL_AGENTS_EXPORT_CONTENT=false), so its agents cannot be rebuilt")


def with_values_cut(session_id: str, count: int) -> str:
    """Why a session received with values cut (or events dropped) by the sender's export cannot have its agents
    rebuilt (resume, fork)."""
    from otel_agents.persistence.session_meta import CUT_BY

    return (f"session {session_id} was received with {count} value(s) cut or event(s) dropped {CUT_BY}, "
            "so its agents cannot be rebuilt: resume or fork it where it ran, whose local session holds them whole")


def saved_runs(tree: Mapping[str, Any] | None) -> tuple[int, SavedRun | None]:
    """``(runs so far, last run)`` of a saved tree, with what resume needs from the last root span."""
    runs = (tree or {}).get("runs", [])
    if not runs:
        return 0, None
    last = runs[-1]
    attributes = last.get("attributes") or {}
    run = _last_run(int(last.get("index") or len(runs)), last.get("trace_id"), last.get("span_id"),
                    attributes.get(sc.RUN_SCRIPT), attributes.get(sc.RUN_MODEL), attributes.get(sc.RUN_APP),
                    attributes.get(sc.RUN_PARAMS), attributes.get(sc.RUN_BUDGET), attributes.get(sc.RUN_BUDGET_CARRIED),
                    attributes.get(sc.RUN_API_BASE))
    return max(len(runs), run.index), run


def _last_run(index: int, trace_id: Any, span_id: Any, script: Any, model: Any, app: Any = None,
              params: Any = None, budget: Any = None, budget_carried: Any = None, api_base: Any = None) -> SavedRun:
    """The run the next one links to, checked: hex ids, and names that are names."""
    try:
        int(trace_id, 16), int(span_id, 16)
    except (TypeError, ValueError):
        raise ResumeError("the last run's trace and span ids are not hex") from None
    return SavedRun(index, trace_id, span_id, _name_or_none(script, "script"), _name_or_none(model, "model"),
                    _name_or_none(app, "app"), _name_or_none(params, "params"), _name_or_none(budget, "budget"),
                    _name_or_none(budget_carried, "budget"), _name_or_none(api_base, "api base"))


def _name_or_none(value: Any, what: str) -> str | None:
    # A damaged name must not be taken for another script or model (or crash the loader).
    if value is None or isinstance(value, str):
        return value
    raise ResumeError(f"the last run's {what} is {type(value).__name__}, not a name")


def runs_from_meta(meta: Mapping[str, Any]) -> tuple[int, SavedRun | None]:
    """The same from meta.json's summary (written from the tree, with its checkpoint)."""
    last = meta.get("last_run")
    count = meta.get("runs")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise ResumeError("meta.json has no run count")
    if last is None:
        return count, None
    try:
        run = _last_run(int(last["index"]), str(last["trace_id"]), str(last["span_id"]), last.get("script"),
                        last.get("model"), last.get("app"), last.get("params"), last.get("budget"),
                        last.get("budget_carried"), last.get("api_base"))
    except (KeyError, TypeError, ValueError, AttributeError, ResumeError):
        raise ResumeError("meta.json has a damaged last_run") from None
    return max(count, run.index), run


def merge_records(*sources: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Union of record sources by message id (tree checkpoint + events written after it).

    The same id with different content is a contradiction, not a choice to make.
    """
    merged: dict[str, dict[str, Any]] = {}
    for source in sources:
        for record in source:
            if "ts" in record or "trace_id" in record or "span_id" in record:
                core = {k: v for k, v in record.items() if k not in {"ts", "trace_id", "span_id"}}
            else:
                core = record  # as read: records are never changed once read
            known = merged.get(core["message_id"])
            if known is not None and known != core:
                raise ResumeError(f"the saved records disagree about {core['message_id']}")
            merged[core["message_id"]] = core
    records = list(merged.values())
    numbers = [message_id_number(r["message_id"]) for r in records]
    if all(a < b for a, b in zip(numbers, numbers[1:])):
        return records  # one stream, written in id order: the usual case
    order = sorted(range(len(records)), key=numbers.__getitem__)
    return [records[i] for i in order]


def check_records(records: list[dict[str, Any]]) -> None:
    """Refuse records that contradict themselves (they would rebuild a wrong session)."""
    agents: set[str] = set()
    lengths: dict[str, int] = {}
    for record in records:
        kind, agent_id = record.get("event_type"), record.get("agent_id")
        where = record.get("message_id")
        if kind == sc.EVENT_AGENT_CREATED:
            if agent_id in agents:
                raise ResumeError(f"{where}: agent {agent_id} is created twice")
            parent = record.get("parent")
            if parent is not None and parent not in agents:
                raise ResumeError(f"{where}: agent {agent_id} names unknown parent {parent}")
            agents.add(agent_id)
            lengths[agent_id] = 0
        elif kind in (sc.EVENT_TRANSCRIPT_ENTRY, sc.EVENT_TRANSCRIPT_TRUNCATED, sc.EVENT_PIECE_OF_TEXT):
            if agent_id not in agents:
                raise ResumeError(f"{where}: {kind} for agent {agent_id}, which was never created")
            if kind == sc.EVENT_TRANSCRIPT_ENTRY:
                lengths[agent_id] += 1
            elif kind == sc.EVENT_TRANSCRIPT_TRUNCATED:
                keep = record.get("keep")
                if not isinstance(keep, int) or keep < 0 or keep > lengths[agent_id]:
                    raise ResumeError(f"{where}: truncation of {agent_id} keeps {keep!r} of {lengths[agent_id]} entries")
                lengths[agent_id] = keep
        elif kind != sc.EVENT_HOST_NOTICE:  # a notice for the user: no agent state to check or rebuild
            raise ResumeError(f"{where}: unknown event type {kind!r}")


def _agent_number(agent_id: str) -> int:
    try:
        return int(agent_id.rsplit("_", 1)[1])
    except (IndexError, ValueError):
        return 0


def interrupted_tool_calls(agent: Agent, still_open: frozenset[str] = frozenset(),
                           pending_result: str = INTERRUPTED_RESULT) -> list[tuple[str, str]]:
    """(tool_call_id, tool name) of calls in the transcript that never got a result, and of those in
    ``still_open`` whose results so far were replies (discuss) and none says the call was cut off
    (interrupted, or ``pending_result``: a fork's)."""
    return [(call_id, name) for _, call_id, name in _cut_calls(agent, still_open, pending_result)]


def _cut_calls(agent: Agent, still_open: frozenset[str], pending_result: str) -> list[tuple[int, str, str]]:
    """:func:`interrupted_tool_calls` with the number of the message that made each call."""
    tool_results = [m for m in agent.transcript if m.get("role") == "tool"]
    answered = {m.get("tool_call_id") for m in tool_results}
    said = {INTERRUPTED_RESULT, pending_result}
    cut_off = {m.get("tool_call_id") for m in tool_results if m.get("content") in said}
    answered -= still_open - cut_off
    missing = []
    for message, message_id in zip(agent.transcript, agent.transcript_ids):
        for call in message.get("tool_calls") or []:
            if call["id"] not in answered:
                missing.append((message_id_number(message_id), call["id"], call["function"]["name"]))
    return missing


def restore_session(
    saved: SavedSession,
    *,
    tools: Iterable[Tool] = (),
    model_override: str | None = None,
    script_model: str | None = None,
    pending_result: str = INTERRUPTED_RESULT,
    **session_kwargs: Any,
) -> Session:
    """A Session with every agent, transcript and counter as saved; hooks are the caller's.

    ``model_override``: every agent's model; else ``script_model`` (the scripted model of the
    script resumed with) replaces other scripted models. Changes are recorded on the next run.
    ``pending_result``: the result given to tool calls left without one (a fork says why it has none).
    """
    with collector_paused():  # one transcript entry per record, none of them cyclic
        return _restore(saved, tuple(tools), model_override, script_model, session_kwargs, pending_result)


def saved_params(saved: SavedSession, given: ModelSettings | None) -> ModelSettings | None:
    """The request parameters every agent gets on resume: the last run's, with ``given`` (--param) on top."""
    last = saved.last_run
    try:
        recorded = settings_from_json(last.params if last else None, "the last run")
    except ModelSettingsError as exc:
        raise ResumeError(str(exc)) from None
    if recorded is None:
        return given
    return recorded.merged(given)


def saved_budget(saved: SavedSession, given: Budget | None) -> Budget | None:
    """The session's limits on resume: the last run's (as recorded on it; those it carried on, when its own
    were for it alone), with ``given`` (--max-...) on top."""
    last = saved.last_run
    try:
        kept = None if last is None else last.budget if last.budget_carried is None else last.budget_carried
        recorded = budget_from_json(kept, "the last run")
    except BudgetError as exc:
        raise ResumeError(str(exc)) from None
    if recorded is None:
        return given
    return recorded.merged(given)


def carried_budget(saved: SavedSession, scope: str) -> Budget | None:
    """What the resumed session's runs record for later resumes to carry on: with scope ``run`` their limits
    count this command's spending only, so they are not the session's: the limits before them are (an empty
    ``Budget`` when there were none); with scope ``session``, None (their own)."""
    return (saved_budget(saved, None) or Budget()) if scope == "run" else None


def root_name(saved: SavedSession) -> str:
    """The saved root agent's name: the first agent created without a parent."""
    for record in saved.records:
        if record.get("event_type") == sc.EVENT_AGENT_CREATED and not record.get("parent"):
            return record.get("name") or record["agent_id"]
    return ""


def _restore(saved: SavedSession, tool_list: tuple[Tool, ...], model_override: str | None,
             script_model: str | None, session_kwargs: dict[str, Any],
             pending_result: str = INTERRUPTED_RESULT) -> Session:
    if saved.redacted:
        raise ResumeError(without_contents(saved.session_id))
    if saved.truncated:  # the model would read truncation markers as what was said
        raise ResumeError(with_values_cut(saved.session_id, saved.truncated))
    records = saved.records
    check_records(records)
    if not any(r["event_type"] == sc.EVENT_AGENT_CREATED for r in records):
        # Stopped before its first run began (even by kill -9): resume starts its root afresh (saved_session).
        raise ResumeError(f"session {saved.session_id} has no agents to resume"
                          + ("" if saved.runs else " (it was stopped before its first run began)"))
    last = saved.last_run
    previous = None
    if last is not None:
        previous = SpanContext(int(last.trace_id, 16), int(last.span_id, 16), is_remote=True,
                               trace_flags=TraceFlags(TraceFlags.SAMPLED))
    session = Session(
        saved.session_id,
        message_counter=max(message_id_number(r["message_id"]) for r in records),
        agent_counter=max(_agent_number(r["agent_id"]) for r in records if r["event_type"] == sc.EVENT_AGENT_CREATED),
        runs=saved.runs,
        previous_run=previous,
        **session_kwargs,
    )
    agents: dict[str, Agent] = {}
    changes: Counter = Counter()  # (model of the last run, model continued with) -> agents
    for record in records:
        kind = record["event_type"]
        if kind == sc.EVENT_AGENT_CREATED:
            parent = agents.get(record.get("parent")) if record.get("parent") else None
            saved_model = record.get("language_model") or ""
            model = continued_model(saved_model, model_override, script_model)
            # what it ran on last: a change is one from there (the model it was created with may be long gone)
            before = saved_model if last is None else previous_model(saved_model, last.model_override, last.script)
            if model.startswith("replay/") and not model_override:  # not `replay --from-run`, which loads it
                raise ResumeError(
                    f"agent {record.get('name') or record['agent_id']} of session {saved.session_id} ran on {model}, "
                    "which answers only inside `otel-agents replay`: pass --model (or --script)"
                )
            if model != before:
                changes[(before, model)] += 1
            name = record.get("name") or record["agent_id"]
            agent = Agent(
                session,
                name,
                model,
                tools=tool_list,
                parent=parent,
                agent_id=record["agent_id"],
                # parameters are not in the records: rebuilt as at creation, from the parent and the names
                settings=session.settings_for(name, parent),
            )
            agents[agent.agent_id] = agent
            if parent is not None:
                parent.subagents[agent.name] = agent
            elif session.root is None:
                session.root = agent
        elif kind in (sc.EVENT_TRANSCRIPT_ENTRY, sc.EVENT_TRANSCRIPT_TRUNCATED):
            agents[record["agent_id"]].replay(record)  # as an evicted agent is revived (runtime/eviction.py)

    if changes:
        record_model_changes(session, changes)
    repairs = [(number, agent, call_id, name) for agent in agents.values()
               for number, call_id, name in _cut_calls(agent, saved.open_tool_calls, pending_result)]
    # Inner calls first: a call made later, still open, runs inside the earlier ones (a sub-agent's call
    # inside its caller's task), so each result is recorded after those of the calls within it and every
    # prefix of the records closes a call only once what ran inside it is closed.
    repairs.sort(key=lambda repair: -repair[0])  # stable: one message's calls keep their order
    if repairs:
        def repair() -> None:
            for _, agent, call_id, name in repairs:
                for reply in saved.late_replies.get((agent.agent_id, call_id), ()):
                    agent.harken_tool_result(call_id, name, reply)
                agent.harken_tool_result(call_id, name, pending_result)

        session.before_next_run.append(repair)
    return session
