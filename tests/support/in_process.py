"""Run an ``otel-agents`` command in the test's own process, answered as ``subprocess.run`` would answer.

A command that calls a model imports litellm, which costs a new process 5-7 s of CPU; in the
test's process it is imported once. Use a real process instead where the process itself is
under test: signals, kills, exit at interpreter shutdown, concurrency, terminals and pipes, or
an app module whose source the test changes between commands (a module is imported once).
"""

from __future__ import annotations

import os
import subprocess
import traceback
from pathlib import Path
from typing import Mapping

from click.testing import CliRunner

from otel_agents.cli import cli


def run_in_process(*args: str, home: Path, env: Mapping[str, str] | None = None, stdin: str | None = None,
                   cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``otel-agents ARGS`` with ``OTEL_AGENTS_HOME=home``, no ``OTEL_*`` variable of the test
    runner's, the bundled price map and ``env`` on top, in ``cwd``; stdout and stderr apart.

    An exception the command did not turn into an exit code is exit 1 with its traceback on
    stderr, as a process would show it.
    """
    environment: dict[str, str | None] = {k: None for k in os.environ if k.startswith("OTEL_")}
    environment.update(OTEL_AGENTS_HOME=str(home), LITELLM_LOCAL_MODEL_COST_MAP="True", **(env or {}))
    before = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        result = CliRunner().invoke(cli, list(args), env=environment, input=stdin)
    finally:
        os.chdir(before)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
    return subprocess.CompletedProcess(["otel-agents", *args], result.exit_code, result.stdout, stderr)
