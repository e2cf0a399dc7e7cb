"""Sessions run in-process through the project's own tracing set-up, for the tracing tests.

Each scenario is a real session: the scripted model goes through litellm's real
path, hooks and user tools are real, and spans come from ``configure_tracing``
(the provider the CLI uses) with an in-memory exporter and an on-start recorder
added. Together the scenarios reach every span kind and the failure paths:
unknown, denied and crashing tools, a retried and a fatal LLM failure, a review
rejection, a transform hook, a truncation record, reasoning, the turn limit, and
spent budgets (a sub-agent's, then the session's).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_agents.runtime.tools import ToolContext, make_tool
from otel_agents.tracing.setup import Tracing, TracingOptions, configure_tracing


class StartRecorder(SpanProcessor):
    """Remembers the attributes each span had when it started (sampling-relevant ones must be there)."""

    def __init__(self) -> None:
        self.at_start: dict[int, dict[str, Any]] = {}

    def on_start(self, span, parent_context=None) -> None:
        self.at_start[span.context.span_id] = dict(span.attributes or {})


@dataclass
class ScenarioRun:
    spans: list[ReadableSpan]
    at_start: dict[int, dict[str, Any]]
    session_id: str
    utterances: list[str] = field(default_factory=list)
    error: BaseException | None = None


def traced(options: TracingOptions | None = None) -> tuple[Tracing, InMemorySpanExporter, StartRecorder]:
    tracing = configure_tracing(options or TracingOptions(batch=False))
    memory, recorder = InMemorySpanExporter(), StartRecorder()
    tracing.add_processor(recorder)
    tracing.add_processor(SimpleSpanProcessor(memory))
    return tracing, memory, recorder


async def _no_sleep(seconds: float) -> None:
    return None


def run_session(
    script: str | Path,
    prompts: Iterable[str],
    *,
    tools: Iterable[Any] = (),
    model: str | None = None,
    api_base: str | None = None,
    max_turns: int = 20,
    max_attempts: int = 4,
    capture_input_messages: bool = False,
    tracing: Tracing | None = None,
    shutdown: bool = True,
    after: Callable[[Any], None] | None = None,
    extra: dict[str, Any] | None = None,
    budget: Any = None,
    evicting_in: Path | None = None,
    carried_budget: Any = None,
) -> tuple[ScenarioRun, Tracing]:
    """Run prompts as the CLI does (source ``cli``), catching the errors the CLI reports.

    ``evicting_in``: recorded there (the recorder inline), every idle agent evicted at once."""
    from otel_agents.llm.budget import BudgetExhausted, BudgetMeter
    from otel_agents.llm.client import LLMCallFailed, LLMClient
    from otel_agents.llm.retry import RetryPolicy
    from otel_agents.llm.scripts import load_script
    from otel_agents.runtime.agent import MaxTurnsExceeded
    from otel_agents.runtime.scenario import build_session
    from otel_agents.runtime.session import RunContext
    from otel_agents.cli.execution import label_runs

    if tracing is None:
        tracing, memory, recorder = traced()
    else:
        memory, recorder = InMemorySpanExporter(), StartRecorder()
        tracing.add_processor(recorder)
        tracing.add_processor(SimpleSpanProcessor(memory))
    loaded = load_script(str(script))
    llm = LLMClient(
        tracing.telemetry,
        retry=RetryPolicy(max_attempts=max_attempts),
        api_base=api_base,
        api_key="sk-test" if api_base else None,
        capture_input_messages=capture_input_messages,
        sleep=_no_sleep,
    )
    eviction = None
    if evicting_in is not None:
        from otel_agents.runtime.eviction import EvictionPolicy

        eviction = EvictionPolicy(max_live_agents=0)
    session = build_session(loaded, model=model, tools=tools, telemetry=tracing.telemetry, llm=llm, max_turns=max_turns,
                            budget=BudgetMeter.for_session(budget), eviction=eviction)
    session.carried_budget = carried_budget  # as a resume with --budget-scope run sets it
    recording = _record_evicting(session, tracing, evicting_in) if evicting_in is not None else None
    context = RunContext(source="cli", script=loaded.source, model_override=model, extra=extra or {})
    label_runs(session, context, txn=None)  # ingress metadata and the console id, as the CLI sets them
    run = ScenarioRun([], {}, session.id)
    try:
        for prompt in prompts:
            run.utterances.append(str(asyncio.run(session.run(prompt, context=context))))
    except (LLMCallFailed, MaxTurnsExceeded, BudgetExhausted, KeyboardInterrupt) as exc:
        run.error = exc
    if after is not None:
        after(session)
    if recording is not None:
        recording.close()
    if shutdown:
        tracing.shutdown()
    run.spans = list(memory.get_finished_spans())
    run.at_start = recorder.at_start
    return run, tracing


def _record_evicting(session: Any, tracing: Tracing, home: Path) -> Any:
    """The CLI's recording set-up, the recorder in this process (its records written as they are logged),
    and the session's agents revivable from it."""
    import os

    from otel_agents.persistence.paths import Paths
    from otel_agents.revivable import keep_revivable
    from otel_agents.session_recording import start_recording

    paths = Paths.resolve(home / "sessions", home / "billing.jsonl")
    previous = os.environ.get("OTEL_AGENTS_RECORDER")
    os.environ["OTEL_AGENTS_RECORDER"] = "inline"
    try:
        recording = start_recording(tracing, paths, session.id)
    finally:
        if previous is None:
            del os.environ["OTEL_AGENTS_RECORDER"]
        else:
            os.environ["OTEL_AGENTS_RECORDER"] = previous
    keep_revivable(session, paths.session_dir(session.id))
    return recording


