"""A script's ``triggers``: files whose appearing or changing is an outside event for an agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_FIELDS = frozenset({"watch", "agent", "text"})


class TriggerError(ValueError):
    """A trigger entry that cannot be used; the message names where it is."""


@dataclass(frozen=True)
class TriggerSpec:
    watch: str  # path of the file; a relative one is relative to the directory `run` starts in
    agent: str | None = None  # name or id of the agent told; None: the root
    text: str | None = None  # the event's words ("{path}" is the file's); default "File changed: <path>"


def parse_triggers(raw: Any, source: str) -> tuple[TriggerSpec, ...]:
    """``[{"watch": "data.json", "agent": "Watcher", "text": "..."}]`` checked, or a one-line error."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise TriggerError(f"{source}: 'triggers' must be a list")
    specs = []
    for i, entry in enumerate(raw):
        where = f"{source}: triggers[{i}]"
        if not isinstance(entry, dict):
            raise TriggerError(f"{where}: a trigger is an object with a 'watch' path")
        unknown = set(entry) - _FIELDS
        if unknown:
            raise TriggerError(f"{where}: unknown trigger field(s) {sorted(unknown)}")
        if not isinstance(entry.get("watch"), str) or not entry["watch"].strip():
            raise TriggerError(f"{where}: 'watch' must be a non-empty path")
        for key in ("agent", "text"):
            if entry.get(key) is not None and (not isinstance(entry[key], str) or not entry[key].strip()):
                raise TriggerError(f"{where}: '{key}' must be a non-empty string")
        specs.append(TriggerSpec(entry["watch"], entry.get("agent"), entry.get("text")))
    return tuple(specs)
