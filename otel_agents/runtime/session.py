"""Session: id allocation, the registry of every agent, and the seed-001 event log.

Every record the session logs becomes a span event on the span active at that
moment (and reaches the live listeners), so the trace alone can rebuild it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from opentelemetry import trace
from opentelemetry.trace import Link, SpanContext, SpanKind

from otel_agents.llm.accounting import scope
from otel_agents.llm.budget import Budget, BudgetMeter, carry_over, metering, refuse_unpriced
from otel_agents.llm.model_settings import ModelSettings
from otel_agents.runtime.eviction import EvictionPolicy, Evictor
from otel_agents.runtime.hook_dispatch import SessionHooks
from otel_agents.runtime.logged_string import LoggedString
from otel_agents.runtime.outside_events import OutsideEvents, PendingPrompt
from otel_agents.runtime.run_span import run_attributes
from otel_agents.runtime.turn_taking import Turn, held_here, hold
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import make_record
from otel_agents.tracing.session_ids import new_session_id, valid_session_id
from otel_agents.tracing.telemetry import Telemetry, marks_error_type, noop_telemetry

if TYPE_CHECKING:
    from otel_agents.llm.client import LLMClient
    from otel_agents.runtime.agent import Agent
    from otel_agents.runtime.tools import Tool

DEFAULT_MAX_TURNS = 20


@dataclass
class AgentSpec:
    """How to create an agent when it is first needed (the root, inside the first run)."""

    name: str
    model: str
    system_prompt: str | None = None
    tools: tuple["Tool", ...] = ()
    max_turns: int | None = None


@dataclass
class RunContext:
    """Facts recorded on a run's root span (ingress metadata)."""

    source: str = "api"  # cli | api | resume | external
    script: str | None = None
    model_override: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    sender: str | None = None  # of an external prompt: named in its record's source (``external:<sender>``)

    @property
    def record_source(self) -> str | None:
        """The ``source`` of the prompt's transcript entry: only outside events have one."""
        return external_source(self.sender) if self.source == "external" else None


def external_source(sender: str | None = None) -> str:
    """A record's ``source`` for an outside event: ``external``, or ``external:<sender>``."""
    return f"external:{sender}" if sender else "external"