def write_script(directory: Path, name: str, data: dict[str, Any]) -> Path:
    path = directory / f"{name}.json"
    path.write_text(json.dumps({"name": name, **data}), encoding="utf-8")
    return path


# --- user tools used by the failure scenario ---


def forbidden() -> str:
    """A tool the Guard hook never allows."""
    return "never returned"


def boom(reason: str = "kaput") -> str:
    """A tool that always fails.

    reason: what goes wrong
    """
    raise RuntimeError(reason)


def checkpoint(ctx: ToolContext) -> str:
    """Record a truncation that keeps the caller's whole working memory.

    (The scripted model counts its own turns, so dropping any would replay them.)
    """
    keep = len(ctx.agent.transcript)
    ctx.agent.truncate(keep, cause=ctx.call_message_id)
    return f"kept {keep} entries"


def ctrl_c() -> str:
    """Behaves as if the user pressed Ctrl-C while the tool ran."""
    raise KeyboardInterrupt


def make_user_tools(big_text: Callable[[], str] | None = None) -> list[Any]:
    def dump() -> str:
        """Returns a very long text."""
        return big_text() if big_text else "short"

    # boom names the provider behind it (otel_agents.tool.provider); the others name none.
    return [make_tool(f, provider="scenario-api" if f is boom else None) for f in (forbidden, boom, checkpoint, dump, ctrl_c)]


FAILURE_SCRIPT: dict[str, Any] = {
    "root": {"name": "main", "system_prompt": "You exercise every failure path."},
    "hooks": [
        {"kind": "approval", "name": "Guard", "deny_tools": ["forbidden"]},
        {"kind": "review", "name": "Critic", "reject_if_contains": "SECRETWORD", "agents": ["main"]},
        {"kind": "transform", "name": "Scrub", "replace": {"Bob": "B."}},
        {"kind": "remind", "name": "Nudge", "message": "Mind the checkpoint.", "tools": ["checkpoint"]},
    ],
    "agents": {
        "main": [
            {
                "tool_calls": [
                    {"name": "nope", "arguments": {}},
                    {"name": "forbidden", "arguments": {}},
                    {"name": "boom", "arguments": {"reason": "disk on fire"}},
                ]
            },
            {
                "tool_calls": [
                    {"name": "task", "arguments": {"name": "Helper", "system_prompt": "Help.", "user_prompt": "Hi, I am Bob"}}
                ],
                "fail_first_attempt": {"status": 503},
            },
            {"tool_calls": [{"name": "checkpoint", "arguments": {}}]},
            "the SECRETWORD is out",
            {"text": "all failure paths done", "reasoning": "Every path was taken."},
        ],
        # Served as through a router that says who served it and what it charged.
        "Helper": [{"text": "Hello B.", "usage": {"input_tokens": 7, "output_tokens": 2},
                    "served": {"provider": "Together", "cost": 0.0001, "upstream_inference_cost": 0.00009}}],
    },
}

