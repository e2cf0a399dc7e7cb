"""docs/budgets.md's `sessions show` example of a spent budget is what the documented command gives today."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
DOC = (REPOSITORY / "docs" / "budgets.md").read_text()


def otel_agents(home: Path, argv: list[str]) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_EXPORTER_OTLP", "OTEL_AGENTS_"))}
    environment.update({"OTEL_AGENTS_HOME": str(home), "OTEL_TRACES_EXPORTER": "none", "HOME": str(home)})
    return subprocess.run([sys.executable, "-m", "otel_agents", *argv], capture_output=True, text=True,
                          env=environment, timeout=120, cwd=home)


def test_the_budget_exhausted_turn_line_is_the_documented_runs(tmp_path):
    (line,) = [line for line in DOC.splitlines() if "BUDGET EXHAUSTED" in line]
    assert "--max-cost-usd 0.0006" in DOC  # the doc names the command the line comes from
    run = otel_agents(tmp_path, ["run", "--max-cost-usd", "0.0006", "Create Jack and Jill for a cafe discussion"])
    assert run.returncode == 1, run.stderr
    (session,) = os.listdir(tmp_path / "sessions")
    shown = otel_agents(tmp_path, ["sessions", "show", session]).stdout
    duration = re.compile(r" +\d+ms")  # the only part that differs from run to run (its width too: 8ms, 12ms)
    assert duration.sub(" Nms", line) in duration.sub(" Nms", shown).splitlines(), shown
