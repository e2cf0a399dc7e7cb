"""What ``otel-agents replay`` replays: a saved session's prompts and recorded LLM calls, read from its files.

Read-only on the saved session. Each chat span becomes a ``RecordedCall``: the request
rebuilt exactly as sent (the views' chat context: messages and tool definitions), its
request parameters, and the answer (the assistant entry it produced, its usage) or the
error it failed with. A turn is the agent's n-th LLM call in the session, in start order.
``--from-run N`` starts from a fork of the session just before run N's first record
(:func:`state_before_run`), so runs before N are not made again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import message_from_record

# gen_ai.request.* attribute -> the litellm parameter it records (ModelSettings.span_attributes).
_PARAMETER_ATTRIBUTES = {
    sc.GEN_AI_REQUEST_TEMPERATURE: "temperature",
    sc.GEN_AI_REQUEST_MAX_TOKENS: "max_tokens",
    sc.GEN_AI_REQUEST_TOP_P: "top_p",
    sc.GEN_AI_REQUEST_STOP_SEQUENCES: "stop",
    sc.GEN_AI_REQUEST_SEED: "seed",
}


class ReplayError(ValueError):
    """A saved session that cannot be replayed; the message is one line."""


@dataclass
class ReplaySource:
    session_id: str
    prompts: list[tuple[int, str]]  # (run index, prompt), in run order
    calls: list[Any]  # llm.replay_provider.RecordedCall, in start order
    script: str | None
    app: str | None
    stream: bool
    params: dict[int, str] = field(default_factory=dict)  # run index -> JSON of its --param (ModelSettings)
    budgets: dict[int, str] = field(default_factory=dict)  # run index -> its session limits (otel_agents.run.budget)
    # run index -> the limits it carried on (otel_agents.run.budget_carried): only a run resumed with
    # --budget-scope run has them, whose limits counted its own spending only
    carried: dict[int, str] = field(default_factory=dict)
    from_python: bool = False  # a run came through the Python API: its agents are the program's, not a script's
    api_bases: dict[int, str] = field(default_factory=dict)  # run index -> its api base (otel_agents.run.api_base)


def read_source(session_dir: Path, from_run: int = 1) -> ReplaySource:
    """The saved session's runs and recorded calls; calls of runs before ``from_run`` are not compared."""
    from otel_agents.llm.replay_book import RecordedCall
    from otel_agents.persistence.saved import SessionUnreadable, load_saved
    from otel_agents.persistence.tree_walk import iter_nodes
    from otel_agents.views.errors import SessionDataError
    from otel_agents.views.viewer import SessionViewer

    session_id = session_dir.name
    try:
        viewer = SessionViewer.from_session_dir(session_dir, warn=_refuse)  # records with their span ids
        # The tree as views and `sessions show` read it (journal first): a killed writer's
        # tree.json.gz is a checkpoint from before its last run, which would go unseen.
        saved = load_saved(session_dir, _refuse)  # not owned, no repair: nothing is written
    except (SessionDataError, SessionUnreadable) as exc:
        raise ReplayError(f"session {session_id} cannot be replayed: {exc}") from None
    if saved.damaged or saved.tree is None:
        why = saved.damaged[0] if saved.damaged else "it has no readable tree.json.gz or spans.jsonl"
        raise ReplayError(f"session {session_id} cannot be replayed: {why}")
    tree = saved.tree
    runs = [run for run in tree.get("runs") or [] if isinstance(run, dict)]
    if not runs:
        raise ReplayError(f"session {session_id} has no run to replay")
    if any((run.get("attributes") or {}).get(sc.RUN_REDACTED_SAVE) for run in runs):
        raise ReplayError(f"session {session_id} was saved without contents (--redacted-save): nothing to replay")
    if not 1 <= from_run <= len(runs):
        raise ReplayError(f"--from-run {from_run}: session {session_id} has runs 1 to {len(runs)}")
    outside = _answered_outside_events(viewer, runs)
    for index, run in enumerate(runs[from_run - 1:], from_run):
        _refuse_unreplayable(session_id, index, run.get("attributes") or {}, index in outside)
    run_of_span = {run["span_id"]: index for index, run in enumerate(runs, 1)}
    prompts = _prompts(viewer, {span: run for span, run in run_of_span.items() if run >= from_run}, session_id)
    last = runs[-1].get("attributes") or {}

    chats = [(run_of_span.get(top.get("span_id"), len(runs) + 1), node)
             for top, node in iter_nodes(tree)
             if node.get("attributes", {}).get(sc.GEN_AI_OPERATION_NAME) == sc.OP_CHAT]
    calls: list[RecordedCall] = []
    turns: dict[str, int] = {}
    stream = False
    for run, node in sorted(chats, key=lambda item: item[1].get("started_ns") or 0):
        attrs = node["attributes"]
        agent, attempt = attrs.get(sc.GEN_AI_AGENT_NAME), attrs.get(sc.LLM_ATTEMPT, 1)
        if attempt == 1:
            turns[agent] = turns.get(agent, 0) + 1
        stream = stream or bool(attrs.get(sc.GEN_AI_REQUEST_STREAM))
        calls.append(_recorded(viewer, node, agent, turns.get(agent, 1), attempt, run >= from_run))
    params, budgets, carried = (_per_run(runs, key) for key in (sc.RUN_PARAMS, sc.RUN_BUDGET, sc.RUN_BUDGET_CARRIED))
    from_python = any((run.get("attributes") or {}).get(sc.RUN_SOURCE) == "api" for run in runs)
    return ReplaySource(session_id, prompts, calls, last.get(sc.RUN_SCRIPT), last.get(sc.RUN_APP),
                        stream, params, budgets, carried, from_python, _per_run(runs, sc.RUN_API_BASE))