# The first attempt fails with a transient error and no retry is allowed.
FATAL_LLM_SCRIPT: dict[str, Any] = {
    "agents": {"main": [{"text": "unreachable", "fail_first_attempt": {"status": 429}}]},
}

# A tool call every turn: the turn limit is reached.
ENDLESS_SCRIPT: dict[str, Any] = {
    "agents": {"main": [{"tool_calls": [{"name": "task", "arguments": {"name": f"A{i}", "system_prompt": "x"}}]} for i in range(5)]},
}

BIG_TOOL_SCRIPT: dict[str, Any] = {
    "agents": {"main": [{"tool_calls": [{"name": "dump", "arguments": {}}]}, "I read it all."]},
}


# Ctrl-C in the middle of a tool call: every open span is marked cancelled.
INTERRUPTED_SCRIPT = {
    "name": "interrupted",
    "root": {"name": "main"},
    "agents": {"main": [{"tool_calls": [{"name": "ctrl_c", "arguments": {}}]}]},
}
# An outside event between runs (seed example 4) gets an external_input span.
WATCHER_SCRIPT = {"name": "watcher", "root": {"name": "watcher"}, "agents": {"watcher": ["watching"]}}
# Streamed, with every request parameter set (the HTTP model answers; the first stream is cut short).
STREAMED_SCRIPT = {"name": "streamed", "agents": {}, "stream": True,
                   "params": {"temperature": 0.5, "max_tokens": 64, "top_p": 0.9, "stop": ["END"], "seed": 3}}


# The Worker's own budget is spent (its caller gets an error result), then the session's ends the run.
BUDGET_SCRIPT: dict[str, Any] = {
    "agents": {
        "main": [{"tool_calls": [{"name": "task", "arguments": {"name": "Worker", "user_prompt": "work"}}]},
                 {"tool_calls": [{"name": "task", "arguments": {"name": "Other"}}]}, "never said"],
        "Worker": [{"tool_calls": [{"name": "task", "arguments": {"name": "Sub"}}]}, "never said"],
    },
    "agent_budgets": {"Worker": {"max_llm_calls": 1}},
}


