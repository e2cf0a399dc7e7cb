"""``otel-agents resume SESSION_ID [PROMPT]...``: rebuild every agent of a saved session and carry on."""

from __future__ import annotations

from dataclasses import dataclass, replace

import click

from otel_agents.cli.execution import (
    attach_console,
    command_tracing,
    execute,
    finish,
    label_runs,
    make_llm,
    output_options,
    start_recording,
    use_saved_script,
)
from otel_agents.cli.prompts import read_prompts
from otel_agents.cli.model_options import check_scripted_model, model_options
from otel_agents.cli.app_session import agents_by_name, check_script_names, install_session_hooks, load_app_or_exit
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


@dataclass(frozen=True)
class Delivery:
    """An outside event for one agent of the session (``send``): it answers instead of the root."""

    agent: str  # name or id
    sender: str | None = None  # named in the record's source and the run's ingress metadata


@ledger_errors_are_data_errors
def resume_session_command(session_id, prompts, script_name, model_opts, otlp_file, verbose, trace_llm,
                           trace_tools, paths, redacted_save: bool = False, delivery: Delivery | None = None,
                           budget_opts: BudgetOptions = BudgetOptions(),
                           eviction_opts: EvictionOptions = EvictionOptions()) -> int:
    """Own the session, load and check all of it, then run: nothing is called or billed before the checks."""
    from otel_agents.cli.execution import own_session

    refuse_storage_output(otlp_file, paths, "--otlp-file")
    session_dir = session_dir_or_exit(paths, session_id)
    ownership = own_session(session_dir)  # exit 2 while another process writes it
    try:
        return _resume_owned(session_dir, session_id, prompts, script_name, model_opts, otlp_file, verbose,
                             trace_llm, trace_tools, paths, ownership, budget_opts, delivery, eviction_opts)
    finally:
        ownership.release()  # idempotent: a started recording has released it already


def _saved_txn(tree, meta) -> str | None:
    """The session's console id, from the tree's runs or else meta.json's last run."""
    from otel_agents.cli.console import saved_txn

    if tree is not None:
        return saved_txn(tree.get("runs") or [])
    last = (meta or {}).get("last_run")
    return saved_txn([last]) if isinstance(last, dict) else None


def _target_or_exit(session, delivery: Delivery | None):
    """The agent a delivery names (None: the root answers), or a usage error listing the agents."""
    if delivery is None:
        return None
    agent = session.find_agent(delivery.agent)
    if agent is None:
        names = ", ".join(sorted({a.name for a in session.agents.values()}))
        raise click.UsageError(f"session {session.id} has no agent {delivery.agent!r} (its agents: {names})")
    return agent


def _resume_owned(session_dir, session_id, prompts, script_name, model_opts, otlp_file, verbose, trace_llm,
                  trace_tools, paths, ownership, budget_opts, delivery: Delivery | None = None,
                  eviction_opts: EvictionOptions = EvictionOptions()) -> int:
    from otel_agents.llm.api_base import ApiBaseError, carried_api_base
    from otel_agents.llm.scripts import ScriptError, load_script
    from otel_agents.llm.budget import BudgetMeter
    from otel_agents.restore import (
        ResumeError, carried_budget, restore_session, saved_budget, saved_params,
    )
    from otel_agents.restored_models import carried_model
    from otel_agents.saved_session import (
        agents_spent, hooks_left_behind, load_for_resume, spent_before, stopped_before_its_first_agent,
    )

    try:  # everything is read and checked before any model is called or anything billed
        saved, tree, meta, repair = load_for_resume(session_dir, session_id)
    except ResumeError as exc:
        raise DataError(str(exc)) from None
    last = saved.last_run
    app = load_app_or_exit(last.app) if last and last.app else None  # its tools and hooks, before any call
    saved_script = last.script if last and last.script else (None if app else FALLBACK_SCRIPT)
    try:  # an app session run on a real model had no script, and resumes without one
        script = load_script(script_name or saved_script, saved=not script_name) if script_name or saved_script else None
    except ScriptError as exc:
        if script_name:  # the user's own --script: no hint to pass what was passed
            raise DataError(f"--script: {exc}") from None
        raise DataError(f"cannot load the session's script: {exc} (pass --script)") from None
    check_scripted_model(script, model_opts.model)
    prompt_list = read_prompts(prompts, ())
    if not prompt_list:
        raise click.UsageError("no prompt given (as arguments, on stdin, or interactively)")
    model = model_opts.model or carried_model(last.model_override if last else None)
    try:
        params = saved_params(saved, model_opts.params)  # the session's --param, these on top
        limits = saved_budget(saved, budget_opts.limits())  # the session's limits, these on top
        # where the session's calls went: the conversation and the key go nowhere else unless told
        model_opts = replace(model_opts, api_base=carried_api_base(model_opts.api_base,
                                                                   last.api_base if last else None, session_id))
    except (ResumeError, ApiBaseError) as exc:
        raise DataError(str(exc)) from None

    from otel_agents.cli.execution import StorageUnwritable
    from otel_agents.persistence.store import StoreError
    from otel_agents.revivable import keep_revivable
    from otel_agents.runtime.session import RunContext
    from otel_agents.saved_session import bill_before_resume

    with command_tracing(otlp_file) as tracing:  # shut down however the command ends
        llm = make_llm(tracing, model_opts)
        agent_settings, agent_budgets = agents_by_name(app, script)
        fresh = stopped_before_its_first_agent(saved, tree, meta)
        override = use_saved_script(llm, script, model) if not fresh else None
        try:
            if fresh:  # stopped before its first run: its root starts now, as `run` would have started it
                session = _fresh_session(saved, app, script, model_opts, tracing, llm, params, limits, eviction_opts)
            else:
                session = restore_session(
                    saved,
                    tools=app.agent.tool_list() if app else (),
                    model_override=override,
                    # agents on another script's scripted model move to this one's
                    script_model=script.model if script else None,
                    telemetry=tracing.telemetry,
                    llm=llm,
                    max_turns=model_opts.max_turns,
                    agent_settings=agent_settings,
                    settings_override=params,
                    agent_budgets=agent_budgets,
                    budget=BudgetMeter.for_session(limits),
                    eviction=eviction_opts.policy(script),
                )
            check_session_budgets(session, budget_opts, spent_before(tree, meta),
                                  lambda: agents_spent(session_dir, tree))
            session.carried_budget = carried_budget(saved, budget_opts.scope)
        except ResumeError as exc:
            raise DataError(str(exc)) from None
        target = _target_or_exit(session, delivery)
        if not fresh:  # a new session has its hooks installed already (and its names checked)
            if script is not None and app is None:
                check_script_names(session, script)
            install_session_hooks(session, script, app)
        for name in hooks_left_behind(session_dir, tree, meta, session.hooks.names()):
            click.echo(f"warning: hook {name!r} watched this session and is not installed now (hooks are code, "
                       "not saved: run the session from an app, `run --app MODULE:FACTORY`, to have them back)",
                       err=True)

        try:  # said before anything is billed or any LLM is called; a crashed run is billed once, before new runs
            bill_before_resume(session_dir, tree, meta, paths.billing_file, repair)
        except StoreError as exc:
            raise StorageUnwritable(str(exc)) from None
        _say_what_the_endpoint_lacks(tracing, repair, session_id)
        recording = start_recording(tracing, paths, session_id, ownership=ownership, resume=True)
        keep_revivable(session, session_dir)  # the policy's limit holds from here on
        txn = _saved_txn(tree, meta)
        attach_console(tracing, verbose, trace_llm, trace_tools, txn=txn)
        extra = {sc.RUN_APP: app.reference} if app else {}  # the next resume imports the same app
        if params is not None:
            extra[sc.RUN_PARAMS] = params.to_json()  # and gives every agent the same parameters
        context = RunContext(source="external" if delivery else "resume", script=script.source if script else None,
                             model_override=model, extra=extra, sender=delivery.sender if delivery else None)
        label_runs(session, context, txn, sender=delivery.sender if delivery else None)
        return execute(session, prompt_list, context, tracing, recording, agent=target)


