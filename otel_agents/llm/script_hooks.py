"""A script's ``hooks``: approval, review, transform, reset and remind hooks as checked specs (runtime/scenario.py installs them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class HookSpecError(ValueError):
    """A hook entry that cannot be used; the message names where it is."""


def _fail(where: str, why: str) -> HookSpecError:
    return HookSpecError(f"{where}: {why}")


@dataclass(frozen=True)
class HookSpec:
    kind: str  # approval | review | transform | reset | remind
    name: str
    agent: str | None = None  # approval by an agent of this name
    tools: tuple[str, ...] | None = None  # approval: only these tools
    agents: tuple[str, ...] | None = None  # only these agents are watched
    deny_tools: tuple[str, ...] = ()  # approval without an agent: always deny these
    reject_if_contains: str | None = None  # review: reject utterances containing this
    replace: dict[str, str] | None = None  # transform: substring replacements on delivery
    max_entries: int | None = None  # reset: when a transcript grows past this after an utterance...
    keep: int = 1  # reset: ...truncate it to its first `keep` entries (working memory reset)
    message: str | None = None  # remind: the system-sourced text added to watched agents...
    after_turns: int | None = None  # ...after every N LLM turns, and/or after one of `tools` ran,
    every_seconds: float | None = None  # ...and/or once this many seconds passed (at the next turn)



def parse_hooks(raw: Any, source: str) -> tuple[HookSpec, ...]:
    """``[{"kind": "approval", "name": "ResourceMonitor", ...}]`` checked, or a one-line error."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise HookSpecError(f"{source}: 'hooks' must be a list")
    specs = tuple(_parse_hook(h, f"{source}: hooks[{i}]") for i, h in enumerate(raw))
    for index, spec in enumerate(specs):  # names tell hooks apart in denials, hook events and run.hooks
        if any(other.name == spec.name for other in specs[:index]):
            raise HookSpecError(f"{source}: hooks[{index}]: two hooks are named {spec.name!r}; "
                                "give each its own name")
    return specs


_HOOK_KINDS = ("approval", "review", "transform", "reset", "remind")
# The fields each kind reads (besides kind and name): one of another kind would be ignored in silence,
# e.g. a transform's "agents" (a transform rewrites every delivery).
_KIND_FIELDS = {
    "approval": frozenset({"agent", "tools", "agents", "deny_tools"}),
    "review": frozenset({"agents", "reject_if_contains"}),
    "transform": frozenset({"replace"}),
    "reset": frozenset({"agents", "max_entries", "keep"}),
    "remind": frozenset({"agents", "tools", "message", "after_turns", "every_seconds"}),
}
_HOOK_FIELDS = frozenset({"kind", "name"}).union(*_KIND_FIELDS.values())


def _names_list(raw: dict, key: str, where: str) -> tuple[str, ...] | None:
    # A bare string would silently become a tuple of its characters.
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise _fail(where, f"'{key}' must be a list of non-empty strings")
    return tuple(value)


def _parse_hook(raw: Any, where: str) -> HookSpec:
    if not isinstance(raw, dict) or raw.get("kind") not in _HOOK_KINDS:
        raise _fail(where, f"a hook needs 'kind': one of {', '.join(_HOOK_KINDS)}")
    if not isinstance(raw.get("name"), str) or not raw["name"].strip():
        raise _fail(where, "a hook needs a string 'name'")
    unknown = set(raw) - _HOOK_FIELDS
    if unknown:
        raise _fail(where, f"unknown hook field(s) {sorted(unknown)}")
    kind = raw["kind"]
    foreign = sorted(set(raw) - {"kind", "name"} - _KIND_FIELDS[kind])
    if foreign:
        article = "an" if kind[0] in "aeiou" else "a"
        raise _fail(where, f"{article} {kind} hook has no field(s) {foreign} "
                           f"(its fields: {', '.join(sorted(_KIND_FIELDS[kind]))})")
    for key in ("agent", "reject_if_contains", "message"):
        if raw.get(key) is not None and (not isinstance(raw[key], str) or not raw[key].strip()):
            raise _fail(where, f"'{key}' must be a non-empty string")
    replace = raw.get("replace")
    if replace is not None and (
        not isinstance(replace, dict)
        or not all(isinstance(k, str) and k and isinstance(v, str) for k, v in replace.items())
    ):  # an empty key would match between every two characters
        raise _fail(where, "'replace' must map non-empty strings to strings")
    _check_does_something(raw, where)
    for key in ("max_entries", "keep"):
        value = raw.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise _fail(where, f"'{key}' must be a non-negative integer")
    if raw["kind"] == "reset" and raw.get("max_entries") is None:
        raise _fail(where, "a reset hook needs 'max_entries'")
    if raw["kind"] == "reset" and raw.get("keep", 1) > raw["max_entries"]:  # it would cut nothing, each time
        raise _fail(where, "'keep' must not exceed 'max_entries'")
    _check_remind(raw, where)
    return HookSpec(
        kind=raw["kind"],
        name=raw["name"],
        agent=raw.get("agent"),
        tools=_names_list(raw, "tools", where),
        agents=_names_list(raw, "agents", where),
        deny_tools=_names_list(raw, "deny_tools", where) or (),
        reject_if_contains=raw.get("reject_if_contains"),
        replace=replace,
        max_entries=raw.get("max_entries"),
        keep=raw.get("keep", 1),
        message=raw.get("message"),
        after_turns=raw.get("after_turns"),
        every_seconds=raw.get("every_seconds"),
    )


def _check_does_something(raw: dict, where: str) -> None:
    """A hook that could never act is a mistake, not a choice: say so where it is written."""
    kind = raw["kind"]
    if kind == "approval" and (raw.get("agent") is None) == (raw.get("deny_tools") is None):
        raise _fail(where, "an approval hook needs 'agent' (an agent judges) or 'deny_tools' (always denied), one of them")
    if kind == "approval" and raw.get("deny_tools") == []:
        raise _fail(where, "'deny_tools' is empty: the hook would deny nothing")
    if kind == "review" and raw.get("reject_if_contains") is None:
        raise _fail(where, "a review hook needs 'reject_if_contains'")
    if kind == "transform" and not raw.get("replace"):
        raise _fail(where, "a transform hook needs 'replace' with at least one replacement")
    for key in ("tools", "agents"):
        if raw.get(key) == []:
            raise _fail(where, f"'{key}' is empty: the hook would watch nothing (leave it out to watch all)")


def _check_remind(raw: dict, where: str) -> None:
    after, every = raw.get("after_turns"), raw.get("every_seconds")
    if after is not None and (not isinstance(after, int) or isinstance(after, bool) or after < 1):
        raise _fail(where, "'after_turns' must be a positive integer")
    if every is not None and (not isinstance(every, (int, float)) or isinstance(every, bool) or not every > 0):
        raise _fail(where, "'every_seconds' must be a positive number")
    if raw["kind"] != "remind":
        return
    if not raw.get("message"):
        raise _fail(where, "a remind hook needs a 'message'")
    if after is None and every is None and raw.get("tools") is None:
        raise _fail(where, "a remind hook needs 'after_turns', 'tools' or 'every_seconds'")
