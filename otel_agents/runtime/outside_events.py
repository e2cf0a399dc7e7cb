"""Outside events told to a session's agents: held while the model's context may not take them, then heard in order.

The transcript is exactly what the model was sent (seed 001/004), so an event told while the agent has an
LLM request in flight follows that request's answer, one told while it waits for tool results follows the
results, and one told while a run called for it has not recorded its prompt follows that prompt. Events
may come from another thread than the run's: holding or hearing one, and every transcript entry
(``Agent._log_entry``), happen under ``lock``.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator

from opentelemetry import trace
from opentelemetry.trace import SpanKind

from otel_agents.tracing import semconv as sc

if TYPE_CHECKING:
    from otel_agents.runtime.agent import Agent
    from otel_agents.runtime.session import Session


class PendingPrompt:
    """A run called with a prompt not recorded yet, for ``agent`` (None: the root, maybe not made yet)."""

    __slots__ = ("agent",)

    def __init__(self, agent: "Agent | None") -> None:
        self.agent = agent


class OutsideEvents:
    """One session's outside events: ``tell`` hears or holds one; runs say when their prompt is pending."""

    def __init__(self, session: "Session") -> None:
        self.session = session
        self.lock = threading.RLock()
        self._pending: list[PendingPrompt] = []

    def tell(self, agent: "Agent", text: str, source: str | None) -> str | None:
        """Heard now (its message id) or held (None) until the agent's context may take it; a ``LoggedString``
        keeps its substance either way (``ToolContext.tell``'s entries, of no source)."""
        with self.lock:
            if agent.holds_events() or self._prompt_pending_for(agent):
                agent.hold_event(text, source)
                return None
            return self.in_span(agent, lambda: agent.harken(text, source=source))

    def in_span(self, agent: "Agent", hear: Callable[[], Any]) -> Any:
        """``hear()`` in the current span, or, outside any, in an ``external_input {agent}`` span of its own."""
        if trace.get_current_span().is_recording():
            return hear()
        session = self.session
        attrs = {
            sc.GEN_AI_CONVERSATION_ID: session.id,
            sc.SESSION_ID: session.id,
            sc.GEN_AI_AGENT_NAME: agent.name,
            sc.AGENT_ID: agent.agent_id,
        }
        with session.telemetry.tracer.start_as_current_span(
            sc.span_name(sc.OP_EXTERNAL_INPUT, agent.name), kind=SpanKind.INTERNAL, attributes=attrs
        ):
            return hear()

    def _prompt_pending_for(self, agent: "Agent") -> bool:
        root = self.session.root
        return any(p.agent is agent or (p.agent is None and agent is root) for p in self._pending)

    @contextmanager
    def prompt_pending(self, agent: "Agent | None", prompt: str | None) -> Iterator[PendingPrompt | None]:
        """Around a run called with ``prompt``: events for its agent told before ``record_prompt`` follow
        the prompt; a run that ends before recording it lets them be heard at its end."""
        if prompt is None:  # a run of no prompt records none
            yield None
            return
        pending = PendingPrompt(agent)
        with self.lock:
            self._pending.append(pending)
        try:
            yield pending
        finally:
            with self.lock:
                if self._done(pending):
                    target = agent or self.session.root
                    if target is not None and target._held_events and not self._prompt_pending_for(target):
                        self.in_span(target, target.hear_held_events)

    def record_prompt(self, pending: PendingPrompt | None, record: Callable[[], Any]) -> Any:
        """``record()`` the run's prompt; events told from here on are held or heard as ``tell`` decides."""
        with self.lock:
            if pending is not None:
                self._done(pending)
            return record()

    def _done(self, pending: PendingPrompt) -> bool:
        if pending in self._pending:
            self._pending.remove(pending)
            return True
        return False
