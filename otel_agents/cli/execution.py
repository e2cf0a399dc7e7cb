"""What the commands that run a session share: tracing and recording set-up, the prompt loop (prompts: prompts.py).

The commands stay thin: they decide which session to run (new or restored) and
hand it here.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import click

from otel_agents.cli import stdout
from otel_agents.cli.console import ConsoleOptions, ConsoleRenderer, one_line
from otel_agents.cli.options import NewFilePath
from otel_agents.cli.signal_hold import holding
from otel_agents.cli.streamed_text import stream_root_text
from otel_agents.persistence.paths import Paths
from otel_agents.terminal_text import shown

if TYPE_CHECKING:
    from otel_agents.cli.model_options import ModelOptions

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def output_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--otlp-file -v --trace-llm --trace-tools``."""
    options = [
        click.option("--redacted-save", is_flag=True,
                     help="Save no message contents (what agents said, heard, thought); such a session cannot be resumed."),
        click.option("--trace-tools", is_flag=True, help="TRC lines with full tool arguments and results (capped)."),
        click.option("--trace-llm", is_flag=True, help="TRC lines with full LLM requests and responses (capped)."),
        click.option("-v", "--verbose", is_flag=True,
                     help="One stderr line per LLM and tool request/response, reasoning (THK) and run summaries."),
        click.option("--otlp-file", type=NewFilePath(),
                     help="Also write spans as OTLP/JSON lines (the Collector file exporter's shape), and the GenAI metrics beside it (PATH with .metrics before its suffix); its directory must exist and be writable."),
    ]
    for option in options:
        func = option(func)
    return func


@contextmanager
def command_tracing(otlp_file: Path | None) -> Iterator[Any]:
    """The command's tracing from OTEL_* (a bad setting is exit 2), shut down on every way out.

    A refusal after it started (a bad price table, an unpriced budget, a busy session, an
    unwritable home) and a failed run end the same way: its exporters flushed and its metric
    readers' threads stopped. ``execute`` shuts it down itself before its last lines; the
    second shutdown does nothing.
    """
    from otel_agents.session_recording import RecordingConfigError, configure as configure_recording

    try:
        tracing = configure_recording(otlp_file)
    except RecordingConfigError as exc:
        raise SettingRefused(str(exc)) from None
    try:
        yield tracing
    finally:
        tracing.shutdown()


def make_llm(tracing, opts: ModelOptions):
    from otel_agents.llm.client import LLMClient
    from otel_agents.llm.pricing import PriceConfigError, PriceTable
    from otel_agents.llm.retry import RetryPolicy

    try:
        prices = PriceTable.from_env()
    except PriceConfigError as exc:
        raise SettingRefused(str(exc)) from None
    return LLMClient(
        tracing.telemetry,
        retry=RetryPolicy(max_attempts=opts.max_attempts),
        prices=prices,
        timeout_s=opts.timeout,
        api_base=opts.api_base,
        capture_input_messages=tracing.options.capture_input_messages,
        stream=opts.stream,
    )


class SettingRefused(click.ClickException):
    """A bad OTEL_* or OTEL_AGENTS_* value: one ``Error:`` line, exit 2. Not click's UsageError, whose
    ``Usage:`` and ``Try --help`` lines point at the command line, which is not at fault."""

    exit_code = EXIT_USAGE


class StorageUnwritable(click.ClickException):
    """The home cannot take the session: said in one line, before any LLM call (exit 2)."""

    exit_code = EXIT_USAGE


class SessionBusyError(click.ClickException):
    """Another live process writes the session (exit 2, naming it)."""

    exit_code = EXIT_USAGE


def _as_click(exc) -> click.ClickException:
    """A recording set-up error as the click exception of its exit code (always 2, one line)."""
    from otel_agents.session_recording import SessionBusyError as Busy, StorageUnwritable as Unwritable

    if isinstance(exc, Busy):
        return SessionBusyError(str(exc))
    if isinstance(exc, Unwritable):
        return StorageUnwritable(str(exc))
    return SettingRefused(str(exc))  # RecordingConfigError: a setting from the environment


def own_session(directory: Path, *, create: bool = False):
    """Take the session's single-writer lock (persistence/ownership.py), or exit 2 naming its owner."""
    from otel_agents.session_recording import RecordingError, own_session as own

    try:
        return own(directory, create=create)
    except RecordingError as exc:
        raise _as_click(exc) from None


def start_recording(tracing, paths: Paths, session_id: str, ownership=None, **recorder_kwargs: Any):
    """``session_recording.start_recording``, its errors as exit-2 click exceptions.

    From here until :func:`execute` takes over, Ctrl-C and SIGTERM are held: killed by SIGTERM's
    default action in that moment, a command left a session of its lock alone and said nothing."""
    from otel_agents.session_recording import RecordingError, start_recording as start

    holding.start()
    try:
        return start(tracing, paths, session_id, ownership, warn=lambda text: click.echo(text, err=True),
                     **recorder_kwargs)
    except RecordingError as exc:
        raise _as_click(exc) from None


