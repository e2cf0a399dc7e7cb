"""Input a session could not save (text that is not UTF-8, integers past 64 bits, NaN and infinity)
is refused with one line and exit 2 before any model call: nothing is spent, nothing is written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from otel_agents.cli import cli
from otel_agents.llm.model_settings import ModelSettings
from otel_agents.llm.scripts import ScriptError, parse_script

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cli_env(home, monkeypatch):
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    return home


def error_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("Error")]


def assert_refused(result, home: Path, *, says: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)  # no traceback
    (line,) = error_lines(result)
    assert says in line, line
    assert result.stdout == ""  # no model answered
    assert not home.exists() or not any(home.rglob("*.jsonl"))  # no session, no ledger record


def test_a_prompt_that_is_not_utf8_is_refused_before_the_model_is_called(cli_env):
    # What Python makes of the argument bytes b"caf\xe9" (Latin-1) on a UTF-8 system.
    result = CliRunner().invoke(cli, ["run", "hello", "caf\udce9"])
    assert_refused(result, cli_env, says="prompt 2 is not valid UTF-8 text (byte 0xe9 at position 3)")


def test_a_stdin_line_that_is_not_utf8_is_refused_in_a_real_process(home):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_AGENTS_HOME=str(home), OTEL_TRACES_EXPORTER="none", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "otel_agents", "run"], input=b"fine\na\xffb\n", env=env,
                          capture_output=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode().splitlines()[-1] == "Error: prompt 2 is not valid UTF-8 text (byte 0xff at position 1)"
    assert done.stdout == b""
    assert not home.exists() or not any(home.rglob("*.jsonl"))


def test_an_outside_events_agent_or_sender_that_is_not_utf8_is_refused(cli_env):
    first = CliRunner().invoke(cli, ["run", "--script", "jack-and-jill", "hi"])
    assert first.exit_code == 0, first.output
    session_id = first.stderr.strip().splitlines()[-1].split(": ", 1)[1]
    before = {p: p.read_bytes() for p in cli_env.rglob("*") if p.is_file()}
    for extra, says in ((["--to", "J\udcffck"], "--to is not valid UTF-8 text (byte 0xff"),
                        (["--to", "main", "--source", "cr\udce9n"], "Invalid value for '--source'")):
        result = CliRunner().invoke(cli, ["send", session_id, "news", *extra])
        assert result.exit_code == 2, result.output
        (line,) = error_lines(result)
        assert says in line
    assert {p: p.read_bytes() for p in cli_env.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("argv, says", [
    (["--max-cost-usd", "nan"], "'--max-cost-usd': 'nan' is not a finite number"),
    (["--max-cost-usd", "inf"], "'--max-cost-usd': 'inf' is not a finite number"),
    (["--evict-idle", "inf"], "'--evict-idle': 'inf' is not a finite number"),
    (["--evict-idle", "nan"], "'--evict-idle': 'nan' is not a finite number"),
    (["--watch", "f", "--watch-for", "nan"], "'--watch-for': 'nan' is not a finite number"),
    (["--timeout", "inf"], "'--timeout': 'inf' is not a finite number"),
    (["--param", "seed=99999999999999999999999"], "request parameter seed: Input should be less than"),
    (["--param", "max_tokens=9223372036854775808"], "request parameter max_tokens: Input should be less than"),
    (["--param", "stop="], "request parameter stop: a stop sequence may not be empty"),
    (["--otlp-file="], "'--otlp-file': '' is not a file name"),
    (["--billing-file="], "'--billing-file': '' is not a file name"),
])
def test_values_a_session_could_not_use_or_save_are_usage_errors(cli_env, argv, says):
    assert_refused(CliRunner().invoke(cli, ["run", *argv, "hi"]), cli_env, says=says)


def test_collects_durations_must_be_finite(cli_env):
    result = CliRunner().invoke(cli, ["collect", "--settle", "nan"])
    assert result.exit_code == 2 and "'--settle': 'nan' is not a finite number" in result.stderr


def test_64_bit_request_parameters_are_the_limit():
    assert ModelSettings(seed=2**63 - 1, max_tokens=2**63 - 1).seed == 2**63 - 1
    assert ModelSettings(seed=-(2**63)).seed == -(2**63)


def test_a_scripts_usage_past_64_bits_is_refused():
    script = {"name": "big", "agents": {"main": [{"text": "hi", "usage": {"input_tokens": 2**63}}]}}
    with pytest.raises(ScriptError, match="non-negative integers below 2\\*\\*63"):
        parse_script(script, "big.json")
    script["agents"]["main"][0]["usage"]["input_tokens"] = 2**63 - 1
    parse_script(script, "big.json")


@pytest.mark.parametrize("argv, says", [
    (["billing", "summary", "--billing-file", ""], "'--billing-file': '' is not a path (give . for this directory)"),
    (["sessions", "list", "--sessions-dir", ""], "'--sessions-dir': '' is not a path (give . for this directory)"),
    (["import", ""], "'' is not a file name"),
])
def test_an_empty_path_is_refused_not_read_as_the_working_directory(cli_env, argv, says):
    """Path('') is '.': `billing summary --billing-file ""` read every *.jsonl of the working directory as a ledger."""
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 2 and says in result.stderr, result.output
    assert result.stdout == ""


@pytest.mark.parametrize("option", ["--http", "--grpc"])
def test_collects_addresses_must_not_be_empty(cli_env, option):
    """`--grpc ""` was as if not given and `--http ""` as off, without a word; `--http off` says off."""
    result = CliRunner().invoke(cli, ["collect", option, ""])
    assert result.exit_code == 2 and f"'{option}': must not be empty" in result.stderr, result.output
