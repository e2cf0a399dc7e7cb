"""Agent: a transcript, a model, tools and sub-agents; ``response()`` loops until an utterance."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Iterable

from opentelemetry.trace import SpanKind

from otel_agents.llm.client import ChatRequest, provider_of, request_model_of
from otel_agents.llm.accounting import scope
from otel_agents.llm.budget import Budget, BudgetMeter, metering
from otel_agents.llm.model_settings import ModelSettings
from otel_agents.runtime.eviction import RevivalError, replay_into
from otel_agents.runtime.hooks import HookFailed
from otel_agents.runtime.logged_string import LoggedString, substance_of
from otel_agents.runtime.tool_call import run_tool_call
from otel_agents.runtime.tools import Tool
from otel_agents.runtime.turn_taking import Turn, hold
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import message_from_record
from otel_agents.tracing.telemetry import marks_error_type

if TYPE_CHECKING:
    from otel_agents.runtime.session import Session


class MaxTurnsExceeded(RuntimeError):
    pass


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
        self._held_events: list[tuple[str, str | None]] = []  # outside events waiting their turn (holds_events)
        self._requests = 0  # its LLM requests in flight: an outside event then waits for the answer
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
        # Under the outside-events lock: an event told from another thread never splits an id from its entry.
        with self.session.outside.lock:
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
                                       f"({dropped} dropped)", cause=[message_id])
        return message_id

    def host_notice(self, notice: str, content: str, cause: str | list[str] | None = None) -> str:
        """Tell the user, never the model (a ``host_notice`` record on the current span)."""
        return self.session.host_notice(self.agent_id, notice, content, cause)

    # --- outside events ---
    def holds_events(self) -> bool:
        """Whether an outside event told now must wait (``Session.external``): while an LLM request of it is
        in flight (the answer was asked without it, so it follows the answer), while a tool call of it waits
        for its result (a provider refuses any message between a call and its results), and behind events
        held already (they keep their order). Call it, and hold or hear, under ``session.outside.lock``."""
        return bool(self._requests or self._held_events) or self.awaiting_tool_results()

    def hold_event(self, text: str, source: str | None) -> None:
        """Keep an outside event until ``hear_held_events`` can give it (under ``session.outside.lock``)."""
        self._held_events.append((text, source))

    def awaiting_tool_results(self) -> bool:
        """Whether its last assistant message called tools whose results are not all in the transcript."""
        results = 0
        for message in reversed(self._transcript or ()):  # evicted (None): not in a response
            if message.get("role") != "tool":
                calls = message.get("tool_calls") if message.get("role") == "assistant" else None
                return bool(calls) and results < len(calls)
            results += 1
        return False

    def hear_held_events(self) -> None:
        """The held outside events, in order, unless a request is still in flight or results are awaited."""
        with self.session.outside.lock:
            if self._requests or self.awaiting_tool_results():
                return
            held, self._held_events = self._held_events, []
            for text, source in held:
                self.harken(text, source=source)

    def _requesting(self, delta: int) -> None:
        with self.session.outside.lock:
            self._requests += delta
            if delta < 0:  # the answer is in (or none comes): what arrived meanwhile follows it
                self.hear_held_events()

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
            self.hear_held_events()  # its turns ran out after the results (or were stopped)
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
                self.hear_held_events()
                self._requesting(+1)  # from here to its answer an outside event waits (it was not asked)
                try:
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
                    message_id = self.transcript_ids[-1]
                    # The reply as recorded (credentials scrubbed), as a resumed agent would hold it.
                    message = self.transcript[-1]
                finally:
                    self._requesting(-1)
                self.session.hooks.turn_taken(self)
                calls = message.get("tool_calls")
                if calls:
                    await self._run_tool_calls(calls, message_id)
                    continue
                utterance = LoggedString(message.get("content") or "", message_id)
                try:
                    rejection = await self.session.hooks.review(self, utterance)
                except HookFailed as failed:
                    # Never given: the agent, and whoever resumes it, must not take the answer as said.
                    self.harken(f"Your answer was not delivered: {failed}", source="system")
                    raise
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
        tasks = [asyncio.ensure_future(run_tool_call(self, call, call_message_id)) for call in calls]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