def load_model_library() -> None:
    """Import litellm (seconds; far more on a loaded machine) before a new session's lock is taken, not
    between the lock and its first run's span: a process killed (kill -9) in that gap left a session with
    no prompt recorded. Ctrl-C or SIGTERM during the import ends the command (exit 130), nothing saved."""
    from otel_agents.llm.litellm_loader import load_litellm

    if "litellm" in sys.modules:
        return
    # As in execute: a background job starts with SIGINT ignored, and SIGTERM must end it cleanly too.
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    previous = signal.signal(signal.SIGTERM, _as_ctrl_c)
    try:
        load_litellm()
    except KeyboardInterrupt:
        click.echo("interrupted before the session started: nothing was saved", err=True)
        finish(EXIT_INTERRUPTED)
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)


def use_saved_script(llm, script, model: str | None) -> str | None:
    """Point the LLM client at the session's script (its scripted model, its stream switch) and
    return the model override for restored agents: None when no model is named (each agent keeps
    its own, or moves to the script's from another script's or a replay's); a named one, the
    script's own ``scripted/<name>`` included, moves every agent."""
    if script is None:
        return model
    from otel_agents.runtime.scenario import resolve_model

    llm.stream = llm.stream or script.stream
    llm.use_script(script)  # the scripted model the saved agents name, if they use it
    return resolve_model(script, model) if model else None


def attach_console(tracing, verbose: bool, trace_llm: bool, trace_tools: bool, txn: str | None = None) -> None:
    """Console lines come from spans; the labeler must see a span start before the renderer.

    ``txn``: the saved session's console id (``console.saved_txn``); None for a new session.
    """
    from otel_agents.cli.live_labels import LivePathLabels

    labels = LivePathLabels()
    renderer = ConsoleRenderer(labels.label_of, ConsoleOptions(verbose, trace_llm, trace_tools), txn=txn)
    tracing.add_processor(labels)
    tracing.add_processor(renderer)
    tracing.add_listener(renderer)


def label_runs(session, context, txn: str | None, sender: str | None = None, keep_argv: bool = True) -> None:
    """Every run ``context`` starts carries this process's ingress metadata (``sender``: who
    delivered an outside event; ``keep_argv`` off for ``--redacted-save``, whose prompts are not
    saved) and the session's console id (``txn``, None for a new session)."""
    from otel_agents.cli.console import keep_session_txn
    from otel_agents.tracing.ingress import ingress_attributes

    context.extra.update(ingress_attributes(sender=sender, keep_argv=keep_argv))
    keep_session_txn(session, context, txn)


def _as_ctrl_c(signum, frame):
    # SIGTERM ends a run like Ctrl-C: asyncio.Runner's SIGINT handling cancels the
    # running task, so every open span ends (marked cancelled) before we save.
    signal.raise_signal(signal.SIGINT)


@dataclass(frozen=True)
class NextSteps:
    """What the last stderr lines point a newcomer to: where the session is and two commands to try."""

    directory: Path
    view: str  # the arguments of the suggested `view`, e.g. "dialog Jack Jill"
    storage_args: str = ""  # --sessions-dir/--billing-file as given, so the commands find the session

    def lines(self, session_id: str) -> list[str]:
        return [
            f"saved: {self.directory}",
            f"next: otel-agents sessions show {session_id}{self.storage_args}",
            f"next: otel-agents view {session_id} {self.view}{self.storage_args}",
        ]


def next_steps(paths: Paths, session_id: str, view: str) -> NextSteps:
    default = Paths.resolve()
    storage = ""
    if paths.sessions_dir != default.sessions_dir:
        storage += f" --sessions-dir {paths.sessions_dir}"
    if paths.billing_file != default.billing_file:
        storage += f" --billing-file {paths.billing_file}"
    return NextSteps(paths.sessions_dir / session_id, view, storage)