def _say_what_the_endpoint_lacks(tracing, repair, session_id: str) -> None:
    """A killed run's spans never reach an OTLP endpoint: those it left open never ended, and its
    exporter's queue died with it. A resume's spans link to them, so the central copy stays
    incomplete until the session is sent again; saying so beats a `collect` session that waits."""
    from otel_agents.tracing.export_filter import NetworkExportFilter
    from otel_agents.tracing.redaction import redact_text

    if repair is None or not repair.interrupted:
        return
    for exporter in tracing.network_exporters:
        if isinstance(exporter, NetworkExportFilter):
            click.echo(redact_text(f"note: the interrupted run's last spans did not reach the {exporter.describe}: "
                                   f"`otel-agents export {session_id}` sends the session again (collect keeps "
                                   "each span once)"), err=True)
            return


def _fresh_session(saved, app, script, model_opts, tracing, llm, params, limits, eviction_opts):
    """A session with no agents yet (its first run was stopped before it began, even by kill -9): a new
    runtime session under the saved id, its root from the script or app given (``--script``, else the default)."""
    from otel_agents.cli.app_session import new_session
    from otel_agents.llm.budget import BudgetMeter
    from otel_agents.restore import ResumeError

    if saved.redacted:  # its contents must not be kept: resume has no --redacted-save to keep that promise
        raise ResumeError(f"session {saved.session_id} was started with --redacted-save and has no run: "
                          "start a new one with `otel-agents run --redacted-save`")
    return new_session(app, script, model_opts.model, session_id=saved.session_id, telemetry=tracing.telemetry,
                       llm=llm, max_turns=model_opts.max_turns, settings_override=params,
                       budget=BudgetMeter.for_session(limits), eviction=eviction_opts.policy(script))


@click.command()
@click.argument("session_id")
@click.argument("prompts", nargs=-1)
@click.option("--script", "script_name", callback=not_empty,
              help="Script to continue with (default: the one the session ran with). Agents on another "
                   "script's model (scripted/<name>) move to this script's; --model moves every agent. "
                   "Each change is recorded on the run (otel_agents.run.model_changes).")
@model_options
@budget_options
@eviction_options
@output_options
@storage_options
def resume(session_id, prompts, script_name, model_opts, budget_opts, eviction_opts, otlp_file, redacted_save, verbose,
           trace_llm, trace_tools, paths):
    """Rebuild every agent of SESSION_ID exactly as saved and run PROMPTS.

    Each resumed run is a new trace linked to the previous run, in the same session directory.
    """
    if redacted_save:
        raise click.UsageError("--redacted-save applies to new sessions only")
    finish(resume_session_command(session_id, prompts, script_name, model_opts, otlp_file, verbose,
                                  trace_llm, trace_tools, paths, budget_opts=budget_opts,
                                  eviction_opts=eviction_opts))
