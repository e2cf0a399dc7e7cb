"""The model options of the commands that call models (``--model``, ``--param``, ``--stream``, ...) as ``ModelOptions``."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

import click

from otel_agents.cli.options import FiniteFloat, not_empty


@dataclass
class ModelOptions:
    model: str | None
    api_base: str | None
    max_turns: int
    max_attempts: int
    timeout: float
    params: Any = None  # ModelSettings from --param (every agent's request parameters), or None
    stream: bool = False


def _parse_params(ctx, param, values):
    """``--param key=value`` items as ModelSettings; bad ones are one usage line (exit 2)."""
    from otel_agents.llm.model_settings import ModelSettingsError, parse_params

    try:
        return parse_params(values, where="")
    except ModelSettingsError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def model_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--model --api-base --max-turns --max-attempts --timeout --param --stream``, passed as ``model_opts``."""
    options = [
        click.option("--stream", is_flag=True,
                     help="Stream every LLM call: the root agent's text reaches stdout as it is generated."),
        click.option("--param", "params", multiple=True, metavar="KEY=VALUE", callback=_parse_params,
                     help="Request parameter for every agent's LLM calls (repeatable): temperature, max_tokens, "
                          "top_p, stop, seed; values are JSON where they parse (stop=END or stop='[\"a\",\"b\"]'). "
                          "resume keeps the session's and lets these override them."),
        click.option("--timeout", type=FiniteFloat(0, min_open=True), default=120.0, show_default=True,
                     help="Seconds per LLM attempt."),
        click.option("--max-attempts", type=click.IntRange(1), default=4, show_default=True,
                     help="Attempts per LLM call (transient failures are retried)."),
        click.option("--max-turns", type=click.IntRange(1), default=20, show_default=True,
                     help="LLM turns allowed in one response of one agent."),
        click.option("--api-base", help="Base URL of the model's API (e.g. a local OpenAI-compatible server)."),
        click.option("--model", callback=not_empty,
                     help="Any litellm model string (e.g. openai/gpt-4o-mini); default: the script's offline model."),
    ]

    @functools.wraps(func)
    def wrapper(*args, model, api_base, max_turns, max_attempts, timeout, params, stream, **kwargs):
        return func(*args, model_opts=ModelOptions(model, api_base, max_turns, max_attempts, timeout, params, stream),
                    **kwargs)

    for option in options:
        wrapper = option(wrapper)
    return wrapper


def check_scripted_model(script: Any, model: str | None) -> None:
    """A usage error for ``--model scripted/NAME`` naming another script's model: a scripted model answers
    only from its own script, which ``--script`` chooses (the override was dropped without a word)."""
    if model and model.startswith("scripted/") and (script is None or model != script.model):
        name = model.removeprefix("scripted/")
        raise click.UsageError(f"--model {model}: a scripted model answers from its script; "
                               f"choose that script with --script {name}")
