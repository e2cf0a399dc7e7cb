"""SessionHooks: a session's hooks of each kind, and how each kind is asked and its decision recorded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from opentelemetry import trace

from otel_agents.llm.budget import BudgetExhausted, in_force
from otel_agents.runtime.hooks import (
    ApprovalHook, Decision, HookFailed, RemindHook, ReviewHook, ToolRequest, TransformHook, hook_event,
)
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import storable_text

if TYPE_CHECKING:
    from otel_agents.runtime.agent import Agent


class SessionHooks:
    """The hooks that watch one session's agents, in the order they were added; each decision is an
    ``otel_agents.hook`` event on the span current when it was asked (hooks.py)."""

    def __init__(self) -> None:
        self.approvers: list[ApprovalHook] = []
        self.reviewers: list[ReviewHook] = []
        self.transformers: list[TransformHook] = []
        self.reminders: list[RemindHook] = []

    def names(self) -> set[str]:
        """Every installed hook's name, as its decisions are recorded."""
        return {hook.name for hooks in (self.approvers, self.reviewers, self.transformers, self.reminders)
                for hook in hooks}

    async def approve(self, request: ToolRequest) -> tuple[str, Decision] | None:
        """The first denial among the applicable approval hooks, else None."""
        span = trace.get_current_span()
        for hook in self.approvers:
            if not hook.applies_to(request):
                continue
            try:
                decision = await hook.decide(request)
            except BudgetExhausted as exc:
                if in_force(exc.meter):  # the session's (or the asking agent's) budget: the run stops here
                    raise
                decision = Decision(False, f"hook failed: {exc}")
            except Exception as exc:  # a hook that cannot judge fails closed; the agent goes on
                decision = Decision(False, f"hook failed: {type(exc).__name__}: {exc}")
            attrs = hook_event("approval", hook.name, "allow" if decision.allowed else "deny", decision.reason)
            if decision.message_id is not None:  # an agent's answer: the verdict is on record
                attrs[sc.HOOK_MESSAGE_ID] = decision.message_id
            span.add_event(sc.EVENT_HOOK, attrs)
            if not decision.allowed:
                return hook.name, decision
        return None

    async def review(self, agent: "Agent", utterance: str) -> tuple[str, Decision] | None:
        """The first rejection among the applicable review hooks, else None; a hook that fails raises
        HookFailed (an answer nobody could judge is not given)."""
        span = trace.get_current_span()
        for hook in self.reviewers:
            if not hook.applies_to(agent):
                continue
            try:
                decision = await hook.decide(agent, utterance)
            except Exception as exc:
                if isinstance(exc, BudgetExhausted) and in_force(exc.meter):
                    raise
                raise _failed(span, "review", hook.name, exc, getattr(utterance, "message_id", None)) from exc
            attrs = hook_event("review", hook.name, "accept" if decision.allowed else "reject", decision.reason)
            if getattr(utterance, "message_id", None):  # the utterance judged, for views to point at
                attrs[sc.HOOK_CAUSE] = utterance.message_id
            span.add_event(sc.EVENT_HOOK, attrs)
            if not decision.allowed:
                return hook.name, decision
        return None

    def remind(self, agent: "Agent") -> None:
        """Before an LLM turn: each due remind hook adds its message as a system-sourced entry; the hook
        event beside it (same span) names the entry and its cause (a transcript entry has substance,
        never a cause: seed 001)."""
        for hook in self.reminders:
            if not hook.applies_to(agent):
                continue
            due = hook.due(agent)
            if due is None:
                continue
            reason, cause = due
            message_id = agent.harken(hook.message, source="system")
            attrs = hook_event("remind", hook.name, "remind", reason)
            attrs[sc.HOOK_MESSAGE_ID] = message_id
            if cause is not None:
                attrs[sc.HOOK_CAUSE] = cause
            trace.get_current_span().add_event(sc.EVENT_HOOK, attrs)

    def tool_used(self, agent: "Agent", tool: str, result_id: str) -> None:
        for hook in self.reminders:
            if hook.applies_to(agent):
                hook.tool_used(agent, tool, result_id)

    def turn_taken(self, agent: "Agent") -> None:
        for hook in self.reminders:
            if hook.applies_to(agent):
                hook.turn_taken(agent)

    def transform(self, sender: "Agent", recipient: "Agent", text: str) -> str:
        """The text as every transform hook rewrote it, in order; a hook that fails raises HookFailed
        and nothing is delivered (the text it was to rewrite, say redact, does not get through)."""
        span = trace.get_current_span()
        for hook in self.transformers:
            try:
                changed = hook.rewrite(sender, recipient, text)
            except Exception as exc:
                raise _failed(span, "transform", hook.name, exc) from exc
            if changed != text:
                span.add_event(sc.EVENT_HOOK, hook_event("transform", hook.name, "rewrite"))
            text = changed
        return text


def _failed(span: trace.Span, kind: str, name: str, exc: Exception, cause: str | None = None) -> HookFailed:
    """The HookFailed to raise, its ``error`` decision recorded on the span the hook was asked on
    (naming ``cause``, the utterance a review hook failed to judge)."""
    reason = storable_text(f"{type(exc).__name__}: {exc}")  # its text may reach spans and records
    attrs = hook_event(kind, name, "error", reason)
    if cause:
        attrs[sc.HOOK_CAUSE] = cause
    span.add_event(sc.EVENT_HOOK, attrs)
    return HookFailed(f"{kind} hook '{name}' failed: {reason}")
