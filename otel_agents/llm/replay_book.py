"""Recorded LLM calls of a saved session and the check of each replayed request against them.

Calls are keyed by agent name, turn (the agent's n-th LLM call, counted from 1) and
attempt. What counts as a difference: the messages sent (role, content, tool calls, tool
results; empty fields ignored) always; the tool definitions and the request parameters
(temperature, max_tokens, top_p, stop, seed) only when ``strict``, else they are noted
and the recorded answer is still given. A request with no recorded call is a divergence.
The first divergence is kept and every later request refused, so the run stops there.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import Any

PARAMETERS = ("temperature", "max_tokens", "top_p", "stop", "seed")
_DIFF_LINES = 40  # a divergence report shows at most this many diff lines


@dataclass
class RecordedCall:
    """One recorded attempt: what was sent, and either the answer or the error it got."""

    agent: str
    turn: int
    attempt: int
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    message: dict[str, Any] | None = None  # the assistant message answered; None for a failed attempt
    usage: dict[str, int] = field(default_factory=dict)
    response_id: str | None = None
    error_type: str | None = None
    compare: bool = True  # False for runs before --from-run: not made again, only their turns counted
    cost_usd: float | None = None  # what the source paid: budgets count it, the replay itself costs nothing
    retry_after: float | None = None  # the wait a failed attempt's response asked for (Retry-After, seconds)


@dataclass(frozen=True)
class Divergence:
    agent: str
    turn: int
    attempt: int
    what: str  # "messages", "tools", "parameters" or "no recorded call"
    diff: str

    def summary(self) -> str:
        where = f"agent {self.agent}, turn {self.turn}, attempt {self.attempt}"
        return f"{where}: no recorded call" if self.what == "no recorded call" else f"{where}: {self.what} differ"

    def lines(self) -> list[str]:
        return [f"replay diverged: {self.summary()}", *self.diff.splitlines()]


@dataclass
class ReplayBook:
    """The recorded calls of one saved session and what the replay found so far."""

    calls: dict[tuple[str, int, int], RecordedCall]
    strict: bool = False
    divergence: Divergence | None = None
    notes: list[Divergence] = field(default_factory=list)  # differences tolerated without --strict
    used: set[tuple[str, int, int]] = field(default_factory=set)
    _turns: dict[str, int] = field(default_factory=dict)
    _answered: dict[tuple[str, int], RecordedCall] = field(default_factory=dict)  # (agent, attempt) -> last answer

    @classmethod
    def of(cls, calls: list[RecordedCall], strict: bool = False) -> "ReplayBook":
        """The book of the calls to compare; the others (runs before --from-run, which the replay starts
        after) only count their turns, so turns go on counting from the session's start."""
        book = cls({(c.agent, c.turn, c.attempt): c for c in calls if c.compare}, strict=strict)
        for call in calls:
            if not call.compare:
                book._turns[call.agent] = max(book._turns.get(call.agent, 0), call.turn)
        return book

    def unused(self) -> list[RecordedCall]:
        """Recorded calls the replay never made (the run ended sooner than the recorded one)."""
        return [call for key, call in self.calls.items() if key not in self.used]

    def answer(self, agent: str, attempt: int, messages: list[dict[str, Any]],
               optional_params: dict[str, Any]) -> RecordedCall:
        if self.divergence is not None:
            raise _stopped(self.divergence)
        if attempt == 1:  # a retry is the same turn
            self._turns[agent] = self._turns.get(agent, 0) + 1
        turn = self._turns.get(agent, 1)
        key = (agent, turn, attempt)
        call = self.calls.get(key)
        if call is None:
            self.divergence = Divergence(agent, turn, attempt, "no recorded call",
                                         _diff([], messages, "recorded (none)", "replayed"))
            raise _stopped(self.divergence)
        self.used.add(key)
        if call.compare:
            self._check(call, messages, optional_params)
        self._answered[(agent, attempt)] = call
        return call

    def recorded_cost(self, agent: str, attempt: int) -> float | None:
        """What the source paid for the call just answered to ``agent``'s ``attempt``: what its budgets counted."""
        call = self._answered.get((agent, attempt))
        return call.cost_usd if call is not None else None

    def _check(self, call: RecordedCall, messages: list[dict[str, Any]], optional_params: dict[str, Any]) -> None:
        sent, recorded = [_comparable(m) for m in messages], [_comparable(m) for m in call.messages]
        if sent != recorded:
            self.divergence = Divergence(call.agent, call.turn, call.attempt, "messages",
                                         _diff(recorded, sent, "recorded", "replayed"))
            raise _stopped(self.divergence)
        others = [("tools", call.tools or None, optional_params.get("tools") or None),
                  ("parameters", call.parameters, _parameters(optional_params))]
        for what, recorded, now in others:
            if _canonical(recorded) != _canonical(now):
                found = Divergence(call.agent, call.turn, call.attempt, what,
                                   _diff(recorded, now, "recorded", "replayed"))
                if self.strict:
                    self.divergence = found
                    raise _stopped(found)
                self.notes.append(found)


def _comparable(message: dict[str, Any]) -> dict[str, Any]:
    """A message as the model reads it: its empty fields dropped (None and absent say the same)."""
    return {k: v for k, v in message.items() if v is not None and v != []}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _parameters(optional_params: dict[str, Any]) -> dict[str, Any]:
    out = {k: optional_params[k] for k in PARAMETERS if optional_params.get(k) is not None}
    if "stop" in out:
        out["stop"] = list(out["stop"]) if not isinstance(out["stop"], str) else [out["stop"]]
    return out


def _diff(recorded: Any, replayed: Any, before: str, after: str) -> str:
    old = json.dumps(recorded, indent=1, sort_keys=True, ensure_ascii=False, default=str).splitlines()
    new = json.dumps(replayed, indent=1, sort_keys=True, ensure_ascii=False, default=str).splitlines()
    lines = list(difflib.unified_diff(old, new, before, after, n=2, lineterm=""))
    if len(lines) > _DIFF_LINES:
        lines = lines[:_DIFF_LINES] + [f"... ({len(lines) - _DIFF_LINES} more diff lines)"]
    return "\n".join(lines)


class Stopped(Exception):
    """The request diverged (now or earlier): the provider fails it."""


def _stopped(divergence: Divergence) -> Stopped:
    return Stopped(divergence.lines()[0])
