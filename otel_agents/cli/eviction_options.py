"""``--max-live-agents --evict-idle`` of ``run``, ``resume`` and ``fork``: the session's eviction policy (runtime/eviction.py)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

import click

from otel_agents.cli.options import FiniteFloat


@dataclass(frozen=True)
class EvictionOptions:
    max_live_agents: int | None = None
    idle_seconds: float | None = None

    def policy(self, script: Any = None) -> Any:
        """The script's ``eviction`` with these options on top, or None when neither says anything."""
        from otel_agents.runtime.eviction import eviction_policy

        given = {k: v for k, v in (("max_live_agents", self.max_live_agents), ("idle_seconds", self.idle_seconds))
                 if v is not None}
        return eviction_policy({**((script.eviction or {}) if script is not None else {}), **given})


def eviction_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The eviction options, passed as ``eviction_opts``."""
    options = [
        click.option("--evict-idle", "idle_seconds", type=FiniteFloat(0), metavar="SECONDS",
                     help="Evict an agent unused for SECONDS from memory; it is revived from the saved records "
                          "when next addressed (docs/scripts.md, 'eviction')."),
        click.option("--max-live-agents", type=click.IntRange(0), metavar="N",
                     help="Keep at most N agents' transcripts in memory besides those answering; the least "
                          "recently used are evicted and revived from the saved records when next addressed."),
    ]

    @functools.wraps(func)
    def wrapper(*args, max_live_agents, idle_seconds, **kwargs):
        return func(*args, eviction_opts=EvictionOptions(max_live_agents, idle_seconds), **kwargs)

    for option in options:
        wrapper = option(wrapper)
    return wrapper