def _per_run(runs: list[dict[str, Any]], key: str) -> dict[int, Any]:
    """Run index -> the attribute ``key`` that run recorded (runs without it left out)."""
    return {index: run["attributes"][key] for index, run in enumerate(runs, 1)
            if (run.get("attributes") or {}).get(key) is not None}


@dataclass
class StateBeforeRun:
    """The saved session as run N started: where to fork it, and what its runs before N spent."""

    source: Any  # forking.ForkSource
    point: Any  # forking.ForkPoint: the last record before run N
    spent: dict[str, Any]  # totals of runs 1..N-1, as meta.json keeps them, cut-off attempts counted
    agents_spent: dict[str, Any]  # agent id -> its inclusive totals over runs 1..N-1, likewise


def state_before_run(session_dir: Path, run: int) -> StateBeforeRun:
    """Where run ``run`` (from 2) started: a fork point just before its first record (the source read only)."""
    from otel_agents.forking import ForkError, load_source, resolve_at
    from otel_agents.persistence.tree_totals import fold_totals, session_entries, spent_by_agent, unfinished_llm_calls
    from otel_agents.persistence.tree_walk import iter_records
    from otel_agents.tracing.records import message_id_number

    session_id = session_dir.name
    try:
        source = load_source(session_dir, session_id, warn=_refuse)
        runs = [r for r in source.tree.get("runs", []) if isinstance(r, dict)]
        trace_id = runs[run - 1].get("trace_id")
        first = min((message_id_number(ref.record["message_id"]) for ref in iter_records(source.tree)
                     if ref.trace_id == trace_id), default=None)
        before = [r["message_id"] for r in source.records
                  if first is not None and message_id_number(r["message_id"]) < first]
        if not before:
            raise ReplayError(f"--from-run {run}: session {session_id} has no record before run {run} to start from")
        point = resolve_at(source, before[-1])
    except ForkError as exc:
        raise ReplayError(f"--from-run {run}: {exc}") from None
    earlier = {**source.tree, "runs": runs[: run - 1], "ops": []}
    # Attempts cut off in those runs count too, as at resume: the ledger bills them.
    spent = fold_totals(session_entries(earlier["runs"], []))
    spent["llm_calls"] += unfinished_llm_calls(earlier)
    return StateBeforeRun(source, point, spent, spent_by_agent(earlier))


