"""What ``run``, ``resume``, ``fork`` and ``replay`` share in making a session: the app imported and the
script's and app's hooks installed, or exit 2 saying why."""

from __future__ import annotations

from typing import Any

import click

from otel_agents.apps import App, AppError, load_app
from otel_agents.cli.options import DataError


def load_app_or_exit(reference: str) -> App:
    """The app, or a one-line usage error (exit 2) naming the reference."""
    try:
        return load_app(reference)
    except AppError as exc:
        raise click.UsageError(str(exc)) from None


def new_session(app: App | None, script: Any, model: str | None, **session_kwargs: Any) -> Any:
    """A new runtime session: the script's (``build_session``) or the app's (``build_app_session``)."""
    from otel_agents.llm.scripts import ScriptError
    from otel_agents.runtime.hooks import HookToolsError
    from otel_agents.runtime.scenario import build_session, resolve_model

    if app is not None:
        return build_app_session(app, script, model, **session_kwargs)
    try:
        session = build_session(script, model=model, **session_kwargs)
        if resolve_model(script, model) == script.model:  # its turns make every agent, the CLI's only maker:
            script.check_agent_names(script.root_name)  # a name none of them has is a typo
    except HookToolsError as exc:
        raise DataError(f"script {script.name!r}: {exc}") from None
    except ScriptError as exc:  # it names the script's file
        raise DataError(str(exc)) from None
    return session


def check_script_names(session: Any, script: Any) -> None:
    """A resumed session's script, when its root answers from it: its hooks and per-agent keys name agents the
    session has or the script's turns create, as ``run`` checks them (exit 2 otherwise: a typo guards nothing)."""
    from otel_agents.llm.scripts import ScriptError

    root = session.root
    if root is None or root.model != script.model:
        return
    try:
        script.check_agent_names(root.name, known={agent.name for agent in session.agents.values()})
    except ScriptError as exc:
        raise DataError(str(exc)) from None


def install_session_hooks(session: Any, script: Any, app: App | None) -> None:
    """The script's hooks, then the app's (in the order a new session has them), or exit 2."""
    from otel_agents.runtime.hooks import HookToolsError
    from otel_agents.runtime.scenario import install_hooks

    if script is not None:
        try:
            install_hooks(session, script.hooks)
        except HookToolsError as exc:
            raise DataError(f"script {script.name!r}: {exc}") from None
    if app is not None:
        install_app_hooks(session, app)


def build_app_session(app: App, script: Any, model: str | None, **session_kwargs: Any) -> Any:
    """A new runtime session rooted at the app's agent; the script answers agents left on its scripted model.

    The model is ``--model``, else the agent's own, else the script's offline model; the
    script (optional: an app on a real model needs none) has its hooks installed before the app's.
    """
    from otel_agents.runtime.scenario import resolve_model
    from otel_agents.runtime.session import AgentSpec, Session

    agent = app.agent
    if model and script is not None:
        chosen = resolve_model(script, model)
    else:
        chosen = model or agent.model or (script.model if script is not None else None)
    if chosen is None:
        raise click.UsageError(f"app {app.reference!r}: agent {agent.name!r} has no model (pass --model or --script)")
    if script is not None and chosen == script.model and not agent.tool_list():  # hooks only: it may borrow a script
        from otel_agents.llm.scripts import ScriptError

        try:
            script.check_agent_names(agent.name, keys=False, hooks=app.hooks, owner=f"app {app.reference!r}")
        except ScriptError as exc:
            raise DataError(str(exc)) from None
    root = AgentSpec(agent.name, chosen, agent.system_prompt, agent.tool_list(), agent.max_turns)
    session = Session(root=root, agent_settings=app.agent.settings_by_name(script),
                      agent_budgets=app.agent.budgets_by_name(script), **session_kwargs)
    if script is not None:
        session.llm.stream = session.llm.stream or script.stream
        session.llm.use_script(script)  # registered at the first scripted call only: none with a real model
    install_session_hooks(session, script, app)
    return session


def install_app_hooks(session: Any, app: App) -> None:
    from otel_agents.api_parts import install

    try:
        install(session, app.hooks)
    except (TypeError, ValueError) as exc:  # a HookToolsError, or a hook named as one of the script's
        raise click.UsageError(f"app {app.reference!r}: {exc}") from None


def agents_by_name(app: App | None, script: Any) -> tuple[dict, dict]:
    """The agents' request parameters and budgets by name for a restored or forked session:
    the app's (over the script's) when there is an app, else the script's, else none."""
    if app is not None:
        return app.agent.settings_by_name(script), app.agent.budgets_by_name(script)
    if script is None:
        return {}, {}
    return script.agent_settings(script.root_name), script.budgets_by_name(script.root_name)
