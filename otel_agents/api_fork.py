"""The public ``otel_agents.fork``: a new recorded session in a saved session's state just after a message."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any, Callable, Iterable, Sequence

from otel_agents.api_parts import load_script_arg, make_llm
from otel_agents.api import DEFAULT_MAX_TURNS, Hook, Session, _saved_root, active_recording
from otel_agents.api_recording import session_dir_of
from otel_agents.api_checks import check_run_options, check_scripted_model, hooks_of, tools_of
from otel_agents.arguments import check_required_text
from otel_agents.llm.budget import Budget, BudgetMeter
from otel_agents.runtime.eviction import EvictionPolicy, eviction_policy
from otel_agents.llm.model_settings import ModelSettings, ModelSettingsError, settings_from_json
from otel_agents.runtime.tools import Tool
from otel_agents.tracing import semconv as sc


def fork(
    session_id: str,
    *,
    at: str,
    tools: Sequence[Tool | Callable[..., Any]] | None = None,
    hooks: Iterable[Hook] | None = None,
    script: str | os.PathLike[str] | None = None,
    model: str | None = None,
    max_turns: int = DEFAULT_MAX_TURNS,
    max_attempts: int = 4,
    timeout: float = 120.0,
    api_base: str | None = None,
    model_settings: ModelSettings | None = None,
    stream: bool = False,
    on_text: Callable[[str, str], None] | None = None,
    budget: Budget | None = None,
    budget_scope: str = "session",
    allow_unpriced: bool = False,
    eviction: EvictionPolicy | None = None,
) -> Session:
    """A new session, inside a ``recording`` block, whose agents and transcripts are ``session_id``'s just after ``at``.

    ``at``: a message id or a path label (``[RUN:]LABEL``), as for ``otel-agents fork``. The
    source is only read (no lock, no file changed). Tools, hooks, script and parameters default
    as for :func:`otel_agents.resume`, taken from the source's run of that message; so are the
    agents' budgets by name (the script's ``agent_budgets``) and ``eviction`` (default: the script's).
    ``budget``: the fork's limits, on top of those of the source's run of the message (which carry on),
    counting from zero; with ``budget_scope="run"`` a resume of the fork carries the source's instead. Raises
    ``ForkError`` (one line) when the source cannot be forked there; nothing is run or billed then.
    """
    from otel_agents.apps import reimport_app
    from otel_agents.llm.api_base import ApiBaseError, carried_api_base
    from otel_agents.forking import ForkError, fork_session, load_source, resolve_at
    from otel_agents.restore import ResumeError, SavedSession, root_name
    from otel_agents.tracing.session_ids import new_session_id

    check_required_text("fork", "session_id", session_id)
    check_required_text("fork", "at", at)
    check_run_options("fork", script=script, model=model, max_turns=max_turns, max_attempts=max_attempts,
                      timeout=timeout, api_base=api_base, model_settings=model_settings, stream=stream,
                      on_text=on_text, budget=budget, allow_unpriced=allow_unpriced, eviction=eviction)
    if budget_scope not in ("session", "run"):
        raise ValueError(f"budget_scope must be 'session' or 'run', not {budget_scope!r}")
    tools = tools_of("fork", tools) if tools is not None else None
    hooks = hooks_of("fork", hooks) if hooks is not None else None
    rec = active_recording()
    if rec is None:
        raise RuntimeError("fork needs an active otel_agents.recording() block (it writes the new session)")
    session_dir = session_dir_of(rec, session_id, ForkError)
    if not session_dir.is_dir():
        raise ForkError(f"no session {session_id!r} in {rec.paths.sessions_dir}")
    source = load_source(session_dir, session_id)
    point = resolve_at(source, at)
    limits = point.limits(budget)  # the source's limits, these on top: counted from zero
    kept = point.limits(None) or Budget()  # what a resume carries on after budget_scope="run"
    attributes = point.run.get("attributes") or {}
    app_reference = attributes.get(sc.RUN_APP) if isinstance(attributes.get(sc.RUN_APP), str) else None
    try:
        app = reimport_app(app_reference) if app_reference and (tools is None or hooks is None) else None
        recorded = settings_from_json(attributes.get(sc.RUN_PARAMS), "the source run")
    except (ResumeError, ModelSettingsError) as exc:
        raise ForkError(str(exc)) from None
    if app is not None:
        tools = app.agent.tools if tools is None else tools
        hooks = app.hooks if hooks is None else hooks
    saved_script = attributes.get(sc.RUN_SCRIPT) if isinstance(attributes.get(sc.RUN_SCRIPT), str) else None
    loaded = load_script_arg(script if script is not None else saved_script, saved=script is None)
    check_scripted_model("fork", model, loaded)
    root_agent = app.agent if app is not None else _saved_root(root_name(SavedSession(session_id, source.records)))
    saved_base = attributes.get(sc.RUN_API_BASE)
    try:  # the source's run of that message went there; api_base="" is the provider's default endpoint
        api_base = carried_api_base(api_base, saved_base if isinstance(saved_base, str) else None, session_id)
    except ApiBaseError as exc:
        raise ForkError(str(exc)) from None
    settings = recorded.merged(model_settings) if recorded is not None else model_settings
    runtime = fork_session(
        source, point, new_session_id(),
        tools=tuple(tools or ()),
        model_override=model,
        script_model=loaded.model if loaded else None,
        telemetry=rec.tracing.telemetry,
        llm=make_llm(rec.tracing.telemetry, rec.tracing, max_attempts, timeout, api_base, stream),
        max_turns=max_turns,
        agent_settings=root_agent.settings_by_name(loaded),
        settings_override=settings,
        agent_budgets=root_agent.budgets_by_name(loaded),
        eviction=eviction or eviction_policy(loaded.eviction if loaded else None),
        budget=BudgetMeter.for_session(limits),
    )
    if not allow_unpriced:
        runtime.refuse_unpriced()
    runtime.carried_budget = kept if budget_scope == "run" else None
    session = Session.__new__(Session)
    session._setup(runtime, loaded, model, hooks or (), rec, source="fork", app=app_reference, on_text=on_text)
    # Every run of the fork names its source; meta.json reads the first run's.
    session._context = replace(session._context, extra={**session._context.extra, **point.run_attributes()})
    return session
