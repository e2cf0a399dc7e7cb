"""The parts a public session is built of: its LLM client, its script loaded, its hooks installed."""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterable

from otel_agents.api_checks import check_hook_names
from otel_agents.runtime.hooks import ApprovalHook, Hook, RemindHook, ReviewHook, TransformHook, check_tools_named

if TYPE_CHECKING:
    from otel_agents.llm.scripts import Script
    from otel_agents.runtime.session import Session as RuntimeSession


def make_llm(telemetry: Any, tracing: Any, max_attempts: int, timeout: float, api_base: str | None,
             stream: bool = False) -> Any:
    """The session's LLM client: its retries, prices from the environment, and what tracing captures."""
    from otel_agents.llm.client import LLMClient
    from otel_agents.llm.pricing import PriceTable
    from otel_agents.llm.retry import RetryPolicy

    return LLMClient(
        telemetry,
        retry=RetryPolicy(max_attempts=max_attempts),
        prices=PriceTable.from_env(),
        timeout_s=timeout,
        api_base=api_base,
        capture_input_messages=bool(tracing and tracing.options.capture_input_messages),
        stream=stream,
    )


def load_script_arg(script: Script | str | os.PathLike[str] | None, saved: bool = False) -> Script | None:
    """What ``Session(script=)`` and ``Agent.*_by_name`` take, loaded (one already loaded is kept);
    ``saved``: a session's recorded source (``load_script``)."""
    if script is None:
        return None
    from otel_agents.llm.scripts import Script, load_script

    if isinstance(script, Script):
        return script
    return load_script(os.fspath(script), saved=saved)


def warning_on_failure(on_text: Callable[[str, str], None]) -> Callable[[Any, str], None]:
    """``on_text`` as the client calls it; its failure is also a RuntimeWarning, since a program has no
    console to see the span's WRN line (the client stops handing that answer on, and says so there)."""
    def hand_on(request: Any, text: str) -> None:
        try:
            on_text(request.agent_name, text)
        except Exception as exc:
            from otel_agents.llm.streaming import on_text_failure

            warnings.warn(on_text_failure(exc), RuntimeWarning, stacklevel=2)
            raise

    return hand_on


def install(runtime: RuntimeSession, hooks: Iterable[Hook], owner: str = "") -> None:
    """Hooks already checked (``hooks_of``), each to its kind's list, once the tools they name are the session's
    and their names are not those of the hooks installed already (the script's)."""
    hooks = tuple(hooks)
    check_hook_names(owner, [hook.name for hook in hooks], taken=runtime.hooks.names(), by="the script")
    known = runtime.tool_names()
    for hook in hooks:
        if isinstance(hook, (ApprovalHook, RemindHook)):
            check_tools_named(f"hook {hook.name!r}: tools=", hook.tools, known)
        if isinstance(hook, ApprovalHook):
            runtime.hooks.approvers.append(hook)
        elif isinstance(hook, ReviewHook):
            runtime.hooks.reviewers.append(hook)
        elif isinstance(hook, TransformHook):
            runtime.hooks.transformers.append(hook)
        else:
            runtime.hooks.reminders.append(hook)


def warn_of_triggers(script: Script, owner: str) -> None:
    """A script's ``triggers`` are watched by ``otel-agents run`` alone: a program has no idle time the
    session owns to poll files in, so it is told, once, rather than left to wait for events that never come."""
    if script.triggers:
        watched = ", ".join(repr(trigger.watch) for trigger in script.triggers)
        warnings.warn(f"{owner}: script {script.source}'s triggers ({watched}) are not watched from Python, only by "
                      "otel-agents run; deliver a change with session.send(text, agent=..., source=...)",
                      RuntimeWarning, stacklevel=4)