def _refuse_unreplayable(session_id: str, index: int, attrs: dict[str, Any], answered_outside: bool) -> None:
    """A run replay cannot make again: it re-runs each run's prompt to the root agent, from the state
    the runs before it left, so a fork's first run (it starts from another session's state) and an
    outside event's run (`send`, a watched file: delivered to an agent with a sender; or one that heard
    `Session.external` before it) are refused, rather than reported as divergences they are not."""
    if index == 1 and attrs.get(sc.RUN_FORK_SESSION):
        raise ReplayError(f"session {session_id} is a fork of {attrs[sc.RUN_FORK_SESSION]} (after "
                          f"{attrs.get(sc.RUN_FORK_MESSAGE)}): its run 1 starts from that session's state; replay "
                          f"its later runs with --from-run 2, or replay {attrs[sc.RUN_FORK_SESSION]}")
    if attrs.get(sc.RUN_SOURCE) == "external" or answered_outside:
        raise ReplayError(f"session {session_id}: run {index} answered an outside event (send, a watched "
                          "file or Session.external), which replay does not deliver again (docs/replay.md, Limits)")


def _answered_outside_events(viewer: Any, runs: list[dict[str, Any]]) -> set[int]:
    """Runs that answered an outside event recorded outside any run (``Session.external`` between runs):
    the first run to record after it. Replay re-runs prompts only, so that event would be missing.
    One recorded inside a run (by the run's own code) is made again and is not counted."""
    run_of_trace = {run.get("trace_id"): index for index, run in enumerate(runs, 1)}
    answered: set[int] = set()
    heard = False
    for record in viewer.records:  # in message-id order
        run = run_of_trace.get(record.get("trace_id"))
        source = record.get("source") or ""
        if run is None and (source == "external" or source.startswith("external:")):  # runtime.external_source
            heard = True
        elif run is not None and heard:
            answered.add(run)
            heard = False
    return answered


def _refuse(text: str) -> None:
    raise ReplayError(f"the saved session's events cannot be read whole: {text}")


def _prompts(viewer: Any, run_of_span: dict[str, int], session_id: str) -> list[tuple[int, str]]:
    """Each run's prompt: the root agent's user entry written by the run's own span."""
    found: dict[int, str] = {}
    for record in viewer.records:
        run = run_of_span.get(record.get("span_id"))
        if run is not None and record.get("role") == "user" and run not in found:
            found[run] = record.get("content") or ""
    missing = sorted(set(run_of_span.values()) - set(found))
    if missing:
        raise ReplayError(f"session {session_id}: run {missing[0]} has no prompt in its records (redacted?)")
    return sorted(found.items())


def _recorded(viewer: Any, node: dict[str, Any], agent: str, turn: int, attempt: int, compare: bool) -> Any:
    from otel_agents.llm.replay_book import RecordedCall
    from otel_agents.views.errors import ViewError

    attrs = node["attributes"]
    try:
        context = viewer.chat_context(node["span_id"])
        answered = attrs.get(sc.RESPONSE_MESSAGE_ID)
        message = message_from_record(viewer.record(answered)) if answered else None
    except (ViewError, KeyError, LookupError) as exc:
        if compare:
            raise ReplayError(f"chat span {node['span_id']} of {agent} cannot be replayed: {exc}") from None
        context, message = None, None  # a run before --from-run is not made again: only its turns count
    if compare and message is None and attrs.get(sc.ERROR_TYPE) is None:
        raise ReplayError(f"chat span {node['span_id']} of {agent} has neither an answer nor an error "
                          "(an interrupted call cannot be replayed)")
    parameters = {name: attrs[key] for key, name in _PARAMETER_ATTRIBUTES.items() if attrs.get(key) is not None}
    if "stop" in parameters:
        parameters["stop"] = list(parameters["stop"])
    return RecordedCall(
        agent=agent, turn=turn, attempt=attempt, messages=context.messages if context else [],
        tools=context.tools if context else None, parameters=parameters, message=message,
        usage={
            "input_tokens": attrs.get(sc.GEN_AI_USAGE_INPUT_TOKENS) or 0,
            "output_tokens": attrs.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS) or 0,
            "cache_read_tokens": attrs.get(sc.GEN_AI_USAGE_CACHE_READ) or 0,
            "cache_write_tokens": attrs.get(sc.GEN_AI_USAGE_CACHE_CREATION) or 0,
            "reasoning_tokens": attrs.get(sc.GEN_AI_USAGE_REASONING) or 0,
        },
        response_id=attrs.get(sc.GEN_AI_RESPONSE_ID), error_type=attrs.get(sc.ERROR_TYPE), compare=compare,
        cost_usd=attrs.get(sc.GEN_AI_USAGE_COST), retry_after=attrs.get(sc.LLM_RETRY_AFTER),
    )
