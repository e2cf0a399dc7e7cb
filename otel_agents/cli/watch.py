"""Files watched while a session runs (``run --watch``, script ``triggers``): a change is an outside event.

Watching is polling (every ``POLL_S``): a file's (mtime, size, inode) is compared with
what it was, from the moment the command starts. A file that appears or changes
becomes a user message with source ``external:watch:<path>`` for the trigger's agent,
and that agent's answer is a new run of the session. An agent mid-turn cannot take a
message without breaking its request, so events wait for the run in progress (the
command's prompts, or an earlier event's answer) to end: the latency is at most
``POLL_S`` after the session is idle.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable

from otel_agents.terminal_text import shown
from otel_agents.tracing import semconv as sc

POLL_S = 0.25


@dataclass(frozen=True)
class Trigger:
    path: Path
    agent: str | None = None  # name or id; None: the root
    text: str | None = None  # the event's words, "{path}" replaced; default "File changed: <path>"

    @property
    def sender(self) -> str:
        return f"watch:{self.path}"

    def words(self, appeared: bool) -> str:
        if self.text is not None:
            return self.text.replace("{path}", str(self.path))
        return f"File {'appeared' if appeared else 'changed'}: {self.path}"


def triggers_of(paths: Iterable[Path], agent: str | None, specs: Iterable[Any] = ()) -> list[Trigger]:
    """``--watch`` paths (told to ``agent``) and a script's trigger specs, with absolute paths."""
    triggers = [Trigger(Path(os.path.abspath(path)), agent) for path in paths]
    triggers += [Trigger(Path(os.path.abspath(spec.watch)), spec.agent, spec.text) for spec in specs]
    return triggers


def missing_directories(triggers: Iterable[Trigger]) -> list[str]:
    """What makes a watched file unable ever to appear: its directory is missing or not a directory.

    A typo'd directory would be polled in silence until Ctrl-C; it is known before anything runs,
    so ``run`` refuses it as bad usage (create the directory first to watch a file appear in it).
    """
    problems = []
    for trigger in triggers:
        directory = trigger.path.parent
        if not directory.exists():
            problems.append(f"cannot watch {trigger.path}: directory {directory} does not exist")
        elif not directory.is_dir():
            problems.append(f"cannot watch {trigger.path}: {directory} is not a directory")
    return problems


def _state(path: Path) -> tuple[int, int, int] | None:
    try:
        stat = path.stat()
    except OSError:  # absent (or unreadable): its appearing is the event
        return None
    return stat.st_mtime_ns, stat.st_size, stat.st_ino


class FileWatch:
    """The watched files' last seen states; ``serve`` delivers their changes until ``duration`` ends."""

    def __init__(self, triggers: list[Trigger], duration: float | None = None, interval: float = POLL_S):
        self.triggers = triggers
        self.duration = duration
        self.interval = interval
        self.busy = False  # a triggered run is in progress (an interrupt then is a real one)
        self._seen = {trigger.path: _state(trigger.path) for trigger in triggers}

    def due(self) -> list[tuple[Trigger, str]]:
        """The events since the last look: (trigger, words) for each file that appeared or changed."""
        now = {path: _state(path) for path in self._seen}
        events = []
        for trigger in self.triggers:
            before, after = self._seen[trigger.path], now[trigger.path]
            if after is not None and after != before:
                events.append((trigger, trigger.words(appeared=before is None)))
        self._seen = now
        return events

    async def serve(self, session, context, answered: Callable[[str], None],
                    warn: Callable[[str], None]) -> None:
        """Poll and run each event's answer in ``session``: ``context``'s run facts, the watch as sender."""
        loop = asyncio.get_running_loop()
        deadline = None if self.duration is None else loop.time() + self.duration
        self._warn_unknown_agents(session, warn)
        while True:
            for trigger, words in self.due():
                agent = session.find_agent(trigger.agent) if trigger.agent else None
                if trigger.agent and agent is None:
                    warn(f"warning: {shown(str(trigger.path), lines=False)} changed, but the session has no agent {trigger.agent!r} to tell")
                    continue
                event_context = replace(context, source="external", sender=trigger.sender,
                                        extra={**context.extra, sc.INGRESS_SENDER: trigger.sender})
                self.busy = True
                try:
                    answered(str(await session.run(words, agent=agent, context=event_context)))
                finally:
                    self.busy = False
            if deadline is not None and loop.time() >= deadline:
                return
            await asyncio.sleep(self.interval if deadline is None else min(self.interval,
                                                                            max(0.0, deadline - loop.time())))

    def _warn_unknown_agents(self, session, warn: Callable[[str], None]) -> None:
        """Said once as watching starts: an agent named for changes that the prompts' runs did not create.
        Not refused (a later run may create it), but a typo would otherwise only show when a file changed."""
        paths_of: dict[str, list[str]] = {}
        for trigger in self.triggers:
            if trigger.agent and session.find_agent(trigger.agent) is None:
                paths_of.setdefault(trigger.agent, []).append(shown(str(trigger.path), lines=False))
        for agent, paths in paths_of.items():
            warn(f"warning: the session has no agent {agent!r} (yet): changes to {', '.join(paths)} "
                 "are told to it only once it exists")
