"""Shared by the reliability tests: run the real CLI, read back what it saved.

The readers here parse the files themselves (json, gzip) rather than through the
persistence layer, so a test checks what is on disk, not what our loader thinks.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from click.testing import CliRunner, Result

from otel_agents.cli import cli

MODEL = "openai/test-model"


def invoke(args: list[str], **kwargs: Any) -> Result:
    """The real ``otel-agents`` command group, in process (litellm is imported once per test session)."""
    return CliRunner().invoke(cli, args, **kwargs)


def session_id_of(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("session: ")]
    assert len(lines) == 1, stderr
    return lines[0].split(": ", 1)[1]


def session_dir(home: Path, session_id: str) -> Path:
    return Path(home) / "sessions" / session_id


def load_tree(home: Path, session_id: str) -> dict[str, Any]:
    payload = json.loads(gzip.decompress((session_dir(home, session_id) / "tree.json.gz").read_bytes()))
    assert payload["version"] == 1
    return payload["session"]


def walk_ops(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every operation under a session, run or turn node, child sessions included, in tree order."""
    for op in node.get("ops", []):
        yield from _walk_op(op)
    for run in node.get("runs", []):
        yield from walk_ops(run)
    for turn in node.get("turns", []):
        yield from walk_ops(turn)


def _walk_op(op: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield op
    for child in op.get("ops", []):
        yield from _walk_op(child)
    if op.get("session") is not None:
        yield from walk_ops(op["session"])


def llm_ops(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [op for op in walk_ops(node) if op["kind"] == "llm"]


def ledger_lines(billing_file: Path) -> list[bytes]:
    return billing_file.read_bytes().splitlines(keepends=True) if billing_file.exists() else []


def ledger(billing_file: Path, session_id: str | None = None) -> list[dict[str, Any]]:
    """Every ledger record; each line must be whole JSON ending in a newline (no torn line anywhere)."""
    records = []
    for number, line in enumerate(ledger_lines(billing_file), 1):
        assert line.endswith(b"\n"), f"{billing_file}:{number} is torn (no newline): {line[:80]!r}"
        record = json.loads(line)  # raises on a torn or glued line
        assert isinstance(record, dict) and record.get("record_id"), line[:80]
        records.append(record)
    if session_id is not None:
        records = [r for r in records if r["session_id"] == session_id]
    return records


def event_records(home: Path, session_id: str) -> list[dict[str, Any]]:
    path = session_dir(home, session_id) / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def verify(session_id: str, *extra: str) -> Result:
    return invoke(["sessions", "verify", session_id, *extra])


def assert_clean_error(result: Result, exit_code: int = 2) -> None:
    """A refusal: the exit code, one ``Error:`` line on stderr, no traceback anywhere."""
    assert result.exit_code == exit_code, (result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert "Error:" in result.stderr, result.stderr


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` (relative path -> sha256), to prove a command changed nothing."""
    out = {}
    root = Path(root)
    if not root.exists():
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = "-> " + os.readlink(path)
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        for name in dirnames:
            out.setdefault(str((Path(dirpath) / name).relative_to(root)) + "/", "dir")
    return out


@dataclass
class ScriptBuilder:
    """A scripted-model session written as a script file (docs/scripts.md)."""

    name: str
    agents: dict[str, list[Any]]
    prompts: list[str] | None = None

    def write(self, path: Path) -> Path:
        doc: dict[str, Any] = {"name": self.name, "agents": self.agents}
        if self.prompts:
            doc["prompts"] = self.prompts
        path.write_text(json.dumps(doc))
        return path


def subprocess_env(home: Path) -> dict[str, str]:
    """A real ``otel-agents`` process: isolated home, nothing exported, bundled price map."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_EXPORTER_OTLP")}
    env.pop("OTEL_SDK_DISABLED", None)
    env.pop("OTEL_AGENTS_PRICES", None)
    env.update(OTEL_TRACES_EXPORTER="none", OTEL_AGENTS_HOME=str(home), LITELLM_LOCAL_MODEL_COST_MAP="True",
               PYTHONUNBUFFERED="1")
    return env


def cli_command() -> list[str]:
    return [sys.executable, "-m", "otel_agents"]