def execute(session, prompts: list[str], context, tracing, recording, steps: NextSteps | None = None,
            agent=None, watch=None, before_run=None) -> int:
    """Run each prompt as its own trace; print utterances; always close the recording.

    A session that could not be saved whole ends the command with exit 1, whatever the run did.
    ``steps``: said on stderr just before the closing ``session: ID`` line (which stays last,
    for scripts), when the session was saved.
    ``agent``: the agent that answers (``send``); by default the root. ``watch``: a
    ``watch.FileWatch`` served after the prompts (its events' answers printed like theirs);
    an interrupt while it waits between events ends the command normally. ``before_run(i)``: called
    before the i-th prompt (from 0) runs (replay sets each run's recorded limits).
    """
    from otel_agents.llm.budget import BudgetExhausted
    from otel_agents.llm.client import LLMCallFailed
    from otel_agents.runtime.agent import MaxTurnsExceeded
    from otel_agents.runtime.hooks import HookFailed
    from otel_agents.tracing.telemetry import RecordingLost

    # A shell starts background jobs with SIGINT ignored; asyncio.Runner only takes
    # over the default handler, and Ctrl-C or SIGTERM must always end a run cleanly.
    came_during_setup = holding.release()  # the handlers from before the lock, put back after the command
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    previous = signal.signal(signal.SIGTERM, _as_ctrl_c)
    exit_code = EXIT_OK
    watching = False
    done = 0  # prompts run
    lost: stdout.StdoutLost | None = None
    streamed = stream_root_text(session)
    try:
        if came_during_setup:  # Ctrl-C or SIGTERM while the session was set up: stopped as if it came now
            raise KeyboardInterrupt
        with asyncio.Runner() as runner:  # one loop for every prompt of the process
            for index, prompt in enumerate(prompts):
                if before_run is not None:
                    before_run(index)
                streamed.clear()
                utterance = runner.run(session.run(prompt, agent=agent, context=context))
                done += 1
                streamed.end()
                if prompt is None:
                    continue  # a fork with no prompt records its state: no one answered, stdout stays empty
                # Streamed text is on stdout already: the line is ended, not printed twice.
                click.echo("" if streamed else shown(str(utterance)))
                sys.stdout.flush()  # a failed write stops here, before the next prompt runs
                if stdout.failure() is not None:  # the streamed text's write failed: it was not raised
                    raise stdout.StdoutLost(stdout.failure())
            if watch is not None:
                watching = True
                runner.run(_serve(watch, session, context, streamed))
    except (LLMCallFailed, MaxTurnsExceeded, BudgetExhausted, HookFailed, RecordingLost) as exc:  # a run that stopped: exit 1
        streamed.end_line()  # a reply cut off mid-stream: stdout still ends its line
        click.echo(_stopped_line(tracing, one_line(exc)), err=True)  # a multi-line text joined, as WRN lines
        exit_code = EXIT_FAILED
    except stdout.StdoutLost as exc:  # said below, with what it cost, once the session is closed
        lost = exc
        exit_code = EXIT_FAILED
    except KeyboardInterrupt:
        if watching and not watch.busy:  # the way to stop watching: nothing was cut short
            click.echo("stopped watching", err=True)
        else:
            streamed.end_line()
            click.echo("interrupted: open spans were ended as cancelled and the session was saved", err=True)
            exit_code = EXIT_INTERRUPTED
    except SystemExit as exc:  # a tool's sys.exit(): its code is the process's, said once why
        click.echo(f"stopped: sys.exit({exc.code!r}) was called during the run; the session was saved", err=True)
        raise
    finally:
        streamed.end()  # a run that stopped mid-reply: the text it had streamed, to its end
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        try:
            saved = recording.close()
        finally:
            tracing.shutdown()  # before the last lines: its warnings name what an endpoint missed
        if saved and steps is not None:
            for line in steps.lines(session.id):
                click.echo(line, err=True)
        if lost is not None:
            line = stdout.run_lost_line(lost.cause, session.id, saved, len(prompts) - done, len(prompts),
                                        watch is not None)
            if line:
                click.echo(line, err=True)
            else:  # the reader went away after the last answer: nothing was lost that was wanted
                exit_code = EXIT_OK
            stdout.told()
        click.echo(f"session: {session.id}", err=True)
    if not saved and exit_code == EXIT_OK:
        click.echo(f"error: session {session.id} was not saved whole (see the warnings above)", err=True)
        exit_code = EXIT_FAILED
    return exit_code


def _stopped_line(tracing, text: str) -> str:
    """A stopped run's ``error:`` line, named by the run as the console's other lines (none attached: plain)."""
    renderer = next((l for l in tracing.telemetry.listeners if isinstance(l, ConsoleRenderer)), None)
    return renderer.run_line("error:", text) if renderer is not None else f"error: {text}"


async def _serve(watch, session, context, streamed: list[str]) -> None:
    """Say what is watched and for how long, then deliver its events until it ends."""
    until = "until interrupted" if watch.duration is None else f"for {watch.duration:g}s"
    paths = ", ".join(shown(str(trigger.path), lines=False) for trigger in watch.triggers)
    click.echo(f"watching {paths} {until} (Ctrl-C stops)", err=True)

    def answered(text: str) -> None:
        streamed.end()
        click.echo("" if streamed else shown(text))
        streamed.clear()

    await watch.serve(session, context, answered, warn=lambda text: click.echo(text, err=True))


def finish(exit_code: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(exit_code)
