"""``otel-agents run``: run prompts in a new session (or, with ``--resume``, a saved one)."""

from __future__ import annotations

from pathlib import Path

import click

from otel_agents.cli.execution import (
    attach_console,
    command_tracing,
    execute,
    finish,
    label_runs,
    load_model_library,
    make_llm,
    next_steps,
    output_options,
    start_recording,
)
from otel_agents.cli.prompts import read_prompts
from otel_agents.cli.budget_options import budget_options, check_session_budgets
from otel_agents.cli.eviction_options import eviction_options
from otel_agents.cli.options import DataError, FiniteFloat, not_empty, refuse_storage_output, storage_options
from otel_agents.cli.model_options import check_scripted_model, model_options
from otel_agents.cli.app_session import load_app_or_exit, new_session

DEFAULT_SCRIPT = "jack-and-jill"
# Said once by the built-in demo: its warnings are part of the show, not a problem of the user's set-up.
DEMO_NOTICE = ("demo: the scripted model answers one call with a 429 rate limit (retried) and the ResourceMonitor "
               "hook denies a fourth helper; the WRN lines they cause are part of the demo")


@click.command()
@click.argument("prompts", nargs=-1)
@click.option("--script", "script_name", default=None, callback=not_empty,
              help=f"Built-in script name or path to a script JSON file (docs/scripts.md) [default: {DEFAULT_SCRIPT}].")
@click.option("--app", "app_reference", metavar="MODULE:FACTORY",
              help="Run a Python app: the factory returns the root otel_agents.Agent (or (agent, hooks)).")
@click.option("--resume", "resume_id", metavar="SESSION_ID", help="Continue a saved session (same as `resume`).")
@click.option("--watch", "watch_paths", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="After the prompts, keep the session running and turn this file appearing or changing into an "
                   "outside event (repeatable; polled every 0.25s; see also the script's 'triggers').")
@click.option("--watch-to", "watch_agent", metavar="AGENT",
              help="Agent (name or id) told of --watch changes [default: the root].")
@click.option("--watch-for", "watch_for", type=FiniteFloat(0, min_open=True), metavar="SECONDS",
              help="Stop watching after SECONDS [default: until Ctrl-C or SIGTERM].")
@model_options
@budget_options
@eviction_options
@output_options
@storage_options
def run(prompts, script_name, app_reference, resume_id, watch_paths, watch_agent, watch_for, model_opts, budget_opts,
        eviction_opts, otlp_file, redacted_save, verbose, trace_llm, trace_tools, paths):
    """Run PROMPTS (arguments, else stdin lines, else interactive) in a new session.

    stdout carries the root agent's utterances only; the session id goes to stderr.
    """
    refuse_storage_output(otlp_file, paths, "--otlp-file")
    if resume_id is not None:
        from otel_agents.cli.resume import resume_session_command

        if app_reference is not None:
            raise click.UsageError("--app applies to new sessions (a resumed session re-imports its own app)")
        if redacted_save:
            raise click.UsageError("--redacted-save applies to new sessions only")
        if watch_paths or watch_agent or watch_for:
            raise click.UsageError("--watch applies to new sessions (use `send` to tell a saved session's agent)")
        finish(resume_session_command(resume_id, prompts, script_name, model_opts, otlp_file,
                                      verbose, trace_llm, trace_tools, paths, budget_opts=budget_opts,
                                      eviction_opts=eviction_opts))
    from otel_agents.llm.scripts import ScriptError, load_script

    app = load_app_or_exit(app_reference) if app_reference is not None else None
    try:  # an app needs a script only when one is named: its agents may be on a real model
        script = load_script(script_name or DEFAULT_SCRIPT, saved=not script_name) if app is None or script_name else None
    except ScriptError as exc:
        raise DataError(str(exc)) from None
    check_scripted_model(script, model_opts.model)
    prompt_list = read_prompts(prompts, script.prompts if script is not None else ())
    if not prompt_list:
        raise click.UsageError("no prompt given (as arguments, on stdin, or in the script's 'prompts')")
    watch = _file_watch(watch_paths, watch_agent, watch_for, script)
    eviction = eviction_opts.policy(script)
    from otel_agents.revivable import keep_revivable
    from otel_agents.runtime.session import RunContext
    from otel_agents.tracing import semconv as sc

    with command_tracing(otlp_file) as tracing:  # shut down however the command ends
        llm = make_llm(tracing, model_opts)
        session = new_session(app, script, model_opts.model, telemetry=tracing.telemetry, llm=llm,
                              max_turns=model_opts.max_turns, settings_override=model_opts.params,
                              budget=budget_opts.meter(), eviction=eviction)
        check_session_budgets(session, budget_opts)
        load_model_library()  # before the lock: a kill then leaves no session, a kill after it one with its prompt
        recording = start_recording(tracing, paths, session.id, redact_contents=redacted_save)
        keep_revivable(session, paths.session_dir(session.id), redacted=redacted_save)  # only now may agents be evicted
        attach_console(tracing, verbose, trace_llm, trace_tools)
        extra = {sc.RUN_REDACTED_SAVE: True} if redacted_save else {}
        if app is not None:
            extra[sc.RUN_APP] = app.reference  # resume re-imports it for the tools and hooks
        if model_opts.params is not None:
            extra[sc.RUN_PARAMS] = model_opts.params.to_json()  # resume gives them to every agent again
        context = RunContext(source="cli", script=script.source if script is not None else None,
                             model_override=model_opts.model, extra=extra)
        label_runs(session, context, txn=None, keep_argv=not redacted_save)  # argv holds the prompts
        demo = app is None and (script_name or DEFAULT_SCRIPT) == DEFAULT_SCRIPT
        if demo and model_opts.model is None:  # on a real model neither failure is scripted
            click.echo(DEMO_NOTICE, err=True)
        # On a real model the demo's prompt need not make a Jack and a Jill: the agents view always works.
        steps = next_steps(paths, session.id, "dialog Jack Jill" if demo and model_opts.model is None else "agents")
        code = execute(session, prompt_list, context, tracing, recording, steps, watch=watch)
    finish(code)


def _file_watch(paths, agent: str | None, duration: float | None, script):
    """The files watched while the session runs (--watch and the script's triggers), or None."""
    from otel_agents.cli.watch import FileWatch, missing_directories, triggers_of

    if (agent or duration) and not paths and not (script and script.triggers):
        raise click.UsageError("--watch-to and --watch-for need a --watch PATH or a script with 'triggers'")
    for index, spec in enumerate(script.triggers if script is not None else ()):
        if Path(spec.watch).is_dir():  # as --watch refuses one: a directory's mtime says little of its files
            raise click.UsageError(f"{script.source}: triggers[{index}]: 'watch' {spec.watch!r} is a directory: "
                                   "a trigger watches a file, as run --watch does")
    triggers = triggers_of(paths, agent, script.triggers if script is not None else ())
    problems = missing_directories(triggers)
    if problems:  # known before anything runs: no session is made, no model called
        raise click.UsageError(problems[0])
    return FileWatch(triggers, duration) if triggers else None
