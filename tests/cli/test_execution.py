"""cli/execution: however a command ends, its tracing is shut down; what --stream puts on stdout.

A command that configured tracing and then refused (exit 2) or failed (exit 1) must
not leave the metric reader's thread behind: in a process that goes on (the test
suite, a program calling the commands) it would export into whatever directory is
current a minute later. ``--otlp-file`` gives every command here a metric reader.
"""

from __future__ import annotations

import json
import threading

import click
import pytest
from click.testing import CliRunner

from otel_agents.cli import cli
from otel_agents.cli.execution import command_tracing

READER = "OtelPeriodicExportingMetricReader"  # the SDK's name for a periodic reader's thread


def readers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == READER and t.is_alive()}


@pytest.fixture
def cli_env(home, monkeypatch):
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    for name in ("OTEL_AGENTS_PRICES", "OTEL_METRICS_EXPORTER"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def earlier():
    """Readers this process had before the test (none, unless another test left one)."""
    return readers()


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), input="")


@pytest.mark.parametrize("ending", [RuntimeError("a bug"), click.UsageError("refused"), KeyboardInterrupt()])
def test_the_block_shuts_the_tracing_down_however_it_ends(cli_env, earlier, tmp_path, ending):
    with pytest.raises(type(ending)):
        with command_tracing(tmp_path / "spans.jsonl") as tracing:
            assert len(readers() - earlier) == 1  # what --otlp-file starts: the metrics file's reader
            with tracing.telemetry.tracer.start_as_current_span("chat m"):
                pass
            raise ending
    assert readers() == earlier
    assert (tmp_path / "spans.jsonl").stat().st_size > 0


def test_a_bad_setting_is_a_usage_error_and_starts_nothing(cli_env, earlier, tmp_path, monkeypatch):
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "carrier-pigeon")
    with pytest.raises(click.UsageError, match="OTEL_TRACES_EXPORTER"):
        with command_tracing(tmp_path / "spans.jsonl"):
            pass
    assert readers() == earlier


def _demo(otlp: str) -> str:
    result = invoke("run", "Create Jack and Jill for a cafe discussion", "--otlp-file", otlp)
    assert result.exit_code == 0, result.stderr
    return result.stderr.splitlines()[-1].removeprefix("session: ")


def test_refusals_after_the_tracing_started_leave_no_thread(cli_env, earlier, tmp_path):
    otlp = str(tmp_path / "spans.jsonl")
    session_id = _demo(otlp)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    refusals = [  # (argv, environment, what the one line says): each after configure, before any call
        (["run", "hi", "--billing-file", str(blocker / "billing.jsonl")], {}, "billing.jsonl"),
        (["run", "hi", "--model", "openai/no-such-model", "--max-cost-usd", "1"], {}, "--allow-unpriced"),
        (["run", "hi"], {"OTEL_AGENTS_PRICES": str(tmp_path / "none.json")}, "none.json"),
        (["send", session_id, "hello", "--to", "Nobody"], {}, "has no agent 'Nobody'"),
        (["resume", session_id, "again", "--model", "openai/no-such-model", "--max-cost-usd", "1"], {},
         "--allow-unpriced"),
    ]
    for argv, env, said in refusals:
        result = CliRunner().invoke(cli, [*argv, "--otlp-file", otlp], input="", env=env)
        assert result.exit_code == 2, (argv, result.output)
        assert said in result.stderr, (argv, result.stderr)
        assert readers() == earlier, argv


def test_a_failed_run_leaves_no_thread(cli_env, earlier, tmp_path):
    # Nothing listens on port 9 here: the one attempt fails at once, and the run ends with exit 1.
    result = invoke("run", "hi", "--model", "openai/gpt-4o-mini", "--api-base", "http://127.0.0.1:9/v1",
                    "--max-attempts", "1", "--otlp-file", str(tmp_path / "spans.jsonl"))
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[-1].startswith("session: ")
    assert readers() == earlier


def test_stream_starts_each_root_turn_on_a_line_of_its_own(cli_env, tmp_path):
    # Text before a tool call and the turn after it are separate utterances: not run together.
    script = tmp_path / "st.json"
    task = {"name": "task", "arguments": {"name": "Bob", "user_prompt": "hi"}}
    script.write_text(json.dumps({"name": "st", "agents": {
        "main": [{"text": "Let me ask.", "tool_calls": [task]}, "Final root words.", "Second run."],
        "Bob": ["hi"]}}))
    streamed = invoke("run", "--stream", "--script", str(script), "go", "again")
    assert streamed.exit_code == 0, streamed.stderr
    assert streamed.stdout == "Let me ask.\nFinal root words.\nSecond run.\n"
    plain = invoke("run", "--script", str(script), "go", "again")  # unchanged: each run's answer, one line
    assert plain.exit_code == 0, plain.stderr
    assert plain.stdout == "Final root words.\nSecond run.\n"
