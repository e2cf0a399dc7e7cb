"""The public ``otel_agents.resume``: a saved session's agents rebuilt inside a ``recording`` block, to run on."""

from __future__ import annotations

import logging
import os
from typing import Any, Callable, Iterable, Sequence

from otel_agents.api_parts import load_script_arg, make_llm
from otel_agents.api import DEFAULT_MAX_TURNS, Hook, Session, _saved_root
from otel_agents.api_checks import check_run_options, check_scripted_model, hooks_of, tools_of
from otel_agents.api_recording import active_recording, session_dir_of
from otel_agents.arguments import check_required_text
from otel_agents.llm.budget import Budget, BudgetMeter
from otel_agents.llm.model_settings import ModelSettings
from otel_agents.runtime.eviction import EvictionPolicy, eviction_policy
from otel_agents.runtime.tools import Tool


def resume(
    session_id: str,
    *,
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
    """Rebuild every agent of a saved session, inside a ``recording`` block, and return it to run on.

    Tools and hooks are not saved: a session started with ``app=`` (or ``run --app``) re-imports
    its app for the ones not given here, as ``otel-agents resume`` does; otherwise pass the ones
    the session had (every agent gets ``tools``). The script defaults to the one the session last
    ran with; request parameters to the session's, ``model_settings`` on top. ``budget``: the session's
    limits (its last run's carry on, these on top), counting what it spent before unless
    ``budget_scope="run"``; agents' budgets count what each spent before likewise. ``eviction``: as
    for ``Session`` (default: the script's); the limit holds from the resume on. A session stopped before its first
    run began has no agent to rebuild: its root starts afresh from ``script``. Raises ``ResumeError``
    (one line) when the session cannot be resumed, and ``ScriptError`` when the root answers from a script
    whose hooks or per-agent keys name no agent the session has or the script creates; nothing is run or
    billed then.
    """
    from otel_agents.apps import reimport_app
    from otel_agents.llm.api_base import ApiBaseError, carried_api_base
    from otel_agents.restored_models import carried_model
    from otel_agents.persistence.store import StoreError
    from otel_agents.restore import ResumeError, carried_budget, restore_session, root_name, saved_budget, saved_params
    from otel_agents.saved_session import (
        agents_spent, bill_before_resume, hooks_left_behind, load_for_resume, spent_before,
        stopped_before_its_first_agent,
    )
    from otel_agents.session_recording import NoSuchSession, StorageUnwritable, own_session

    check_required_text("resume", "session_id", session_id)
    check_run_options("resume", script=script, model=model, max_turns=max_turns, max_attempts=max_attempts,
                      timeout=timeout, api_base=api_base, model_settings=model_settings, stream=stream,
                      on_text=on_text, budget=budget, allow_unpriced=allow_unpriced, eviction=eviction)
    tools = tools_of("resume", tools) if tools is not None else None
    hooks = hooks_of("resume", hooks) if hooks is not None else None
    if budget_scope not in ("session", "run"):
        raise ValueError(f"budget_scope must be 'session' or 'run', not {budget_scope!r}")
    rec = active_recording()
    if rec is None:
        raise RuntimeError("resume needs an active otel_agents.recording() block (it writes the session)")
    session_dir = session_dir_of(rec, session_id, NoSuchSession)
    ownership = own_session(session_dir)
    try:
        saved, tree, meta, repair = load_for_resume(session_dir, session_id)
        last = saved.last_run
        app = reimport_app(last.app) if last and last.app and (tools is None or hooks is None) else None
        if app is not None:
            tools = app.agent.tools if tools is None else tools
            hooks = app.hooks if hooks is None else hooks
        loaded = load_script_arg(script if script is not None else (last.script if last else None), saved=script is None)
        check_scripted_model("resume", model, loaded)
        model = model or carried_model(last.model_override if last else None)  # as `otel-agents resume` does
        if stopped_before_its_first_agent(saved, tree, meta):
            ownership.release()  # the new session takes it as it starts
            return _started_afresh(saved, loaded, rec, dict(
                tools=tools or (), hooks=hooks or (), model=model, max_turns=max_turns, max_attempts=max_attempts,
                timeout=timeout, api_base=api_base, model_settings=model_settings, stream=stream,
                on_text=on_text, budget=budget, allow_unpriced=allow_unpriced, eviction=eviction))
        root_agent = app.agent if app is not None else _saved_root(root_name(saved))
        try:  # where the session's calls went; api_base="" is the provider's default endpoint
            api_base = carried_api_base(api_base, last.api_base if last else None, session_id)
        except ApiBaseError as exc:
            raise ResumeError(str(exc)) from None
        runtime = restore_session(
            saved,
            tools=tuple(tools or ()),
            model_override=model,
            script_model=loaded.model if loaded else None,
            telemetry=rec.tracing.telemetry,
            llm=make_llm(rec.tracing.telemetry, rec.tracing, max_attempts, timeout, api_base, stream),
            max_turns=max_turns,
            agent_settings=root_agent.settings_by_name(loaded),
            settings_override=saved_params(saved, model_settings),
            agent_budgets=root_agent.budgets_by_name(loaded),
            budget=BudgetMeter.for_session(saved_budget(saved, budget)),  # the session's limits, these on top
            eviction=eviction or eviction_policy(loaded.eviction if loaded else None),
        )
        if loaded is not None and app is None and not tools and runtime.root is not None \
                and runtime.root.model == loaded.model:  # as `otel-agents resume` checks them: a typo guards nothing
            loaded.check_agent_names(runtime.root.name, keys=False, hooks=hooks or (), owner="resume",
                                     known={agent.name for agent in runtime.agents.values()})
        if not allow_unpriced:
            runtime.refuse_unpriced()
        if budget_scope == "session":
            runtime.carry_spent(spent_before(tree, meta), lambda: agents_spent(session_dir, tree))
        runtime.carried_budget = carried_budget(saved, budget_scope)
        try:  # a crashed run is billed once, before new runs
            bill_before_resume(session_dir, tree, meta, rec.paths.billing_file, repair)
        except StoreError as exc:  # the ledger unwritable; a damaged ledger's own error goes up as it is
            raise StorageUnwritable(str(exc)) from None
        session = Session.__new__(Session)
        session._setup(runtime, loaded, model, hooks or (), rec, source="resume", ownership=ownership,
                       app=last.app if last else None, on_text=on_text)
        for name in hooks_left_behind(session_dir, tree, meta, runtime.hooks.names()):
            logging.getLogger("otel_agents.resume").warning(
                "hook %r watched session %s and is not installed now (pass it in hooks=, or start sessions "
                "with app= so that resume re-imports them)", name, session_id)
        return session
    except BaseException:
        ownership.release()  # idempotent: a started recording owns it from here
        raise


def _started_afresh(saved: Any, loaded: Any, rec: Any, options: dict[str, Any]) -> Session:
    """A session stopped before its first run began (even by kill -9) has no agent to rebuild: its root starts
    now under the saved id, from the script given, as ``otel-agents resume`` starts it."""
    from otel_agents.api import Agent
    from otel_agents.restore import ResumeError

    if loaded is None:  # no run recorded a script, and a root needs one (or use Session with the id)
        raise ResumeError(f"session {saved.session_id} has no agents yet (it was stopped before its first run "
                          f"began): pass script= to start its root afresh, or start it with "
                          f"Session(agent, session_id={saved.session_id!r})")
    if saved.redacted and not rec.redacted_save:  # its contents must not be kept
        raise ResumeError(f"session {saved.session_id} was started with redacted saving and has no run: start "
                          "it again in a recording(redacted_save=True) block")
    tools = options.pop("tools")
    session = Session(Agent(loaded.root_name, tools=tools), script=loaded, session_id=saved.session_id, **options)
    session._context.source = "resume"  # recorded as the command's resume records it
    return session
