"""``otel-agents fork SESSION_ID --at MESSAGE [PROMPT]...``: a new session in the source's state just after a message."""

from __future__ import annotations

from dataclasses import replace

import click

from otel_agents.cli.execution import (
    attach_console,
    command_tracing,
    execute,
    finish,
    load_model_library,
    make_llm,
    next_steps,
    output_options,
    start_recording,
    use_saved_script,
)
from otel_agents.cli.prompts import read_prompts
from otel_agents.cli.model_options import check_scripted_model, model_options
from otel_agents.cli.app_session import agents_by_name, install_session_hooks, load_app_or_exit
from otel_agents.cli.budget_options import BudgetOptions, budget_options, check_session_budgets
from otel_agents.cli.eviction_options import EvictionOptions, eviction_options
from otel_agents.cli.options import (
    DataError,
    ledger_errors_are_data_errors,
    not_empty,
    refuse_storage_output,
    session_dir_or_exit,
    storage_options,
)
from otel_agents.tracing import semconv as sc

FALLBACK_SCRIPT = "jack-and-jill"


@ledger_errors_are_data_errors
def fork_session_command(source_id, at, prompts, script_name, model_opts, otlp_file, verbose, trace_llm,
                         trace_tools, paths, eviction_opts: EvictionOptions = EvictionOptions(),
                         budget_opts: BudgetOptions = BudgetOptions()) -> int:
    """Read the source (no lock, nothing written), check everything, then run the prompts in the new session."""
    from otel_agents.forking import ForkError, fork_session, load_source, resolve_at
    from otel_agents.llm.budget import Budget, BudgetMeter
    from otel_agents.llm.api_base import ApiBaseError, carried_api_base
    from otel_agents.llm.model_settings import ModelSettingsError, settings_from_json
    from otel_agents.llm.scripts import ScriptError, load_script
    from otel_agents.restored_models import carried_model
    from otel_agents.tracing.session_ids import new_session_id

    refuse_storage_output(otlp_file, paths, "--otlp-file")
    source_dir = session_dir_or_exit(paths, source_id)
    try:
        source = load_source(source_dir, source_id, warn=lambda text: click.echo(text, err=True))
        point = resolve_at(source, at)
        limits = point.limits(budget_opts.limits())  # the source's limits, these on top: counted from zero
        kept = point.limits(None) or Budget()  # what a resume of the fork carries on after --budget-scope run
    except ForkError as exc:
        raise DataError(str(exc)) from None
    # No prompt: the fork's one run only records the inherited state (resume it later).
    prompt_list = read_prompts(prompts, ()) or [None]
    # The fork goes on as the source's run of that message went: its script, model, app and parameters.
    attributes = point.run.get("attributes") or {}
    app_reference = attributes.get(sc.RUN_APP)
    app = load_app_or_exit(app_reference) if isinstance(app_reference, str) else None
    saved_script = attributes.get(sc.RUN_SCRIPT)
    saved_script = saved_script if isinstance(saved_script, str) else (None if app else FALLBACK_SCRIPT)
    try:
        script = load_script(script_name or saved_script, saved=not script_name) if script_name or saved_script else None
    except ScriptError as exc:
        if script_name:  # the user's own --script: no hint to pass what was passed
            raise DataError(f"--script: {exc}") from None
        raise DataError(f"cannot load the source session's script: {exc} (pass --script)") from None
    check_scripted_model(script, model_opts.model)
    saved_model = attributes.get(sc.RUN_MODEL)
    model = model_opts.model or carried_model(saved_model if isinstance(saved_model, str) else None)
    try:
        recorded = settings_from_json(attributes.get(sc.RUN_PARAMS), "the source run")
    except ModelSettingsError as exc:
        raise click.UsageError(str(exc)) from None
    params = recorded.merged(model_opts.params) if recorded is not None else model_opts.params
    saved_base = attributes.get(sc.RUN_API_BASE)
    try:  # the source's run of that message went there: the fork goes on there unless told
        model_opts = replace(model_opts, api_base=carried_api_base(
            model_opts.api_base, saved_base if isinstance(saved_base, str) else None, source_id))
    except ApiBaseError as exc:
        raise click.UsageError(str(exc)) from None

    from otel_agents.revivable import keep_revivable
    from otel_agents.runtime.session import RunContext

    with command_tracing(otlp_file) as tracing:  # shut down however the command ends
        llm = make_llm(tracing, model_opts)
        # As resume: the agents' request parameters and budgets by name (the script's, the app's), and its eviction.
        agent_settings, agent_budgets = agents_by_name(app, script)
        override = use_saved_script(llm, script, model)
        try:
            session = fork_session(
                source, point, new_session_id(),
                tools=app.agent.tool_list() if app else (),
                model_override=override,
                script_model=script.model if script else None,
                telemetry=tracing.telemetry,
                llm=llm,
                max_turns=model_opts.max_turns,
                agent_settings=agent_settings,
                settings_override=params,
                agent_budgets=agent_budgets,
                eviction=eviction_opts.policy(script),
                budget=BudgetMeter.for_session(limits),
            )
        except ForkError as exc:
            raise DataError(str(exc)) from None
        check_session_budgets(session, budget_opts)  # nothing spent before: a fork counts from zero
        session.carried_budget = kept if budget_opts.scope == "run" else None
        install_session_hooks(session, script, app)  # hooks are code: installed as the source's run had them
        load_model_library()  # before the lock, as run: a kill then leaves no fork, not an empty session
        recording = start_recording(tracing, paths, session.id)
        keep_revivable(session, paths.session_dir(session.id))  # evicted agents come back from the fork's own records
        attach_console(tracing, verbose, trace_llm, trace_tools)
        extra = point.run_attributes()  # on every run: the first is the one that says it (meta.json reads run 1)
        if app is not None:
            extra[sc.RUN_APP] = app.reference
        if params is not None:
            extra[sc.RUN_PARAMS] = params.to_json()
        context = RunContext(source="fork", script=script.source if script else None, model_override=model, extra=extra)
        steps = next_steps(paths, session.id, "agents")
        return execute(session, prompt_list, context, tracing, recording, steps)


@click.command()
@click.argument("session_id")
@click.argument("prompts", nargs=-1)
@click.option("--at", "at", required=True, metavar="MESSAGE",
              help="The message the fork starts just after: a message id (msg_000017) or a path label of "
                   "`sessions show` (4-3-2 in run 1, or RUN:LABEL), meaning the last message inside that node.")
@click.option("--script", "script_name", callback=not_empty,
              help="Script to go on with (default: the one the source's run of that message ran with).")
@model_options
@budget_options
@eviction_options
@output_options
@storage_options
def fork(session_id, prompts, at, script_name, model_opts, budget_opts, eviction_opts, otlp_file, redacted_save, verbose,
         trace_llm, trace_tools, paths):
    """Start a new session from SESSION_ID's state just after message --at, and run PROMPTS in it.

    Without PROMPTS (and nothing on stdin) the fork's one run only records that state: resume it later.

    The source is only read: no lock is taken and none of its files changes. Later messages,
    and agents created after the message, do not exist in the fork. The session limits of the
    source's run of that message carry on (the --max-... given on top), counting from zero.
    """
    if redacted_save:
        raise click.UsageError("--redacted-save is not available for a fork (its inherited contents are saved)")
    finish(fork_session_command(session_id, at, prompts, script_name, model_opts, otlp_file, verbose, trace_llm,
                                trace_tools, paths, eviction_opts, budget_opts))