class Session:
    """Event-stream backed state of a multi-agent system (seed 001)."""

    def __init__(
        self,
        session_id: str | None = None,
        *,
        telemetry: Telemetry | None = None,
        llm: "LLMClient | None" = None,
        root: AgentSpec | None = None,
        max_turns: int = DEFAULT_MAX_TURNS,
        message_counter: int = 0,
        agent_counter: int = 0,
        runs: int = 0,
        previous_run: SpanContext | None = None,
        agent_settings: Mapping[str, ModelSettings] | None = None,
        settings_override: ModelSettings | None = None,
        agent_budgets: Mapping[str, Budget] | None = None,
        budget: BudgetMeter | None = None,
        eviction: EvictionPolicy | None = None,
    ):
        self.id = session_id or new_session_id()
        if not valid_session_id(self.id):
            raise ValueError(f"invalid session id {self.id!r}")
        self.telemetry = telemetry or noop_telemetry()
        if llm is None:
            from otel_agents.llm.client import LLMClient

            llm = LLMClient(self.telemetry)
        self.llm = llm
        self.max_turns = max_turns
        # Request parameters: an agent's own are its parent's (or none) with those named for it
        # here on top; ``settings_override`` (``--param``) is on top of every agent's.
        self.agent_settings: dict[str, ModelSettings] = dict(agent_settings or {})
        self.settings_override = settings_override
        # Limits: an agent's by its name (it and its sub-agents), ``budget`` the whole session's (--max-cost-usd).
        self.agent_budgets: dict[str, Budget] = dict(agent_budgets or {})
        self.budget = budget
        # The limits a later resume carries on when this session's (``budget``) hold for its runs alone
        # (--budget-scope run); None: ``budget``'s own.
        self.carried_budget: Budget | None = None
        self.root_spec = root
        self.root: Agent | None = None
        self.agents: dict[str, Agent] = {}  # every agent that ever existed, by id
        self.hooks = SessionHooks()
        self._message_counter = message_counter
        self._agent_counter = agent_counter
        self.runs = runs
        self.previous_run = previous_run
        # Work that must be recorded inside the next run's span (e.g. resume repairs).
        self.before_next_run: list[Callable[[], None]] = []
        self.eviction = eviction  # the policy; it applies once the records are saved (eviction.keep_saved_records)
        self.evictor: Evictor | None = None
        self.run_turn = Turn()  # one run at a time (turn_taking.py)
        self.outside = OutsideEvents(self)  # held until the model's context may take them (outside_events.py)

    # --- ids ---
    def allocate_message_id(self) -> str:
        self._message_counter += 1
        return f"msg_{self._message_counter:06d}"

    def allocate_agent_id(self) -> str:
        self._agent_counter += 1
        return f"agent_{self._agent_counter:03d}"

    def has_record(self, message_id: str) -> bool:
        """Whether a record of this session has ``message_id`` (each id made is recorded, in order)."""
        number = message_id[4:] if message_id.startswith("msg_") else ""
        return number.isdigit() and 0 < int(number) <= self._message_counter

    @property
    def counters(self) -> tuple[int, int]:
        return self._message_counter, self._agent_counter

    # --- the three event kinds (plus truncation) ---
    def _log(self, event_type: str, **fields: Any) -> str:
        message_id = self.allocate_message_id()
        self.telemetry.record(make_record(event_type, message_id, **fields))
        return message_id

    def log_agent_created(
        self,
        agent_id: str,
        cause: str | None = None,
        name: str | None = None,
        language_model: str | None = None,
        parent: str | None = None,
    ) -> str:
        return self._log(
            sc.EVENT_AGENT_CREATED, agent_id=agent_id, name=name, cause=cause, language_model=language_model, parent=parent
        )

    def log_transcript_entry(
        self, agent_id: str, message: Mapping[str, Any], substance: str | None = None, source: str | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Returns the message id and the record as recorded (credentials scrubbed): the transcript
        holds exactly that, so a resumed agent, rebuilt from the records, sends the same bytes."""
        message_id = self.allocate_message_id()
        record = make_record(
            sc.EVENT_TRANSCRIPT_ENTRY,
            message_id,
            agent_id=agent_id,
            role=message["role"],
            content=message.get("content"),
            tool_calls=message.get("tool_calls"),
            tool_call_id=message.get("tool_call_id"),
            name=message.get("name"),
            substance=substance,
            source=source,
            reasoning_content=message.get("reasoning_content"),
            thinking_blocks=message.get("thinking_blocks"),
        )
        return message_id, self.telemetry.record(record)

    def log_piece_of_text(self, agent_id: str, content: str, cause: str | list[str]) -> str:
        return self._log(sc.EVENT_PIECE_OF_TEXT, agent_id=agent_id, content=content, cause=cause)

    def log_truncation(self, agent_id: str, keep: int, cause: str | None = None) -> str:
        return self._log(sc.EVENT_TRANSCRIPT_TRUNCATED, agent_id=agent_id, keep=keep, cause=cause)

    def host_notice(self, agent_id: str, notice: str, content: str, cause: str | list[str] | None = None) -> str:
        """A notice for the user, never the model (seed 004): a ``host_notice`` record on the current
        span, the one that caused it. ``notice`` is its kind, one of ``sc.HOST_NOTICE_KINDS``; no
        transcript holds it, so no model request ever carries it. ``cause``: the records it tells of
        (a denial's hook answer and tool call, a truncation's record), for views to trace."""
        if notice not in sc.HOST_NOTICE_KINDS:  # readers (views, console, docs/spans.md) know only these
            raise ValueError(f"unknown host notice kind {notice!r}; one of {', '.join(sc.HOST_NOTICE_KINDS)}")
        return self._log(sc.EVENT_HOST_NOTICE, agent_id=agent_id, notice=notice, content=content, cause=cause)

    # --- agents ---
    def register(self, agent: "Agent") -> None:
        if agent.agent_id in self.agents:
            raise ValueError(f"agent id {agent.agent_id} is already registered")
        self.agents[agent.agent_id] = agent
        if self.evictor is not None:
            self.evictor.touched(agent)

    def settings_for(self, name: str, parent: "Agent | None", own: ModelSettings | None = None) -> ModelSettings:
        """The request parameters an agent named ``name`` starts with (inherited, then its own)."""
        inherited = parent.settings if parent is not None else ModelSettings()
        return inherited.merged(self.agent_settings.get(name)).merged(own)

    def request_settings(self, agent: "Agent") -> ModelSettings:
        """What ``agent``'s next LLM request sends: its own parameters under the session's override."""
        return agent.settings.merged(self.settings_override)

    def refuse_unpriced(self) -> None:
        """``BudgetError`` when a cost limit is set and a model of the session (sub-agents take
        their parent's) has no price: checked before anything runs."""
        models = [a.model for a in self.agents.values()] + ([self.root_spec.model] if self.root_spec else [])
        refuse_unpriced([self.budget.budget if self.budget else None, *self.agent_budgets.values()], models,
                        self.llm.prices)

    def carry_spent(self, totals: Mapping[str, Any] | None,
                    agents: Callable[[], Mapping[str, Mapping[str, Any]]] | None = None) -> None:
        """Resumed: the session's and the root agent's limits count what the session spent before, every
        other restored agent's what it and its sub-agents spent (``agents()``: totals by agent id, asked
        only when such an agent has a budget)."""
        carry_over((self.budget, self.root.budget_meter if self.root else None), totals)
        metered = [a for a in self.agents.values() if a.budget_meter is not None and a is not self.root]
        if metered and agents is not None:
            spent = agents()
            for agent in metered:
                carry_over((agent.budget_meter,), spent.get(agent.agent_id))

    def tool_names(self) -> frozenset[str]:
        """Every tool an agent of this session can call: the built-ins, the root's and the agents' made
        so far (a sub-agent is given its parent's, so no later agent has one of its own)."""
        from otel_agents.runtime.builtins import BUILTIN_TOOLS

        names = set(BUILTIN_TOOLS)
        names.update(t.name for t in (self.root_spec.tools if self.root_spec else ()))
        for agent in self.agents.values():
            names.update(agent.user_tools)
        return frozenset(names)

    def find_agent(self, name_or_id: str) -> "Agent | None":
        """By id, else the most recently created agent of that name, else by the path of names from the
        root (``main/Jill/Inner``, as the views take it; each step the most recent child of that name)."""
        if name_or_id in self.agents:
            return self.agents[name_or_id]
        newest_first = list(reversed(self.agents.values()))
        found = next((a for a in newest_first if a.name == name_or_id), None)  # a name saved with "/" too
        if found is not None or "/" not in name_or_id:  # new names hold no "/": a path is unambiguous
            return found
        for step in name_or_id.split("/"):
            found = next((a for a in newest_first if a.name == step and a.parent is found), None)
            if found is None:
                return None
        return found

    def create_agent(
        self,
        name: str,
        model: str,
        *,
        system_prompt: str | None = None,
        parent: "Agent | None" = None,
        cause: str | None = None,
        tools: Iterable["Tool"] = (),
        max_turns: int | None = None,
        settings: ModelSettings | None = None,
        agent_id: str | None = None,
    ) -> "Agent":
        """Create, register and log an agent inside a ``create_agent {name}`` span (``agent_id``: one
        allocated already, else the next)."""
        from otel_agents.runtime.agent import Agent

        from otel_agents.llm.client import provider_of, request_model_of

        attrs = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_CREATE_AGENT,
            sc.GEN_AI_PROVIDER_NAME: provider_of(model),
            sc.GEN_AI_REQUEST_MODEL: request_model_of(model),
            sc.GEN_AI_AGENT_NAME: name,
            sc.GEN_AI_CONVERSATION_ID: self.id,
            sc.AGENT_MODEL: model,
        }
        with self.telemetry.tracer.start_as_current_span(
            sc.span_name(sc.OP_CREATE_AGENT, name), kind=SpanKind.INTERNAL, attributes=attrs
        ) as span:
            agent = Agent(self, name, model, tools=tools, parent=parent, max_turns=max_turns,
                          settings=self.settings_for(name, parent, settings), agent_id=agent_id)
            span.set_attribute(sc.GEN_AI_AGENT_ID, agent.agent_id)
            span.set_attribute(sc.AGENT_ID, agent.agent_id)
            if parent is not None:
                span.set_attribute(sc.AGENT_PARENT_ID, parent.agent_id)
            self.log_agent_created(
                agent.agent_id,
                cause=cause,
                name=name,
                language_model=model,
                parent=parent.agent_id if parent else None,
            )
            if parent is not None:
                parent.subagents[name] = agent
            if system_prompt is not None:
                agent.add_system(system_prompt)
            if agent.description:
                span.set_attribute(sc.GEN_AI_AGENT_DESCRIPTION, agent.description)
        return agent

    def ensure_root(self, agent_id: str | None = None) -> "Agent":
        """The root agent, created from the root spec (with ``agent_id`` when allocated already) if need be.
        Once: ``Session.external`` may ask for it from several threads, and a run from its loop."""
        with self.outside.lock:
            if self.root is None:
                if self.root_spec is None:
                    raise ValueError("this session has no root agent and no root spec")
                spec = self.root_spec
                self.root = self.create_agent(
                    spec.name, spec.model, system_prompt=spec.system_prompt, tools=spec.tools,
                    max_turns=spec.max_turns, agent_id=agent_id,
                )
            return self.root

    # --- runs and outside events ---
    def external(self, agent: "Agent", text: str, sender: str | None = None) -> str | None:
        """An outside event (seed example 4): a user message with source ``external``.

        Inside an operation the record joins the current span; on its own it gets
        an ``external_input {agent}`` span, so the trace holds it like any other.
        To have the agent answer at once, use ``run(text, agent=..., context=
        RunContext(source="external"))`` instead. ``sender`` is named in the record's source.
        The transcript is what the model was sent, in order, so an event is held (None is returned)
        while the agent has an LLM request in flight (heard once the answer is recorded: the answer
        was made without it), waits for tool results (heard once they are all in: ``Agent.holds_events``)
        or has a run called whose prompt is not recorded yet (heard after that prompt). Held events are
        heard however the run ends (failed, cancelled). Safe to call from another thread than the run's.
        """
        return self.outside.tell(agent, text, external_source(sender))

    async def run(self, prompt: str | None, *, agent: "Agent | None" = None,
                  context: RunContext | None = None) -> LoggedString:
        """One user prompt = one trace, rooted at ``invoke_agent {agent}``; ``None``: only the work due
        before the next run (a fork that records its inherited state and runs no prompt). Runs of one
        session take turns: one started while another is in progress waits for it (turn_taking.py).
        One started inside a run of this session (by a tool or a hook) could only wait for the run it is
        inside: ``RuntimeError``."""
        self.refuse_nested_run()
        with self.outside.prompt_pending(agent, prompt) as pending:
            async with hold(self.run_turn):
                return await self._run(prompt, agent, context or RunContext(), pending)

    def refuse_nested_run(self) -> None:
        """``RuntimeError`` inside a run of this session: a run there would have to wait for the one it is in
        (re-entrant turns let it run at once instead, its spending counted in the outer run's spans)."""
        if held_here(self.run_turn):
            raise RuntimeError(f"session {self.id}: a run cannot start inside one of its own runs (from a tool or "
                               "a hook): it would wait for the run it is inside; tell the agent with "
                               "ToolContext.tell or Session.external instead, or run once this run has returned")

    async def _run(self, prompt: str | None, agent: "Agent | None", context: RunContext,
                   pending: PendingPrompt | None = None) -> LoggedString:
        if prompt is not None:
            await self.llm.prepare()  # a fork with no prompt calls no model, and loads nothing
        self.runs += 1
        links = [Link(self.previous_run)] if self.previous_run is not None else []
        target_name = agent.name if agent else (self.root.name if self.root else self.root_spec.name if self.root_spec else "agent")
        # The answering agent's id from the span's start: a run killed before its end leaves only the
        # start in the journal, and a run known by name alone would show a second agent.
        root_id = self.allocate_agent_id() if agent is None and self.root is None and self.root_spec else None
        attrs = run_attributes(self, agent or self.root, target_name, root_id, context)
        tracer = self.telemetry.tracer
        # A new trace per run, even if the caller is inside another span.
        with tracer.start_as_current_span(
            sc.span_name(sc.OP_INVOKE_AGENT, target_name),
            context=trace.set_span_in_context(trace.INVALID_SPAN),
            kind=SpanKind.INTERNAL,
            attributes=attrs,
            links=links,
        ) as span, scope("agent", span), marks_error_type(span), metering(self.budget):
            self.previous_run = span.get_span_context() if span.get_span_context().is_valid else self.previous_run
            if self.evictor is not None:
                self.evictor.keep_checking_idle()  # idle agents leave while the session waits, too
            target = agent or self.ensure_root(agent_id=root_id)
            pending, self.before_next_run = self.before_next_run, []
            for work in pending:
                work()
            span.set_attributes(target.span_attributes())
            if prompt is None:
                return LoggedString("")
            try:
                async with hold(target.turn):  # told and asked in one exchange
                    self.outside.record_prompt(pending, lambda: target.harken(prompt, source=context.record_source))
                    return await target.respond_in_current_span()
            finally:
                if self.evictor is not None:
                    self.evictor.report(span)