def run_every_scenario(directory: Path) -> list[ScenarioRun]:
    """The demo (two prompts), the failure paths, a fatal LLM error, the turn limit,
    an OpenAI-compatible HTTP model with input-message capture, and one streamed with request parameters."""
    from support.openai_server import OpenAIServer, Reply

    runs = [run_session("jack-and-jill", ["Create Jack and Jill for a cafe discussion", "Thanks"])[0]]
    # With content capture on, so the tool spans' opt-in content attributes are emitted too.
    runs.append(run_session(write_script(directory, "failures", FAILURE_SCRIPT), ["go"], tools=make_user_tools(),
                            capture_input_messages=True)[0])
    runs.append(run_session(write_script(directory, "fatal", FATAL_LLM_SCRIPT), ["go"], max_attempts=1)[0])
    runs.append(run_session(write_script(directory, "endless", ENDLESS_SCRIPT), ["go"], max_turns=2)[0])
    runs.append(run_session(write_script(directory, "interrupted", INTERRUPTED_SCRIPT), ["go"],
                            tools=make_user_tools())[0])
    runs.append(
        run_session(write_script(directory, "watcher", WATCHER_SCRIPT), ["watch"],
                    after=lambda session: session.external(session.root, "File changed: data.json"),
                    extra={"otel_agents.run.redacted_save": True,
                           # as the network copy of a run whose export cut two values says (export_rules.py)
                           "otel_agents.export.truncated": 2,
                           "otel_agents.run.app": "watcher_app:make",
                           "otel_agents.ingress.sender": "watch:data.json"})[0]
    )
    runs.append(run_resumed_with_another_script(directory))
    # Idle agents evicted and revived: the run roots count them.
    runs.append(run_session("jack-and-jill", ["Create Jack and Jill for a cafe discussion", "Thanks"],
                            evicting_in=directory / "evicting")[0])
    runs.append(run_forked(directory))
    from otel_agents.llm.budget import Budget

    runs.append(run_session(write_script(directory, "budget", BUDGET_SCRIPT), ["go"],
                            budget=Budget(max_llm_calls=3), carried_budget=Budget())[0])
    with OpenAIServer() as server:
        server.plan(Reply(content="hi there", prompt_tokens=10, completion_tokens=2))
        runs.append(
            run_session(
                "jack-and-jill", ["hello"], model="openai/test-model", api_base=server.api_base, capture_input_messages=True
            )[0]
        )
    with OpenAIServer() as server:  # a reply without usage: litellm's estimate, marked otel_agents.llm.usage_estimated
        server.plan(Reply(content="no usage said", send_usage=False))
        runs.append(run_session("jack-and-jill", ["count"], model="openai/test-model", api_base=server.api_base)[0])
    with OpenAIServer() as server:
        server.plan(Reply.cut_stream(), Reply(content="streamed", prompt_tokens=10, completion_tokens=2))
        runs.append(run_session(write_script(directory, "streamed", STREAMED_SCRIPT), ["stream"],
                                model="openai/test-model", api_base=server.api_base,
                                extra={"otel_agents.run.params": '{"seed":3}'})[0])
    return runs


def run_resumed_with_another_script(directory: Path) -> ScenarioRun:
    """A session resumed with another script: its agents move to that script's model (a recorded change)."""
    from otel_agents.llm.client import LLMClient
    from otel_agents.llm.scripts import load_script
    from otel_agents.restore import SavedSession, restore_session
    from otel_agents.runtime.scenario import build_session
    from otel_agents.runtime.session import RunContext

    class Records:
        def __init__(self) -> None:
            self.records: list[dict[str, Any]] = []

        def on_record(self, span, record, ts_ns) -> None:
            self.records.append(dict(record))

        def on_log(self, span, level, message, ts_ns) -> None:
            pass

    before = load_script(str(write_script(directory, "before-resume", {"name": "before-resume",
                                                                       "agents": {"main": ["first"]}})))
    after = load_script(str(write_script(directory, "after-resume", {"name": "after-resume", "agents": {},
                                                                     "fallback": "second"})))
    tracing, memory, recorder = traced()
    saved = Records()
    tracing.add_listener(saved)
    llm = LLMClient(tracing.telemetry, sleep=_no_sleep)
    session = build_session(before, telemetry=tracing.telemetry, llm=llm)
    run = ScenarioRun([], {}, session.id)
    run.utterances.append(str(asyncio.run(session.run("one", context=RunContext(source="cli", script=before.source)))))
    llm.use_script(after)
    resumed = restore_session(SavedSession(session.id, saved.records, runs=session.runs), script_model=after.model,
                              telemetry=tracing.telemetry, llm=llm)
    context = RunContext(source="resume", script=after.source)
    run.utterances.append(str(asyncio.run(resumed.run("two", context=context))))
    tracing.shutdown()
    run.spans = list(memory.get_finished_spans())
    run.at_start = recorder.at_start
    return run


