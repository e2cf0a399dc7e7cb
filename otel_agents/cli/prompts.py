"""The prompts of ``run``, ``resume`` and ``fork`` (arguments, else lines on stdin, else asked on the terminal)
and ``send``'s text (``-``: all of stdin)."""

from __future__ import annotations

import sys

import click

from otel_agents.cli.options import utf8_text


def read_prompts(arguments: tuple[str, ...], default: tuple[str, ...]) -> list[str]:
    """Arguments (``-`` alone: none), else one per line from stdin, else an interactive prompt on a terminal;
    each checked as text that can be saved (exit 2 before any call otherwise).

    With nothing given and nothing on stdin, the script's own prompts are used.
    The interactive prompt goes to stderr: stdout carries utterances only.
    """
    prompts = _gather_prompts(arguments, default)
    for number, prompt in enumerate(prompts, 1):
        if not prompt.strip():  # it would be recorded and answered, as `send` and the Python API refuse it
            raise click.UsageError(f"prompt {number} is empty: a prompt says something")
        utf8_text(prompt, f"prompt {number}")
    return prompts


def _gather_prompts(arguments: tuple[str, ...], default: tuple[str, ...]) -> list[str]:
    if arguments and arguments != ("-",):  # `-` alone: stdin, as `send ID --to AGENT -` reads it
        return list(arguments)
    stdin = sys.stdin
    if not stdin.isatty():
        lines = [line.strip() for line in stdin.read().splitlines()]
        return [line for line in lines if line] or list(default)
    hint = f" [{default[0]}]" if default else ""
    click.echo(f"Enter prompts, one per line; an empty line starts the run.{hint}", err=True)
    prompts = []
    while True:
        click.echo("> ", nl=False, err=True)
        line = stdin.readline()
        if not line or not line.strip():
            break
        prompts.append(line.strip())
    return prompts or list(default)


def text_or_stdin(text: str, what: str) -> str:
    """``text``, or for ``-`` all of stdin as one text (its lines kept, its final line break dropped):
    an argument is limited by the system (an event of ~128 KiB fails with "Argument list too long")."""
    if text != "-":
        return text
    stdin = sys.stdin
    if stdin.isatty():
        click.echo(f"Enter {what}; end it with Ctrl-D.", err=True)
    raw = getattr(stdin, "buffer", None)  # bytes that are not UTF-8 reach utf8_text's one line, not a traceback
    data = raw.read().decode("utf-8", "surrogateescape") if raw is not None else stdin.read()
    return data.removesuffix("\n").removesuffix("\r")
