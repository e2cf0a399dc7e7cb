"""Evicting idle agents: which agents keep their transcript in memory, and bringing one back from the saved records.

Seed 001 ("memory management"): a session with many agents keeps only the active
ones in memory. An evicted agent stays registered (id, name, model, parent,
sub-agents, limits: a few hundred bytes); its transcript and entry ids, the part
that grows, are dropped and rebuilt from its saved records the next time anything
reads them (a message to it, its response, a hook looking at it, a resume).

An agent is evicted only once its saved records are proven to rebuild exactly the
transcript it holds (entry for entry, ids included): the recorder may write a
moment later than the run logs, and a session saved without contents cannot give
anything back. So eviction can never change what an agent sends or says.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol

from pydantic import ConfigDict, Field, field_validator

from otel_agents.arguments import CheckedModel
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import message_from_record

if TYPE_CHECKING:
    from otel_agents.runtime.agent import Agent
    from otel_agents.runtime.session import Session


class EvictionPolicy(CheckedModel):
    """When an agent's transcript leaves memory; frozen. Both unset: never.

    ``max_live_agents``: when a response ends, the least recently used agents are
    evicted until at most this many hold their transcript. ``idle_seconds``: an agent
    unused for that long is evicted then too, even under the limit, and by a timer on
    the session's event loop while it waits between events (``run --watch``, a long
    tool call), so at most ``idle_seconds`` plus half of it after its last use. Never evicted: the
    agents answering (the run's agent, a parent waiting for its sub-agent, ...), an
    agent whose latest records the recorder has not written yet (evicted at a later
    check), and one whose saved records differ from what it holds.

    Bound: transcripts in memory are those of at most ``max_live_agents`` agents plus
    the responses in progress (plus, briefly, agents the recorder is behind on); what
    still grows with the session is each agent's registration (ids, names, sub-agent
    map, limits: a few hundred bytes) and 16 bytes per saved transcript record (the
    reader's offsets). A revival reads that agent's records only, by offset. Eviction
    needs a saved session directory (recording); without one nothing is ever evicted.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_live_agents: int | None = Field(default=None, ge=0)
    idle_seconds: float | None = Field(default=None, ge=0)

    @field_validator("max_live_agents", mode="before")
    @classmethod
    def _count_is_not_a_boolean(cls, value: Any) -> Any:
        if isinstance(value, bool):  # True would be 1 agent
            raise ValueError("must be an integer, not a boolean")
        return value

    @field_validator("idle_seconds")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        # A validator, not allow_inf_nan: that constraint's repr differs between pydantic releases,
        # and the public API snapshot records the signature.
        if value is not None and not math.isfinite(value):
            raise ValueError("idle_seconds must be a finite number of seconds")
        return value

    @property
    def evicts(self) -> bool:
        return self.max_live_agents is not None or self.idle_seconds is not None


class SavedAgentRecords(Protocol):
    """The saved records of one agent: where an evicted agent comes back from (supplied by the uses layer).

    ``records_of(agent_id)`` returns that agent's ``transcript_entry`` and
    ``transcript_truncated`` records saved so far, in message-id order, each with its
    seed-001 fields only (no ``ts``/``trace_id``/``span_id``) and exactly as saved. It
    may lag what the agent logged (the recorder writes a moment later): the caller
    compares before dropping anything. It never changes a record once returned.
    Raises ``OSError`` or ``ValueError`` when the saved records cannot be read.
    """

    def records_of(self, agent_id: str) -> list[dict[str, Any]]: ...


class RevivalError(RuntimeError):
    """An evicted agent's saved records no longer rebuild what it held (the session directory changed)."""


def replay_into(transcript: list[dict[str, Any]], ids: list[str], record: dict[str, Any]) -> None:
    """One saved ``transcript_entry`` or ``transcript_truncated`` record applied to a transcript and its ids
    (resume and revival alike); other kinds change no transcript."""
    kind = record.get("event_type")
    if kind == sc.EVENT_TRANSCRIPT_ENTRY:
        transcript.append(message_from_record(record))
        ids.append(record["message_id"])
    elif kind == sc.EVENT_TRANSCRIPT_TRUNCATED:
        del transcript[record["keep"]:]
        del ids[record["keep"]:]


def rebuilt(records: Iterable[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    transcript: list[dict[str, Any]] = []
    ids: list[str] = []
    for record in records:
        replay_into(transcript, ids, record)
    return transcript, ids


class Evictor:
    """The live agents in least-recently-used order, evicted by the policy and revived on demand."""

    def __init__(self, policy: EvictionPolicy, saved: SavedAgentRecords, clock: Callable[[], float] = time.monotonic):
        self.policy = policy
        self.saved = saved
        self.clock = clock
        self.live: OrderedDict[str, "Agent"] = OrderedDict()  # agent id -> agent, least recently used first
        self.last_used: dict[str, float] = {}
        self.evicted: dict[str, tuple[int, str | None]] = {}  # agent id -> (entries, last id) when evicted
        self.kept: set[str] = set()  # agents whose saved records cannot rebuild them: not tracked any more
        self.evictions = 0
        self.revivals = 0
        self._reported = (0, 0)  # the counts the last run's root span was given
        self._timer: asyncio.TimerHandle | None = None  # the idle check's next firing ...
        self._timer_loop: asyncio.AbstractEventLoop | None = None  # ... on this loop

    def keep_checking_idle(self) -> None:
        """With ``idle_seconds``, sweep on a timer on the running event loop (a run starts it; a new
        loop, as each ``asyncio.run`` makes, gets its own): a session waiting between events has no
        response ending to sweep at. A callback, not a task or a thread: nothing to cancel or join."""
        idle = self.policy.idle_seconds
        if idle is None:
            return
        loop = asyncio.get_running_loop()
        if self._timer is not None and not self._timer.cancelled() and self._timer_loop is loop:
            return
        self._timer_loop = loop
        period = min(max(idle / 2, 0.05), 30.0)  # at most half the idle time late, never a busy loop

        def tick() -> None:
            self.sweep()
            self._timer = loop.call_later(period, tick)

        self._timer = loop.call_later(period, tick)

    def report(self, span: Any) -> None:
        """The run's root span says how many agents left memory and came back since the last run ended."""
        span.set_attribute(sc.RUN_AGENTS_EVICTED, self.evictions - self._reported[0])
        span.set_attribute(sc.RUN_AGENTS_REVIVED, self.revivals - self._reported[1])
        self._reported = (self.evictions, self.revivals)

    def touched(self, agent: "Agent") -> None:
        if agent.agent_id in self.kept:
            return
        self.live[agent.agent_id] = agent
        self.live.move_to_end(agent.agent_id)
        self.last_used[agent.agent_id] = self.clock()

    def sweep(self) -> int:
        """Evict what the policy says may go; returns how many agents were evicted."""
        limit, idle = self.policy.max_live_agents, self.policy.idle_seconds
        now = self.clock()
        evicted = 0
        for agent_id, agent in list(self.live.items()):
            over = limit is not None and len(self.live) > limit
            if not over and (idle is None or now - self.last_used[agent_id] < idle):
                break  # the rest were used more recently still
            if not agent.busy and self.evict(agent):
                evicted += 1
        return evicted

    def evict(self, agent: "Agent") -> bool:
        """Drop the agent's transcript if its saved records rebuild it exactly; False (kept) otherwise."""
        transcript, ids = agent.held_transcript()
        try:
            saved_transcript, saved_ids = rebuilt(self.saved.records_of(agent.agent_id))
        except (OSError, ValueError):
            return False  # unreadable now: the agent simply stays in memory
        if saved_ids != ids:
            return False  # not all written yet: a later check
        del self.live[agent.agent_id]
        self.last_used.pop(agent.agent_id, None)
        if saved_transcript != transcript:
            self.kept.add(agent.agent_id)  # saved otherwise than held (contents not kept): never evicted
            return False
        agent.drop_transcript()
        self.evicted[agent.agent_id] = (len(ids), ids[-1] if ids else None)
        self.evictions += 1
        return True

    def revive(self, agent: "Agent") -> None:
        """Rebuild an evicted agent's transcript from its saved records, checked against what it held."""
        entries, last = self.evicted[agent.agent_id]
        try:
            transcript, ids = rebuilt(self.saved.records_of(agent.agent_id))
        except (OSError, ValueError) as exc:
            raise RevivalError(f"cannot revive agent {agent.agent_id}: its saved records cannot be read: {exc}") from None
        if len(ids) != entries or (ids[-1] if ids else None) != last:
            raise RevivalError(f"cannot revive agent {agent.agent_id}: its saved records changed since it was "
                               f"evicted ({len(ids)} entries, not {entries})")
        del self.evicted[agent.agent_id]
        agent.restore_transcript(transcript, ids)
        self.revivals += 1
        self.touched(agent)


def keep_saved_records(session: "Session", saved: SavedAgentRecords) -> None:
    """The session's records are saved where ``saved`` reads them: idle agents may now be evicted (by the
    session's ``eviction`` policy; none without one) and are revived from there. Checked at once (a resume)."""
    policy = session.eviction
    if policy is None or not policy.evicts:
        return
    session.evictor = evictor = Evictor(policy, saved)
    for agent in session.agents.values():
        evictor.touched(agent)
    evictor.sweep()


def eviction_policy(fields: dict[str, Any] | None) -> EvictionPolicy | None:
    """A policy from a script's ``eviction`` object (or options); None when it sets nothing."""
    policy = EvictionPolicy(**(fields or {}))
    return policy if policy.evicts else None
