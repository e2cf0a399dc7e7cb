"""``otel-agents run``: run prompts against a scripted scenario or any litellm model."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import click

DEFAULT_SCRIPT = "jack-and-jill"


def read_prompts(arguments: tuple[str, ...], default: tuple[str, ...]) -> list[str]:
    """Arguments, else one per line from stdin, else an interactive prompt on a terminal.

    With nothing given and nothing on stdin, the script's own prompts are used.
    """
    if arguments:
        return list(arguments)
    stdin = click.get_text_stream("stdin")
    if not stdin.isatty():
        lines = [line.strip() for line in stdin.read().splitlines()]
        return [line for line in lines if line] or list(default)
    prompts = []
    hint = f" [{default[0]}]" if default else ""
    click.echo(f"Enter prompts, one per line; an empty line starts the run.{hint}", err=True)
    while True:
        try:
            line = input("> ")
        except EOFError:
            break
        if not line.strip():
            break
        prompts.append(line.strip())
    return prompts or list(default)


@click.command()
@click.argument("prompts", nargs=-1)
@click.option("--model", help="Any litellm model string (e.g. openai/gpt-4o-mini); default: the script's offline model.")
@click.option("--script", "script_name", default=DEFAULT_SCRIPT, show_default=True,
              help="Built-in script name or path to a script JSON file (docs/scripts.md).")
@click.option("--otlp-file", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write spans as OTLP/JSON lines (the Collector file exporter's shape).")
@click.option("--api-base", help="Base URL for the model's API (e.g. a local OpenAI-compatible server).")
@click.option("--max-turns", type=click.IntRange(1), default=20, show_default=True,
              help="LLM turns allowed in one response of one agent.")
@click.option("--max-attempts", type=click.IntRange(1), default=4, show_default=True,
              help="Attempts per LLM call (transient failures are retried).")
@click.option("--timeout", type=click.FloatRange(0, min_open=True), default=120.0, show_default=True,
              help="Seconds per LLM attempt.")
@click.option("-v", "--verbose", is_flag=True, help="One stderr line per LLM and tool request/response.")
def run(prompts, model, script_name, otlp_file, api_base, max_turns, max_attempts, timeout, verbose):
    """Run PROMPTS (arguments, else stdin lines, else interactive) in a new session.

    stdout carries the root agent's utterances only; the session id goes to stderr.
    """
    from otel_agents.llm.scripts import ScriptError, load_script
    from otel_agents.tracing.setup import ConfigError, TracingOptions, configure_tracing

    try:
        script = load_script(script_name)
    except ScriptError as exc:
        raise click.UsageError(str(exc)) from None
    prompt_list = read_prompts(prompts, script.prompts)
    if not prompt_list:
        raise click.UsageError("no prompt given (as arguments, on stdin, or in the script's 'prompts')")
    try:
        tracing = configure_tracing(TracingOptions(otlp_file=otlp_file))
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None

    from otel_agents.llm.client import LLMCallFailed, LLMClient
    from otel_agents.llm.pricing import PriceTable
    from otel_agents.llm.retry import RetryPolicy
    from otel_agents.runtime.agent import MaxTurnsExceeded
    from otel_agents.runtime.scenario import build_session
    from otel_agents.runtime.session import RunContext

    llm = LLMClient(
        tracing.telemetry,
        retry=RetryPolicy(max_attempts=max_attempts),
        prices=PriceTable.from_env(),
        timeout_s=timeout,
        api_base=api_base,
        capture_input_messages=tracing.options.capture_input_messages,
    )
    session = build_session(script, model=model, telemetry=tracing.telemetry, llm=llm, max_turns=max_turns)
    context = RunContext(source="cli", script=script.source, model_override=model)
    exit_code = 0
    try:
        for prompt in prompt_list:
            utterance = asyncio.run(session.run(prompt, context=context))
            click.echo(str(utterance))
    except (LLMCallFailed, MaxTurnsExceeded) as exc:
        click.echo(f"error: {exc}", err=True)
        exit_code = 1
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        exit_code = 130
    finally:
        tracing.shutdown()
        click.echo(f"session: {session.id}", err=True)
    sys.exit(exit_code)
