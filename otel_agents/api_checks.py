"""The public API's arguments checked where they are given: one TypeError or ValueError naming the argument.

Without these a wrong type failed far from where it was given (``Agent(123)`` in the first
request, ``timeout="abc"`` as four failed LLM attempts, ``max_turns=0`` as a turn limit
reached before any turn); some never failed (two tools of one name, the last one winning).
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping

from otel_agents.arguments import can_take, check_count, check_flag, check_optional, check_seconds, check_text, kind_of
from otel_agents.llm.budget import Budget
from otel_agents.llm.model_settings import ModelSettings
from otel_agents.runtime.eviction import EvictionPolicy
from otel_agents.runtime.hooks import HOOK_TYPES
from otel_agents.runtime.tools import Tool, make_tool



def tools_of(owner: str, tools: Any) -> tuple[Tool, ...]:
    """``tools`` as Tools: each a ``Tool`` or a function made into one; names unique, none a built-in's."""
    from otel_agents.runtime.builtins import BUILTIN_TOOLS

    if isinstance(tools, (Tool, str, bytes, Mapping)) or callable(tools) or not isinstance(tools, Iterable):
        raise TypeError(f"{owner}: tools= takes a list of tools, not {kind_of(tools)}")
    made: list[Tool] = []
    for index, item in enumerate(tools):
        if isinstance(item, Tool):
            made.append(item)
        elif callable(item):
            try:
                made.append(make_tool(item))
            except (TypeError, ValueError) as exc:
                raise TypeError(f"{owner}: tools[{index}]: {exc}") from None
        else:
            raise TypeError(f"{owner}: tools[{index}] is {kind_of(item)}, not a function or a Tool")
    seen: set[str] = set()
    for made_tool in made:
        if made_tool.name in BUILTIN_TOOLS:
            raise ValueError(f"{owner}: a tool may not be named {made_tool.name!r}: that is the built-in tool "
                             f"every agent has (give yours another name with @tool(name=...))")
        if made_tool.name in seen:
            raise ValueError(f"{owner}: two tools are named {made_tool.name!r}")
        seen.add(made_tool.name)
    return tuple(made)


def hooks_of(owner: str, hooks: Any) -> tuple[Any, ...]:
    """``hooks`` as a tuple of hooks (a single hook, a string or a mapping is refused, not iterated)."""
    if isinstance(hooks, HOOK_TYPES):
        raise TypeError(f"{owner}: hooks= takes a list of hooks, not one hook: hooks=[{hooks.name}]")
    if isinstance(hooks, (str, bytes, Mapping)) or not isinstance(hooks, Iterable):
        raise TypeError(f"{owner}: hooks= takes a list of hooks, not {kind_of(hooks)}")
    listed = tuple(hooks)
    for index, hook in enumerate(listed):
        if not isinstance(hook, HOOK_TYPES):
            raise TypeError(f"{owner}: hooks[{index}] is {kind_of(hook)}, not a hook "
                            "(use approval, review, transform, reset or remind)")
        if any(other is hook for other in listed[:index]):  # it would be asked twice and decide twice
            raise ValueError(f"{owner}: hooks[{index}] ({hook.name!r}) is given twice")
    check_hook_names(owner, [hook.name for hook in listed])
    return listed


def check_hook_names(owner: str, names: Iterable[str], taken: Iterable[str] = (), by: str = "") -> None:
    """Each hook's name its own: denials, hook events (``otel_agents.hook.name``) and the installed names a
    resume warns from (``otel_agents.run.hooks``) tell hooks apart by name alone. ``taken``: names already
    installed (a script's hooks, ``by`` saying whose)."""
    taken = set(taken)
    seen = set(taken)
    for name in names:
        if name in seen:
            whose = f" (one of them {by}'s)" if by and name in taken else ""
            prefix = f"{owner}: " if owner else ""
            raise ValueError(f"{prefix}hooks: two hooks are named {name!r}{whose}; give each its own name=")
        seen.add(name)


def check_run_options(
    owner: str,
    *,
    script: Any = None,
    model: Any = None,
    session_id: Any = None,
    max_turns: Any = 1,
    max_attempts: Any = 1,
    timeout: Any = 1.0,
    api_base: Any = None,
    app: Any = None,
    model_settings: Any = None,
    stream: Any = False,
    on_text: Any = None,
    budget: Any = None,
    allow_unpriced: Any = False,
    eviction: Any = None,
) -> None:
    """The options ``Session``, ``resume`` and ``fork`` share (the defaults here pass)."""
    from otel_agents.llm.scripts import Script

    if script is not None and not isinstance(script, (str, os.PathLike, Script)):
        raise TypeError(f"{owner}: script= takes a file path or a built-in script's name, not {kind_of(script)}")
    # resume and fork take api_base="" for the provider's default endpoint instead of the session's
    resets = owner in ("resume", "fork") and api_base == ""
    for argument, value in (("model", model), ("session_id", session_id), ("api_base", None if resets else api_base),
                            ("app", app)):
        check_text(owner, argument, value)
    if app is not None and not all(app.partition(":")):
        raise ValueError(f"{owner}: app= {app!r} is not of the form package.module:factory")
    check_count(owner, "max_turns", max_turns)
    check_count(owner, "max_attempts", max_attempts)
    check_seconds(owner, "timeout", timeout)
    check_optional(owner, "model_settings", model_settings, ModelSettings, "a ModelSettings")
    check_flag(owner, "stream", stream)
    if on_text is not None and not callable(on_text):
        raise TypeError(f"{owner}: on_text= takes a function of (agent name, text), not {kind_of(on_text)}")
    if on_text is not None and not can_take(on_text, 2):  # else each call fails, a warning on the span only
        raise TypeError(f"{owner}: on_text= cannot be called with (agent name, text)")
    check_optional(owner, "budget", budget, Budget, "a Budget")
    check_flag(owner, "allow_unpriced", allow_unpriced)
    check_optional(owner, "eviction", eviction, EvictionPolicy, "an EvictionPolicy")



def check_scripted_model(owner: str, model: str | None, script: Any) -> None:
    """``model="scripted/NAME"`` is only the loaded script's own model: a scripted model answers from its script
    alone, so another's failed at the first LLM call (``LLM Provider NOT provided``), an attempt recorded."""
    if model and model.startswith("scripted/") and (script is None or model != script.model):
        name = model.removeprefix("scripted/")
        having = f"the script's model is {script.model}" if script is not None else "no script is given"
        raise ValueError(f"{owner}: model= {model!r} answers only from its own script, and {having}: "
                         f"give script={name!r} (or that script's file)")
