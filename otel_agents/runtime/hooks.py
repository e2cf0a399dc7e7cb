"""Hooks that watch agents (seed 001 example 3 and beyond).

- Approval hooks are consulted before a tool runs and may deny it; a denial
  becomes the tool result ``Error: Action blocked by hook '<name>': <reason>``.
  A hook may itself be an agent: it hears a system-sourced prompt and answers
  ``APPROVE`` or ``DENY. <reason>``; any other answer denies (a guard fails closed).
- Review hooks may reject an utterance with a reason; the reason is fed back to
  the agent (as a system-sourced user turn) and the agent tries again.
- Transform hooks rewrite a delivery (e.g. redaction); the result keeps the
  original's substance, so the intervention is visible by comparing the two.
- An approval hook that fails denies; a review or transform hook that fails stops
  the response it was asked in (``HookFailed``): nothing it was guarding gets through.
- Remind hooks push context: before a watched agent's next LLM turn they add a
  system-sourced message after every N turns, after a named tool ran, or once a
  timer has run out; the hook event names the entry and the message that triggered it.

Every decision is a span event ``otel_agents.hook`` on the span it concerns. The
decorators ``approval``, ``review`` and ``transform`` and the ``reset`` and ``remind`` factories build them
for the public API (docs/python-api.md).
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable, Union, get_args

from otel_agents.arguments import (
    can_take, check_agent_name, check_count, check_required_text, check_seconds, check_text, kind_of, names_of,
)
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import storable_text

if TYPE_CHECKING:
    from otel_agents.runtime.agent import Agent


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""
    message_id: str | None = None  # the record the verdict was read from (an agent hook's answer)

    def __post_init__(self) -> None:
        # Decision("no") would allow: a non-empty string is true. A guard's verdict is a bool or nothing.
        if not isinstance(self.allowed, bool):
            raise TypeError(f"Decision: allowed must be True or False, not {kind_of(self.allowed)}")
        if not isinstance(self.reason, str):
            raise TypeError(f"Decision: reason must be a string, not {kind_of(self.reason)}")
        if self.message_id is not None and not isinstance(self.message_id, str):
            raise TypeError(f"Decision: message_id must be a message id, not {kind_of(self.message_id)}")

    def told(self, text: str) -> str:
        """``text: reason``, or ``text.`` when the hook gave no reason (no colon left hanging)."""
        return f"{text}: {self.reason}" if str(self.reason).strip() else f"{text}."


@dataclass(frozen=True)
class ToolRequest:
    """What an approval hook is asked about."""

    agent: "Agent"
    tool: str
    arguments: dict[str, Any]
    tool_call_id: str


MaybeAwaitable = Union[Any, Awaitable[Any]]


class HookFailed(RuntimeError):
    """A review or transform hook raised, or returned what its kind cannot use. The response it was asked
    in stops: a sub-agent's becomes its caller's tool error, the root's ends the run. (Not a rejection:
    the model could not mend what the hook got wrong, and asking it again would only spend.)"""


def as_decision(kind: str, name: str, result: Any) -> Decision:
    """A hook's answer as a Decision: a Decision or a bool. Anything else is refused, None (a hook
    function that forgot to return) and a string such as ``"DENY"`` alike: read as true, it would allow."""
    if isinstance(result, Decision):
        return result
    if isinstance(result, bool):
        return Decision(result)
    raise TypeError(f"{kind} hook {name!r} returned {'None' if result is None else kind_of(result)}; "
                    "return a Decision or a bool")


async def _resolve(value: MaybeAwaitable) -> Any:
    return await value if inspect.isawaitable(value) else value


def _name_of(func: Any) -> str:
    """A hook's default name: its function's (a partial or a callable object has none: its type's)."""
    return getattr(func, "__name__", None) or type(func).__name__


def _hook_function(kind: str, func: Any, takes: str) -> None:
    """``func`` can be called as a ``kind`` hook is: with the arguments ``takes`` names, positionally.
    Checked when the hook is made, so a wrong function fails at its decorator, not mid-run."""
    if not callable(func):
        raise TypeError(f"{kind}: takes a function of ({takes}), not {kind_of(func)}")
    if not can_take(func, len(takes.split(", "))):
        raise TypeError(f"{kind}: {_name_of(func)}{inspect.signature(func)} cannot be called with ({takes})")


@dataclass
class ApprovalHook:
    name: str
    check: Callable[[ToolRequest], MaybeAwaitable]  # returns Decision (or bool)
    tools: frozenset[str] | None = None  # None: every tool
    agents: frozenset[str] | None = None  # names of the agents watched; None: every agent
    # The agent whose answer decides (agent_approval_hook's): a scripted session refuses a name its
    # script has no agent of, since until that agent exists the hook approves everything.
    agent: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:  # made directly too, not only by the decorators
        check_required_text("ApprovalHook", "name", self.name)
        if self.agent is not None:
            check_agent_name("ApprovalHook", "agent", self.agent)
        _hook_function("ApprovalHook", self.check, "request")
        self.tools = names_of("ApprovalHook", "tools", self.tools)
        self.agents = names_of("ApprovalHook", "agents", self.agents, agent_names=True)

    def applies_to(self, request: ToolRequest) -> bool:
        return (self.tools is None or request.tool in self.tools) and (
            self.agents is None or request.agent.name in self.agents
        )

    async def decide(self, request: ToolRequest) -> Decision:
        return as_decision("approval", self.name, await _resolve(self.check(request)))


class HookToolsError(ValueError):
    """A hook names a tool the session does not have (``check_tools_named``)."""


def check_tools_named(where: str, names: Iterable[str] | None, known: frozenset[str]) -> None:
    """Refuse a tool name no agent of the session has: a hook watching or denying only that tool would
    never act, and a guard that never acts is a typo found too late (``"secrets"`` for ``"secret"``)."""
    unknown = sorted(set(names or ()) - known)
    if unknown:
        named = ", ".join(repr(n) for n in unknown)
        raise HookToolsError(f"{where} names {named}, which no agent of this session has as a tool "
                         f"(its tools: {', '.join(sorted(known))}): the hook would never act on it")


@dataclass
class ReviewHook:
    name: str
    review: Callable[["Agent", str], MaybeAwaitable]  # returns Decision (or bool)
    agents: frozenset[str] | None = None  # agent names; None: every agent

    def __post_init__(self) -> None:
        check_required_text("ReviewHook", "name", self.name)
        _hook_function("ReviewHook", self.review, "agent, utterance")
        self.agents = names_of("ReviewHook", "agents", self.agents, agent_names=True)

    def applies_to(self, agent: "Agent") -> bool:
        return self.agents is None or agent.name in self.agents

    async def decide(self, agent: "Agent", utterance: str) -> Decision:
        return as_decision("review", self.name, await _resolve(self.review(agent, utterance)))


@dataclass
class TransformHook:
    name: str
    transform: Callable[["Agent", "Agent", str], str]  # (sender, recipient, text) -> text

    def __post_init__(self) -> None:
        check_required_text("TransformHook", "name", self.name)
        _hook_function("TransformHook", self.transform, "sender, recipient, text")

    def rewrite(self, sender: "Agent", recipient: "Agent", text: str) -> str:
        changed = self.transform(sender, recipient, text)
        if isinstance(changed, str):
            return changed
        if inspect.iscoroutine(changed):
            changed.close()  # never awaited: closed here, so Python does not warn about it later
            raise TypeError(f"transform hook {self.name!r} is async; a transform returns its text at once")
        raise TypeError(f"transform hook {self.name!r} returned {type(changed).__name__}, not text")


@dataclass
class RemindHook:
    """Adds ``message`` (source ``system``) to a watched agent's transcript before its next LLM turn.

    Triggers (any combination): every ``after_turns`` LLM turns of the agent, after one of ``tools``
    ran, or once ``every_seconds`` have passed since the agent was last reminded (or first seen).
    Reminders join at turn boundaries only, so a tool call is never separated from its result.
    Counts live in the running process: a resumed session starts them afresh.
    """

    name: str
    message: str
    agents: frozenset[str] | None = None  # agent names; None: every agent
    after_turns: int | None = None
    tools: frozenset[str] | None = None
    every_seconds: float | None = None
    # Process state, not configuration: the clock is replaceable (tests), the counts are per agent id.
    _clock: Callable[[], float] = field(default=time.monotonic, init=False, repr=False)
    _turns: dict[str, int] = field(default_factory=dict, init=False, repr=False)  # turns since the last reminder
    _since: dict[str, float] = field(default_factory=dict, init=False, repr=False)  # when its timer started
    _tool_used: dict[str, tuple[str, str]] = field(default_factory=dict, init=False, repr=False)  # (tool, result id)

    def __post_init__(self) -> None:
        check_required_text("RemindHook", "name", self.name)
        check_required_text("RemindHook", "message", self.message)
        self.agents = names_of("RemindHook", "agents", self.agents, agent_names=True)
        self.tools = names_of("RemindHook", "tools", self.tools)
        if self.after_turns is None and self.tools is None and self.every_seconds is None:
            raise ValueError(f"remind hook {self.name!r} needs after_turns, tools or every_seconds")
        if self.after_turns is not None and self.after_turns < 1:
            raise ValueError(f"remind hook {self.name!r}: after_turns must be at least 1")
        if self.every_seconds is not None and self.every_seconds <= 0:
            raise ValueError(f"remind hook {self.name!r}: every_seconds must be positive")

    def applies_to(self, agent: "Agent") -> bool:
        return self.agents is None or agent.name in self.agents

    def turn_taken(self, agent: "Agent") -> None:
        self._turns[agent.agent_id] = self._turns.get(agent.agent_id, 0) + 1

    def tool_used(self, agent: "Agent", tool: str, result_id: str) -> None:
        if self.tools is not None and tool in self.tools:
            self._tool_used[agent.agent_id] = (tool, result_id)

    def due(self, agent: "Agent") -> tuple[str, str | None] | None:
        """Why the agent is reminded now and the message that triggered it (the tool's result, else the
        agent's last entry); the counts restart. None when no reminder is due."""
        key, now = agent.agent_id, self._clock()
        since = self._since.setdefault(key, now)
        last = agent.transcript_ids[-1] if agent.transcript_ids else None
        if key in self._tool_used:
            tool, result_id = self._tool_used[key]
            due = (f"tool '{tool}' was used", result_id)
        elif self.after_turns is not None and self._turns.get(key, 0) >= self.after_turns:
            turns = self._turns[key]
            due = (f"after {turns} turn{'' if turns == 1 else 's'}", last)
        elif self.every_seconds is not None and now - since >= self.every_seconds:
            due = (f"{self.every_seconds:g}s passed", last)
        else:
            return None
        self._turns[key], self._since[key] = 0, now
        self._tool_used.pop(key, None)
        return due


# Every kind of hook a session takes; the tuple is what isinstance checks need.
Hook = Union[ApprovalHook, ReviewHook, TransformHook, RemindHook]
HOOK_TYPES: tuple[type, ...] = get_args(Hook)


def hook_event(kind: str, name: str, decision: str, reason: str = "") -> dict[str, Any]:
    # A hook's reason is the application's text: a lone surrogate in it would stop the span being saved.
    return {sc.HOOK_KIND: kind, sc.HOOK_NAME: name, sc.HOOK_DECISION: decision, sc.HOOK_REASON: storable_text(reason)}


def approval(func: Callable[[ToolRequest], MaybeAwaitable] | None = None, *, name: str | None = None,
             tools: Iterable[str] | None = None, agents: Iterable[str] | None = None):
    """Decorator: ``@approval`` or ``@approval(tools=[...], agents=[...])`` makes an :class:`ApprovalHook`
    of a function that takes a :class:`ToolRequest` and returns a :class:`Decision` or a bool."""
    check_text("approval", "name", name)
    tools, agents = names_of("approval", "tools", tools), names_of("approval", "agents", agents, agent_names=True)

    def make(f: Callable[[ToolRequest], MaybeAwaitable]) -> ApprovalHook:
        _hook_function("approval", f, "request")
        return ApprovalHook(name or _name_of(f), f, tools, agents)

    return make if func is None else make(func)


def review(func: Callable[["Agent", str], MaybeAwaitable] | None = None, *, name: str | None = None,
           agents: Iterable[str] | None = None):
    """Decorator: a :class:`ReviewHook` of ``(agent, utterance) -> Decision | bool``; a rejection's
    reason goes back to the agent, which tries again."""
    check_text("review", "name", name)
    agents = names_of("review", "agents", agents, agent_names=True)

    def make(f: Callable[["Agent", str], MaybeAwaitable]) -> ReviewHook:
        _hook_function("review", f, "agent, utterance")
        return ReviewHook(name or _name_of(f), f, agents)

    return make if func is None else make(func)


def transform(func: Callable[["Agent", "Agent", str], str] | None = None, *, name: str | None = None):
    """Decorator: a :class:`TransformHook` of ``(sender, recipient, text) -> text``."""
    check_text("transform", "name", name)

    def make(f: Callable[["Agent", "Agent", str], str]) -> TransformHook:
        _hook_function("transform", f, "sender, recipient, text")
        if inspect.iscoroutinefunction(f):
            raise TypeError(f"transform: {_name_of(f)} is async; a transform returns its text at once")
        return TransformHook(name or _name_of(f), f)

    return make if func is None else make(func)


def reset(max_entries: int, keep: int = 1, *, name: str = "reset", agents: Iterable[str] | None = None) -> ReviewHook:
    """Working-memory reset: after an utterance, a transcript past ``max_entries`` keeps its first ``keep``."""
    check_count("reset", "max_entries", max_entries, least=0)
    check_count("reset", "keep", keep, least=0)
    if keep > max_entries:  # it would cut nothing, and say so after every utterance
        raise ValueError(f"reset: max_entries= ({max_entries}) must be at least keep= ({keep}, the first entries "
                         "a reset keeps; by default 1, the system prompt)")
    check_required_text("reset", "name", name)
    agents = names_of("reset", "agents", agents, agent_names=True)

    def check(agent: "Agent", utterance: str) -> Decision:
        if len(agent.transcript) > max_entries:
            agent.truncate(keep, cause=getattr(utterance, "message_id", None))
        return Decision(True)

    return ReviewHook(name, check, agents)


def remind(message: str, *, name: str = "remind", agents: Iterable[str] | None = None, after_turns: int | None = None,
           tools: Iterable[str] | None = None, every_seconds: float | None = None) -> RemindHook:
    """A :class:`RemindHook`: ``message`` is added (source ``system``) after every ``after_turns`` LLM turns,
    after one of ``tools`` ran, or every ``every_seconds`` (at the next turn boundary)."""
    check_required_text("remind", "message", message)
    check_required_text("remind", "name", name)
    check_count("remind", "after_turns", after_turns, optional=True)
    check_seconds("remind", "every_seconds", every_seconds, optional=True)
    return RemindHook(name, message, names_of("remind", "agents", agents, agent_names=True), after_turns,
                      names_of("remind", "tools", tools), every_seconds)
