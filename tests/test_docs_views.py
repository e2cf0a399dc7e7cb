"""docs/views.md's examples are what `otel-agents view` prints for the README's demo session today."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
DOC = (REPOSITORY / "docs" / "views.md").read_text()
# An example is a "`otel-agents view SESSION ...`:" line (or "The end of `...`, ...:") and the block after it.
EXAMPLE = re.compile(r"(The end of )?`(otel-agents view SESSION [^`]*)`(?:[^`]|`[^`]*`)*?:\n\n```\n(.*?)```", re.S)
SPAN = re.compile(r"\b[0-9a-f]{16}\b")
TS = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+Z")


def otel_agents(home: Path, argv: list[str]) -> str:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_EXPORTER_OTLP", "OTEL_AGENTS_"))}
    environment.update({"OTEL_AGENTS_HOME": str(home), "OTEL_TRACES_EXPORTER": "none", "HOME": str(home)})
    done = subprocess.run([sys.executable, "-m", "otel_agents", *argv], capture_output=True, text=True,
                          env=environment, timeout=120, cwd=home)
    assert done.returncode == 0, done.stderr
    return done.stdout


def normal(text: str) -> str:
    """Span ids and times differ from run to run; nothing else may."""
    return TS.sub("TS", SPAN.sub("SPAN", text)).rstrip("\n")


def test_every_view_example_is_the_demo_sessions_output(tmp_path):
    otel_agents(tmp_path, ["run", "Create Jack and Jill for a cafe discussion"])
    (session,) = os.listdir(tmp_path / "sessions")
    examples = EXAMPLE.findall(DOC)
    assert len(examples) >= 10, examples
    for tail, command, block in examples:
        argv = shlex.split(command)[1:]
        argv[1] = session
        if argv[2] == "context":  # span ids are random: ask by the answer's message id, as the doc offers
            argv[3] = re.search(r"`context (msg_\d+)`", DOC).group(1)
        printed = normal(otel_agents(tmp_path, argv))
        if tail:
            assert printed.endswith(normal(block)), (command, printed)
        else:
            assert printed == normal(block), (command, printed)
