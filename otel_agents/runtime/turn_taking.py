"""Turn-taking: one conversation at a time per agent (and one run at a time per session).

Seed 001 wants a single-threaded system, while issue 2 runs the tool calls of one assistant turn
concurrently. Both hold when whatever talks to an agent holds that agent's ``Turn`` for the whole
exchange: two tool calls that reach different agents still overlap, and two that reach the same
agent (two ``discuss`` calls with one speaker, two approvals by one hook agent, two ``run`` calls
of one session) take turns, so no agent hears a second question between an answer's tool call and
its result, and a hook agent judges each request against the state the previous one left.

Contract of :func:`hold`:

- Re-entrant along one call chain: a chain that holds a turn (directly, or through the task that
  started it: asyncio tasks copy the context) passes it without waiting. So ``discuss`` holds its
  participants and each speaker's ``response()`` inside it goes straight on.
- No deadlock among chains that take turns only through ``hold``: each call takes the turns it does
  not hold yet in one global order (the order the turns were made), and a chain only ever reaches
  agents created before it asked for them or its own new sub-agents.
- Not thread-safe: one event loop drives a session. A turn made under one loop and waited for under
  another makes a fresh lock there (a session's ``run_sync`` calls share one loop).
"""

from __future__ import annotations

import asyncio
import itertools
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import AsyncIterator

_ranks = itertools.count()
_held: ContextVar[frozenset[int]] = ContextVar("otel_agents_turns_held", default=frozenset())


class Turn:
    """The right to talk to one agent (or to run one session); see :func:`hold`."""

    __slots__ = ("rank", "_lock", "_loop")

    def __init__(self) -> None:
        self.rank = next(_ranks)
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._loop is not loop:
            self._lock, self._loop = asyncio.Lock(), loop
        return self._lock


def held_here(turn: Turn) -> bool:
    """Whether this call chain holds ``turn`` already (``hold`` would pass it without waiting)."""
    return turn.rank in _held.get()


@asynccontextmanager
async def hold(*turns: Turn) -> AsyncIterator[None]:
    """Take these turns (waiting for whoever has them), in rank order; give them back on exit."""
    held = _held.get()
    wanted = sorted({t.rank: t for t in turns if t.rank not in held}.values(), key=lambda t: t.rank)
    if not wanted:
        yield
        return
    taken: list[asyncio.Lock] = []
    try:
        for turn in wanted:
            lock = turn.lock()
            await lock.acquire()
            taken.append(lock)
        token = _held.set(held | {t.rank for t in wanted})
        try:
            yield
        finally:
            _held.reset(token)
    finally:
        for lock in reversed(taken):
            lock.release()
