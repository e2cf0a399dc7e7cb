"""The ``otel-agents`` command. Commands stay thin: they parse, call a layer, print.

Each command group lives in its own module; none imports litellm at import time,
so commands that call no LLM start fast.
"""

from __future__ import annotations

import os
import sys

import click

from otel_agents.version import __version__
from otel_agents.cli.billing import billing
from otel_agents.cli.collect import collect
from otel_agents.cli.export import export
from otel_agents.cli.fork import fork
from otel_agents.cli.importer import import_traces
from otel_agents.cli.replay import replay
from otel_agents.cli.resume import resume
from otel_agents.cli.run import run
from otel_agents.cli.send import send
from otel_agents.cli import stdout
from otel_agents.cli.sessions import sessions
from otel_agents.cli.ui import ui
from otel_agents.cli.view import view


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="otel-agents")
def cli() -> None:
    """A multi-agent LLM runtime in which everything that happens is an OpenTelemetry span."""


for command in (run, resume, fork, send, replay, sessions, billing, view, import_traces, export, collect, ui):
    cli.add_command(command)


def main() -> None:
    stdout.guard()
    try:
        cli(prog_name="otel-agents")
        code: int | None = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except stdout.StdoutLost:  # said once, centrally, for every command (cli/stdout.py)
        code = None
    code = stdout.settle(code)
    # Interpreter teardown after litellm costs seconds; every file we write is
    # closed and synced by now, so a command that loaded it leaves at once.
    if "litellm" in sys.modules:
        if sys.stderr is not None:
            sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
