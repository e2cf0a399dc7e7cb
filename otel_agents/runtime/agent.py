"""Agent: a transcript, a model, tools and sub-agents; ``response()`` loops until an utterance."""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING, Any, Iterable

from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_agents.llm.client import ChatRequest, provider_of, request_model_of
from otel_agents.llm.accounting import charge_tool, scope
from otel_agents.llm.budget import Budget, BudgetExhausted, BudgetMeter, in_force, metering
from otel_agents.llm.model_settings import ModelSettings
from otel_agents.runtime.eviction import RevivalError, replay_into
from otel_agents.runtime.hooks import ToolRequest
from otel_agents.runtime.logged_string import LoggedString, substance_of
from otel_agents.runtime.tools import InvalidToolArguments, Tool, ToolContext
from otel_agents.runtime.turn_taking import Turn, hold
from otel_agents.tracing import content_capture, semconv as sc
from otel_agents.tracing.records import message_from_record
from otel_agents.tracing.telemetry import marks_cancellation, marks_error_type

if TYPE_CHECKING:
    from otel_agents.runtime.session import Session


class MaxTurnsExceeded(RuntimeError):
    pass


# The result of a tool call the run stopped in (Ctrl-C, a cancelled task), and of one a crash left
# open, which resume gives the same words (restore.py).
INTERRUPTED_RESULT = "Error: the run was interrupted before this tool call finished; its outcome is unknown."
# What stops a run without being an error of the call it passes through: a cancelled task, a second
# Ctrl-C raised inside a tool's own code, a tool's sys.exit(). Each call it stops still gets a result.
INTERRUPTIONS = (asyncio.CancelledError, KeyboardInterrupt, SystemExit)


_DESCRIPTION_CHARS = 200


def description_of(system_prompt: Any) -> str | None:
    """``gen_ai.agent.description``: the first line of the agent's system prompt, which the
    application wrote to say what the agent is for (bounded: prompts can be long)."""
    lines = [line.strip() for line in str(system_prompt or "").splitlines() if line.strip()]
    if not lines:
        return None
    first = lines[0]
    return first if len(first) <= _DESCRIPTION_CHARS else first[: _DESCRIPTION_CHARS - 1] + "…"


