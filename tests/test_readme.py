"""The README's steps hold: its import example names a file that exists after them, its set-up commands are the ones we keep."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
README = (REPOSITORY / "README.md").read_text()


def commands(prefix: str) -> list[list[str]]:
    """Every ``otel-agents <prefix> ...`` line of the README's shell blocks, as argv (comments cut)."""
    out = []
    for block in re.findall(r"```sh\n(.*?)```", README, re.S):
        for line in block.splitlines():
            argv = shlex.split(line, comments=True)
            if "&&" in argv:
                argv = argv[argv.index("&&") + 1:]
            if argv[:2] == ["otel-agents", prefix]:
                out.append(argv[1:])
    return out


def otel_agents(home: Path, argv: list[str]) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_EXPORTER_OTLP", "OTEL_AGENTS_"))}
    environment.update({"OTEL_AGENTS_HOME": str(home), "OTEL_TRACES_EXPORTER": "none"})
    return subprocess.run([sys.executable, "-m", "otel_agents", *argv], capture_output=True, text=True,
                          env=environment, timeout=120, cwd=REPOSITORY)  # a user of the clone stands in it


def test_the_two_set_up_commands_are_kept():
    assert "pip install -e '.[test]' && otel-agents run \"Create Jack and Jill for a cafe discussion\"" in README
    assert "pip install -e '.[test]' && pytest" in README


def test_the_import_example_imports_after_the_set_up_demo(tmp_path):
    home = tmp_path / "home"
    (setup,) = [argv for argv in commands("run") if argv[1:] == ["Create Jack and Jill for a cafe discussion"]][:1]
    assert otel_agents(home, setup).returncode == 0
    (example,) = commands("import")
    files = [arg for arg in example[1:] if not arg.startswith("-")]
    assert files and all((REPOSITORY / name).is_file() for name in files), files
    done = otel_agents(home, example)
    assert done.returncode == 0, done.stderr
    assert "created" in done.stdout and "1 run(s)" in done.stdout
