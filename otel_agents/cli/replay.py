"""``otel-agents replay ID [--from-run N] [--strict]``: re-run a saved session's prompts against its recorded answers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click

from otel_agents.cli.execution import (
    EXIT_FAILED,
    EXIT_OK,
    attach_console,
    command_tracing,
    execute,
    finish,
    load_model_library,
    make_llm,
    start_recording,
)
from otel_agents.cli.model_options import ModelOptions
from otel_agents.cli.app_session import agents_by_name, install_session_hooks, load_app_or_exit, new_session
from otel_agents.cli.options import DataError, session_dir_or_exit, storage_options

@dataclass
class ReplayReport:
    """The lines said before the closing ``session:`` line (execute's ``steps``): the replay's verdict."""

    book: Any  # llm.replay_book.ReplayBook
    source_id: str
    runs: int

    def failed(self) -> bool:
        return self.book.divergence is not None or bool(self.book.unused())

    def lines(self, session_id: str) -> list[str]:
        book = self.book
        out = []
        for what in dict.fromkeys(note.what for note in book.notes):  # the first of each kind, with its diff
            same = [note for note in book.notes if note.what == what]
            out.append(f"replay: note: {same[0].summary()} (compared only with --strict; in {len(same)} of the calls)")
            out += [f"replay: note: {line}" for line in same[0].diff.splitlines()]
        if book.divergence is not None:
            out += book.divergence.lines()
        elif book.unused():
            first = book.unused()[0]
            out.append(f"replay diverged: agent {first.agent}, turn {first.turn}, attempt {first.attempt}: "
                       f"recorded but never requested ({len(book.unused())} recorded calls unused)")
        else:
            out.append(f"replay: {len(book.used)} LLM calls of {self.runs} runs matched session {self.source_id}")
        return out


@click.command()
@click.argument("session_id")
@click.option("--from-run", "from_run", type=click.IntRange(1), default=1, show_default=True,
              help="Replay runs N.. only, starting from a fork of the session just before run N "
                   "(earlier runs are not made again; turns still count from the session's start).")
@click.option("--strict", is_flag=True,
              help="Any difference fails at once: tool definitions and request parameters too, not only the messages.")
@click.option("-v", "--verbose", is_flag=True, help="One stderr line per LLM and tool request/response.")
@storage_options
def replay(session_id, from_run, strict, verbose, paths):
    """Re-run SESSION_ID's prompts in a new session, answering every LLM request from the recorded ones.

    The same app or script (re-imported, as resume does) runs the same prompts; each request is
    checked against the recorded one. The first divergence is reported (agent, turn, a diff of the
    request) and ends the replay with exit 1. Replayed calls cost nothing; each run's limits
    (--max-cost-usd ..., the script's budgets) count the source's recorded usage and cost, so a
    run the source's limits stopped stops at the same place.
    """
    finish(replay_command(session_id, from_run, strict, verbose, paths))


def replay_command(session_id: str, from_run: int, strict: bool, verbose: bool, paths) -> int:
    from otel_agents.llm.model_settings import ModelSettingsError, settings_from_json
    from otel_agents.llm.replay_book import ReplayBook
    from otel_agents.llm.scripts import ScriptError, load_script
    from otel_agents.replay_source import ReplayError, read_source, state_before_run

    source_dir = session_dir_or_exit(paths, session_id)
    try:  # everything is read and checked before any model is called
        source = read_source(source_dir, from_run)
        start = state_before_run(source_dir, from_run) if from_run > 1 else None
    except ReplayError as exc:
        raise DataError(str(exc)) from None
    if source.app is None and source.script is None:
        raise click.UsageError(f"session {session_id} names neither a script nor an app to replay with")
    if source.app is None and source.from_python:  # its script's agents are not the program's: it would diverge at once
        raise click.UsageError(f"session {session_id} was run from Python without app=, so its agents and tools "
                               "cannot be built again to replay it: give Session(app='module:factory')")
    app = load_app_or_exit(source.app) if source.app else None
    try:
        script = load_script(source.script, saved=True) if source.script else None
    except ScriptError as exc:
        raise DataError(f"cannot load the session's script: {exc}") from None
    try:  # each run's --param, as it recorded them: runs may have been given different ones
        run_params = {run: settings_from_json(text, f"run {run}") for run, text in source.params.items()}
    except ModelSettingsError as exc:
        raise click.UsageError(f"session {session_id}: {exc}") from None
    replayed = [(run, prompt) for run, prompt in source.prompts if run >= from_run]
    params = run_params.get(replayed[0][0]) if replayed else None  # the first replayed run's, until limit_run
    from otel_agents.llm.budget import SESSION_OWNER, Budget, BudgetError, BudgetMeter, budget_from_json

    try:  # each run's session limits (--max-cost-usd ...), as it recorded them
        limits = {run: budget_from_json(text, f"session {session_id}, run {run}") for run, text in source.budgets.items()}
        carried = {run: budget_from_json(text, f"session {session_id}, run {run}") for run, text in source.carried.items()}
    except BudgetError as exc:
        raise DataError(str(exc)) from None
    # One meter for the whole replay, counting from its start as the source's resumes counted the session's
    # spending; before each run it takes that run's limits (none: Budget(), which limits nothing). A run
    # resumed with --budget-scope run counted its own spending only: see RunScopes.
    meter = BudgetMeter(SESSION_OWNER, Budget())
    from otel_agents.replay_scopes import RunScopes

    scopes = RunScopes()
    book = ReplayBook.of(source.calls, strict=strict)  # runs before --from-run are not made: not in it
    model = f"replay/{source.session_id}"

    from otel_agents.runtime.session import RunContext
    from otel_agents.tracing import semconv as sc

    with command_tracing(None) as tracing:  # shut down however the command ends
        llm = make_llm(tracing, ModelOptions(model, None, 20, 4, 120.0, params, source.stream))
        if start is not None:
            session = _forked_before_run(start, app, script, model, telemetry=tracing.telemetry, llm=llm,
                                         settings_override=params, budget=meter)
        else:
            session = new_session(app, script, model, telemetry=tracing.telemetry, llm=llm,
                                  settings_override=params, budget=meter)
        llm.stream = source.stream  # as recorded, whatever the script says now
        load_model_library()  # before the lock, as run: a kill then leaves no session, not an empty one
        recording = start_recording(tracing, paths, session.id)
        attach_console(tracing, verbose, False, False)
        from otel_agents.llm.replay_provider import register_replay  # litellm is loaded: cheap

        register_replay(source.session_id, book)
        extra: dict[str, Any] = {}  # the session replayed is named by the run's model: replay/<source>
        if app is not None:
            extra[sc.RUN_APP] = app.reference
        if start is not None:  # it starts from a fork of the source: meta.json and `sessions list` say so
            extra.update(start.point.run_attributes())
        context = RunContext(source="replay", script=script.source if script is not None else None,
                             model_override=model, extra=extra)
        report = ReplayReport(book, source.session_id, len(replayed))

        def limit_run(index: int) -> None:  # each run's own limits and --param, recorded again on its span
            run = replayed[index][0]
            meter.budget = limits.get(run, Budget())
            scopes.before_run(session, run in carried)
            session.carried_budget = carried.get(run)  # recorded again: a replay of the replay counts alike
            session.settings_override = run_params.get(run)
            if run in run_params:
                context.extra[sc.RUN_PARAMS] = run_params[run].to_json()
            else:
                context.extra.pop(sc.RUN_PARAMS, None)
            if run in source.api_bases:  # not called (the recorded answers are): where a resume of the replay goes on
                context.extra[sc.RUN_API_BASE] = source.api_bases[run]
            else:
                context.extra.pop(sc.RUN_API_BASE, None)

        code = execute(session, [prompt for _, prompt in replayed], context, tracing, recording, report,
                       before_run=limit_run)
    if code == EXIT_OK and report.failed():
        return EXIT_FAILED
    return code


def _forked_before_run(start: Any, app: Any, script: Any, model: str, **restore_kwargs: Any) -> Any:
    """The session as the source's run N started (``replay_source.StateBeforeRun``), every agent on ``model``.

    Rebuilt as resume rebuilds it (the app's tools, the script's and the app's hooks, the agents'
    request parameters and budgets); those budgets count what the runs before spent, at the
    source's recorded cost, as a replay from run 1 would have counted it in one process.
    """
    from otel_agents.forking import ForkError, fork_session
    from otel_agents.restore import INTERRUPTED_RESULT
    from otel_agents.tracing.session_ids import new_session_id

    settings, budgets = agents_by_name(app, script)
    if script is not None:
        restore_kwargs["llm"].use_script(script)  # agents left on its scripted model, as at run 1
    try:
        # Cut between runs, a tool call without a result was one the source's run N found interrupted.
        session = fork_session(start.source, start.point, new_session_id(), pending_result=INTERRUPTED_RESULT,
                               tools=app.agent.tool_list() if app else (), model_override=model,
                               script_model=script.model if script else None, agent_settings=settings,
                               agent_budgets=budgets, **restore_kwargs)
    except ForkError as exc:
        raise DataError(str(exc)) from None
    session.carry_spent(start.spent, lambda: start.agents_spent)
    install_session_hooks(session, script, app)
    return session