class Agent:
    """An LLM-powered agent. Create agents with ``Session.create_agent`` (it logs the creation)."""

    def __init__(
        self,
        session: "Session",
        name: str,
        model: str,
        *,
        tools: Iterable[Tool] = (),
        parent: "Agent | None" = None,
        agent_id: str | None = None,
        max_turns: int | None = None,
        builtin_tools: bool = True,
        settings: ModelSettings | None = None,
        budget: Budget | None = None,
    ):
        self.session = session
        self.agent_id = agent_id or session.allocate_agent_id()
        self.name = name
        self.model = model
        self.parent = parent
        self.max_turns = max_turns
        self.settings = settings or ModelSettings()  # its own request parameters (sub-agents inherit them)
        # Its limits, its sub-agents' spending included; by name from the session when not given (resume too).
        self.budget = budget if budget is not None else session.agent_budgets.get(name)
        self.budget_meter = BudgetMeter(name, self.budget) if self.budget and self.budget.limits_anything else None
        self.user_tools: dict[str, Tool] = {t.name: t for t in tools}
        self.builtin_tools = builtin_tools
        self.subagents: dict[str, Agent] = {}
        # Messages exactly as sent to the model, and each one's message id; None while evicted (eviction.py).
        self._transcript: list[dict[str, Any]] | None = []
        self._transcript_ids: list[str] | None = []
        self.busy = 0  # responses of this agent in progress: never evicted meanwhile
        self.turn = Turn()  # held by whoever talks to it: one conversation at a time (turn_taking.py)
        self.description: str | None = None  # from the first system prompt, also when resumed
        session.register(self)

    def __repr__(self) -> str:
        return f"Agent({self.name!r}, {self.agent_id})"

    # --- tools ---
    @property
    def tools(self) -> dict[str, Tool]:
        if not self.builtin_tools:
            return dict(self.user_tools)
        from otel_agents.runtime.builtins import BUILTIN_TOOLS

        return {**BUILTIN_TOOLS, **self.user_tools}

    def tool_schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self.tools.values()]

    @property
    def call_path(self) -> str:
        names, node = [], self
        while node is not None:
            names.append(node.name)
            node = node.parent
        return "/".join(reversed(names))

    def span_attributes(self) -> dict[str, Any]:
        attrs = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
            sc.GEN_AI_PROVIDER_NAME: provider_of(self.model),
            sc.GEN_AI_AGENT_NAME: self.name,
            sc.GEN_AI_AGENT_ID: self.agent_id,
            sc.GEN_AI_CONVERSATION_ID: self.session.id,
            sc.GEN_AI_REQUEST_MODEL: request_model_of(self.model),
            sc.AGENT_ID: self.agent_id,
            sc.AGENT_MODEL: self.model,
            sc.AGENT_TOOLS: sorted(self.tools),
            sc.CALL_PATH: self.call_path,
        }
        if self.parent is not None:
            attrs[sc.AGENT_PARENT_ID] = self.parent.agent_id
        if self.description:
            attrs[sc.GEN_AI_AGENT_DESCRIPTION] = self.description
        return attrs

    # --- transcript ---
    @property
    def transcript(self) -> list[dict[str, Any]]:
        """Messages exactly as sent to the model; an evicted agent's are rebuilt from its saved records here."""
        self._live()
        return self._transcript  # type: ignore[return-value]

    @property
    def transcript_ids(self) -> list[str]:
        """The message id of each transcript entry."""
        self._live()
        return self._transcript_ids  # type: ignore[return-value]

    @property
    def evicted(self) -> bool:
        return self._transcript is None

    def _live(self) -> None:
        if self._transcript is None:
            evictor = self.session.evictor
            if evictor is None:
                raise RevivalError(f"agent {self.agent_id} has no transcript and nothing to revive it from")
            evictor.revive(self)

    def _used(self) -> None:
        if self.session.evictor is not None:
            self.session.evictor.touched(self)

    def held_transcript(self) -> tuple[list[dict[str, Any]], list[str]]:
        """The transcript and its ids as held now, without reviving (the evictor compares them)."""
        return self._transcript or [], self._transcript_ids or []

    def drop_transcript(self) -> None:
        self._transcript = self._transcript_ids = None

    def restore_transcript(self, transcript: list[dict[str, Any]], ids: list[str]) -> None:
        self._transcript, self._transcript_ids = transcript, ids

    def _append(self, record: dict[str, Any], message_id: str) -> None:
        if self.description is None and record.get("role") == "system":
            self.description = description_of(record.get("content"))
        self.transcript.append(message_from_record(record))
        self.transcript_ids.append(message_id)
        self._used()

    def replay(self, record: dict[str, Any]) -> None:
        """Restore a saved transcript entry or truncation without logging it again (resume; revival
        applies the same ``replay_into``)."""
        if self.description is None and record.get("role") == "system":
            self.description = description_of(record.get("content"))
        replay_into(self.transcript, self.transcript_ids, record)

    def replay_truncation(self, keep: int) -> None:
        del self.transcript[keep:]
        del self.transcript_ids[keep:]

    def _log_entry(self, message: dict[str, Any], substance: str | None = None, source: str | None = None) -> str:
        self._live()  # revived before its new record is saved: revival rebuilds what it held
        message_id, record = self.session.log_transcript_entry(self.agent_id, message, substance, source)
        self._append(record, message_id)
        return message_id

    def add_system(self, content: str) -> str:
        return self._log_entry({"role": "system", "content": content})

    def harken(self, input: str, source: str | None = None) -> str:
        """Add a user message; a LoggedString's id becomes the entry's substance."""
        return self._log_entry({"role": "user", "content": str(input)}, substance=substance_of(input), source=source)

    def harken_tool_result(self, tool_call_id: str, name: str, content: str) -> str:
        return self._log_entry({"role": "tool", "tool_call_id": tool_call_id, "name": name, "content": content})

    def inform(self, dst: "Agent", txt: str) -> str:
        """Deliver text to another agent; transform hooks may rewrite it, the substance stays."""
        delivered = self.session.hooks.transform(self, dst, str(txt))
        return dst.harken(LoggedString(delivered, substance_of(txt)))

    def truncate(self, keep: int, cause: str | None = None) -> str:
        """Reset working memory to the first ``keep`` entries (an event like any other)."""
        if keep < 0:
            raise ValueError("keep must be >= 0")
        self._live()
        dropped = max(0, len(self.transcript) - keep)
        message_id = self.session.log_truncation(self.agent_id, keep, cause)
        self.replay_truncation(keep)
        # The record changes the agent's state; the user is told apart, as of any other truncation.
        self.host_notice("truncation", f"{self.name}'s working memory was cut to its first {keep} entries "
                                       f"({dropped} dropped)")
        return message_id

    def host_notice(self, notice: str, content: str) -> str:
        """Tell the user, never the model (a ``host_notice`` record on the current span)."""
        return self.session.host_notice(self.agent_id, notice, content)

    # --- the loop ---
    async def response(self) -> LoggedString:
        """One ``invoke_agent {name}`` span: LLM turns and tool calls until an utterance."""
        tracer = self.session.telemetry.tracer
        async with hold(self.turn):  # waited for outside the span: its time is the answer's
            with tracer.start_as_current_span(
                sc.span_name(sc.OP_INVOKE_AGENT, self.name), kind=SpanKind.INTERNAL, attributes=self.span_attributes()
            ) as span, scope("agent", span), marks_error_type(span):
                return await self.respond_in_current_span()

    async def respond_in_current_span(self) -> LoggedString:
        self.busy += 1
        self._used()
        try:
            with metering(self.budget_meter):  # sub-agents run inside: they spend from this budget too
                return await self._turns()
        finally:
            self.busy -= 1
            if self.session.evictor is not None:  # a response's end is when agents may be evicted
                self.session.evictor.sweep()

    async def _turns(self) -> LoggedString:
        tracer = self.session.telemetry.tracer
        limit = self.max_turns or self.session.max_turns
        for index in range(1, limit + 1):
            # The session id on every span: a Collector's load balancer routes a batch by its first span.
            attrs = {sc.TURN_INDEX: index, sc.AGENT_ID: self.agent_id, sc.GEN_AI_AGENT_NAME: self.name,
                     sc.GEN_AI_CONVERSATION_ID: self.session.id}
            with tracer.start_as_current_span(sc.OP_TURN, kind=SpanKind.INTERNAL, attributes=attrs) as span, scope(
                "turn", span
            ):
                self.session.hooks.remind(self)
                request = ChatRequest(
                    model=self.model,
                    messages=self.transcript,
                    tools=self.tool_schemas() or None,
                    agent_name=self.name,
                    agent_id=self.agent_id,
                    session_id=self.session.id,
                    context_last_message_id=self.transcript_ids[-1] if self.transcript_ids else None,
                    settings=self.session.request_settings(self),
                )
                await self.session.llm.complete(request, on_message=self._log_entry, on_notice=self.host_notice)
                self.session.hooks.turn_taken(self)
                message_id = self.transcript_ids[-1]
                # The reply as recorded (credentials scrubbed), as a resumed agent would hold it.
                message = self.transcript[-1]
                calls = message.get("tool_calls")
                if calls:
                    await self._run_tool_calls(calls, message_id)
                    continue
                utterance = LoggedString(message.get("content") or "", message_id)
                rejection = await self.session.hooks.review(self, utterance)
                if rejection is None:
                    return utterance
                hook_name, decision = rejection
                self.harken(decision.told(f"Your answer was rejected by hook '{hook_name}'"), source="system")
        raise MaxTurnsExceeded(
            f"agent {self.name!r} ({self.agent_id}) reached the limit of {limit} LLM turns in one response"
        )

    async def _run_tool_calls(self, calls: list[dict[str, Any]], call_message_id: str) -> None:
        """A turn's tool calls, concurrently (issue 2), each in its own task, so a sub-agent chain does
        not grow the C stack. When one stops the run (a budget in force, a cancellation), the others
        are cancelled and waited for: none writes to the transcript after the run has ended."""
        tasks = [asyncio.ensure_future(self._run_tool_call(call, call_message_id)) for call in calls]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _run_tool_call(self, call: dict[str, Any], call_message_id: str) -> None:
        name = call["function"]["name"]
        raw_args = call["function"].get("arguments") or ""
        tool = self.tools.get(name)
        attrs = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
            sc.GEN_AI_TOOL_NAME: name,
            sc.GEN_AI_TOOL_CALL_ID: call["id"],
            sc.GEN_AI_TOOL_TYPE: tool.tool_type if tool else "function",
            sc.GEN_AI_TOOL_DESCRIPTION: tool.description if tool else None,
            sc.TOOL_PROVIDER: tool.provider if tool else None,
            sc.GEN_AI_AGENT_NAME: self.name,
            sc.GEN_AI_CONVERSATION_ID: self.session.id,
            sc.AGENT_ID: self.agent_id,
            sc.TOOL_CALL_MESSAGE_ID: call_message_id,
            sc.TOOL_CHARS_IN: len(raw_args),
        }
        capture = self.session.llm.capture_input_messages
        if capture:
            attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS] = content_capture.as_json(content_capture.tool_call_arguments(raw_args))
        attrs = {k: v for k, v in attrs.items() if v is not None}
        telemetry = self.session.telemetry
        with telemetry.tracer.start_as_current_span(
            sc.span_name(sc.OP_EXECUTE_TOOL, name), kind=SpanKind.INTERNAL, attributes=attrs,
            record_exception=False, set_status_on_exception=False,
        ) as span, marks_cancellation(span):
            started = time.perf_counter()
            ctx = ToolContext(self, call["id"], call_message_id, name)
            status, result = "ok", None
            stop: BaseException | None = None  # what ends the run, raised once the call has its result
            if tool is None:
                status, result = "failed", f"Error: unknown tool '{name}'"
            else:
                try:
                    # Arguments that do not fit the signature never reach a hook or the tool.
                    arguments = tool.parse_arguments(raw_args)
                except InvalidToolArguments as exc:
                    status, result = "failed", str(exc)
                else:
                    try:
                        denial = await self.session.hooks.approve(ToolRequest(self, name, arguments.sent, call["id"]))
                    except (BudgetExhausted, *INTERRUPTIONS) as exc:
                        denial, stop = None, exc
                    if stop is not None:
                        status, result = _stopped(span, stop)
                    elif denial is not None:
                        hook_name, decision = denial
                        status, result = "denied", decision.told(f"Error: Action blocked by hook '{hook_name}'")
                        self.host_notice("denial", decision.told(f"{self.name} may not run {name}: hook '{hook_name}' "
                                                                 "denied it"))
                    else:
                        try:
                            result = await tool.invoke(ctx, arguments.values)
                        except BudgetExhausted as exc:
                            if in_force(exc.meter):  # this agent's budget or an enclosing one: it stops too
                                stop = exc
                                status, result = _stopped(span, exc)
                            else:
                                status, result = "failed", f"Error: {exc}"  # a sub-agent's: its caller carries on
                        except INTERRUPTIONS as exc:
                            stop = exc
                            status, result = _stopped(span, exc)
                        except Exception as exc:  # a failing tool is a result, not a crash
                            status = "failed"
                            result = f"Error: tool '{name}' failed: {type(exc).__name__}: {exc}"
            if status != "ok" and not isinstance(stop, INTERRUPTIONS):  # an interruption is no error
                if stop is None:
                    span.set_status(Status(StatusCode.ERROR, result))
                    span.set_attribute(sc.ERROR_TYPE, "tool_" + status)
                telemetry.log("WRN", str(result), span=span)
            if ctx.replies and (result is None or stop is not None):
                content = None  # the tool replied as it went (discuss): its call has its results
                out_chars = sum(len(r) for r in ctx.replies)
                self.session.hooks.tool_used(self, name, ctx.last_reply_id)  # it ran: remind hooks hear of it
            else:
                content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
                if result is None:
                    content = ""
                out_chars = len(content)
                result_id = self.harken_tool_result(call["id"], name, content)
                span.set_attribute(sc.TOOL_RESULT_MESSAGE_ID, result_id)
                self.session.hooks.tool_used(self, name, result_id)
                if capture and status == "ok":  # the registry's result is a successful execution's
                    telemetry.set_attributes(
                        span, {sc.GEN_AI_TOOL_CALL_RESULT: content_capture.as_json(content_capture.tool_call_result(content))}
                    )
            span.set_attributes(
                {
                    sc.TOOL_STATUS: status,
                    sc.TOOL_CHARS_OUT: out_chars,
                    sc.TOOL_LATENCY_MS: round((time.perf_counter() - started) * 1000, 3),
                }
            )
            if isinstance(stop, INTERRUPTIONS):
                raise stop  # not charged: the tree and the ledger count only calls that completed
            charge_tool()
            if stop is not None:
                raise stop


def _stopped(span: Any, stop: BaseException) -> tuple[str, str]:
    """The status and result of a tool call the run stopped in: the call still gets a result, so the
    transcript stays one a provider accepts when the session goes on (seed 004: nothing hidden)."""
    if isinstance(stop, INTERRUPTIONS):
        return "failed", INTERRUPTED_RESULT
    span.set_status(Status(StatusCode.ERROR, str(stop)))
    span.set_attribute(sc.ERROR_TYPE, "budget_exhausted")
    return "failed", f"Error: {stop}"