def run_forked(directory: Path) -> ScenarioRun:
    """A session forked just after its last message (otel_agents.forking), as `otel-agents fork` runs it."""
    from otel_agents.forking import ForkSource, fork_session, resolve_at
    from otel_agents.llm.client import LLMClient
    from otel_agents.llm.scripts import load_script
    from otel_agents.persistence.tree import build_tree
    from otel_agents.restore import merge_records
    from otel_agents.runtime.scenario import build_session
    from otel_agents.runtime.session import RunContext
    from otel_agents.tracing.spandata import from_readable

    script = load_script(str(write_script(directory, "before-fork", {"name": "before-fork",
                                                                     "agents": {"main": ["first", "second"]}})))
    tracing, memory, recorder = traced()
    llm = LLMClient(tracing.telemetry, sleep=_no_sleep)
    llm.use_script(script)
    records: list[dict[str, Any]] = []

    class Records:
        def on_record(self, span, record, ts_ns) -> None:
            records.append(dict(record))

        def on_log(self, span, level, message, ts_ns) -> None:
            pass

    tracing.add_listener(Records())
    session = build_session(script, telemetry=tracing.telemetry, llm=llm)
    asyncio.run(session.run("one", context=RunContext(source="cli", script=script.source)))
    source_spans = list(memory.get_finished_spans())
    source = ForkSource(session.id, merge_records(records), build_tree([from_readable(s) for s in source_spans]))
    point = resolve_at(source, records[-1]["message_id"])
    forked = fork_session(source, point, "20990101-000000-f0f0f0", telemetry=tracing.telemetry, llm=llm)
    run = ScenarioRun([], {}, forked.id)  # the fork's run alone: the source's is like the other scenarios'
    context = RunContext(source="fork", script=script.source, extra=point.run_attributes())
    run.utterances.append(str(asyncio.run(forked.run("two", context=context))))
    tracing.shutdown()
    run.spans = [span for span in memory.get_finished_spans() if span not in source_spans]
    run.at_start = recorder.at_start
    return run


# --- what the spans hold, as (where, key, type) rows ---

SPAN_PATTERNS = {
    "invoke_agent": "invoke_agent {gen_ai.agent.name}",
    "create_agent": "create_agent {gen_ai.agent.name}",
    "chat": "chat {gen_ai.request.model}",
    "execute_tool": "execute_tool {gen_ai.tool.name}",
    "external_input": "external_input {gen_ai.agent.name}",
    "turn": "turn",
}


def span_pattern(name: str) -> str:
    operation = name.split(" ", 1)[0]
    if operation not in SPAN_PATTERNS:
        raise AssertionError(f"span {name!r} has no documented name pattern")
    return SPAN_PATTERNS[operation]


def type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)) and value:
        return type_name(value[0]) + "[]"
    return type(value).__name__


def span_rows(runs: Iterable[ScenarioRun]) -> dict[tuple[str, str], set[str]]:
    """(span pattern, attribute) -> types seen."""
    rows: dict[tuple[str, str], set[str]] = {}
    for run in runs:
        for span in run.spans:
            for key, value in span.attributes.items():
                if isinstance(value, (list, tuple)) and not value:
                    continue  # an empty array fits its row whatever the element type
                rows.setdefault((span_pattern(span.name), key), set()).add(type_name(value))
    return rows


def event_rows(runs: Iterable[ScenarioRun]) -> dict[tuple[str, str], set[str]]:
    """(event name, attribute) -> types seen."""
    rows: dict[tuple[str, str], set[str]] = {}
    for run in runs:
        for span in run.spans:
            for event in span.events:
                for key, value in event.attributes.items():
                    rows.setdefault((event.name, key), set()).add(type_name(value))
    return rows


def set_at(runs: Iterable[ScenarioRun]) -> dict[tuple[str, str], str]:
    """(span pattern, attribute) -> "start" (always there at start), "later" (never), or "varies"."""
    seen: dict[tuple[str, str], set[bool]] = {}
    for run in runs:
        for span in run.spans:
            at_start = run.at_start.get(span.context.span_id, {})
            for key in span.attributes:
                seen.setdefault((span_pattern(span.name), key), set()).add(key in at_start)
    return {row: ("start" if flags == {True} else "later" if flags == {False} else "varies") for row, flags in seen.items()}
