"""``run``/``resume`` limits: exit 1 when the session's budget is spent, a sub-agent's is its caller's error
result, resume counts what was spent, and a cost limit with an unpriced model is refused (exit 2).

Runs that call a model are real ``python -m otel_agents`` processes: litellm's logging worker
outlives an in-process run's event loop and warns on the next one (other tests read stderr whole).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import orjson
import pytest
from click.testing import CliRunner

from otel_agents.cli import cli
from support.openai_server import OpenAIServer, Reply


@pytest.fixture
def cli_env(home, monkeypatch):
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    monkeypatch.delenv("OTEL_AGENTS_PRICES", raising=False)
    return home


def invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def otel(home, *args, cwd=None):
    """A real process, as a user runs it (``stderr``/``stdout``/``exit_code`` as click's runner names them)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_EXPORTER_OTLP")}
    env.update(OTEL_TRACES_EXPORTER="none", OTEL_AGENTS_HOME=str(home))
    env.pop("OTEL_AGENTS_PRICES", None)
    done = subprocess.run([sys.executable, "-m", "otel_agents", *args], capture_output=True, text=True, env=env,
                          cwd=cwd or home.parent, timeout=180)
    done.exit_code = done.returncode
    return done


def session_of(stderr: str) -> str:
    return [line for line in stderr.splitlines() if line.startswith("session: ")][-1].split(": ", 1)[1]


def llm_records(home, sid):
    path = home / "billing.jsonl"
    rows = [orjson.loads(line) for line in path.read_bytes().splitlines()] if path.exists() else []
    return [r for r in rows if r["session_id"] == sid and r["type"] == "llm"]


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def test_a_session_cost_limit_ends_the_demo_with_exit_1_one_line_and_a_mark_in_sessions_show(cli_env):
    limit = 0.0006
    result = otel(cli_env, "run", "--max-cost-usd", str(limit))
    assert result.exit_code == 1, result.stderr
    assert result.stdout == ""
    (line,) = error_lines(result.stderr)
    assert line.startswith("error: budget exhausted for session: $") and line.endswith(" of $0.0006 spent")
    sid = session_of(result.stderr)
    costs = [r["cost_usd"] or 0.0 for r in llm_records(cli_env, sid)]
    assert costs and sum(costs[:-1]) < limit <= sum(costs)  # the last attempt started under the limit
    assert sum(costs) <= limit + costs[-1]
    shown = invoke("sessions", "show", sid)
    assert shown.exit_code == 0
    marked = [line for line in shown.stdout.splitlines() if "BUDGET EXHAUSTED" in line]
    assert len(marked) == 1 and " turn 4 " in marked[0] and "for session: $" in marked[0]


def test_a_sub_agent_budget_from_a_script_is_its_callers_error_result_in_a_real_process(cli_env, tmp_path):
    script = tmp_path / "budgeted.json"
    script.write_text(json.dumps({
        "name": "budgeted-cli",
        "agents": {
            "main": [{"tool_calls": [{"name": "task", "arguments": {"name": "Worker", "user_prompt": "work"}}]},
                     "The worker stopped early."],
            "Worker": [{"tool_calls": [{"name": "task", "arguments": {"name": "Helper"}}],
                        "usage": {"input_tokens": 30, "output_tokens": 5}}, "never said"],
        },
        "agent_budgets": {"Worker": {"max_tokens": 20}},
    }))
    proc = otel(cli_env, "run", "--script", str(script), "go", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "The worker stopped early.\n"
    assert "ERR budget exhausted for Worker: 35 of 20 tokens spent" in proc.stderr
    sid = session_of(proc.stderr)
    events = [orjson.loads(line) for line in (cli_env / "sessions" / sid / "events.jsonl").read_bytes().splitlines()]
    results = [e["content"] for e in events if e.get("role") == "tool" and e.get("name") == "task"]
    # The Worker's own tool call, then its caller's: the Worker's answer is the budget error.
    assert results == ["Created subagent: Helper", "Error: budget exhausted for Worker: 35 of 20 tokens spent"]
    assert [r["agent_name"] for r in llm_records(cli_env, sid)] == ["main", "Worker", "main"]


def test_resume_counts_what_the_session_spent_and_a_higher_limit_carries_on(cli_env):
    first = otel(cli_env, "run", "--max-llm-calls", "5")
    assert first.exit_code == 1
    sid = session_of(first.stderr)
    assert len(llm_records(cli_env, sid)) == 5  # the demo's 429 is one of them

    again = otel(cli_env, "resume", sid, "carry on", "--max-llm-calls", "5")
    assert again.exit_code == 1
    assert error_lines(again.stderr) == ["error: budget exhausted for session: 5 of 5 LLM calls made"]
    assert len(llm_records(cli_env, sid)) == 5  # no attempt was made

    # Counting this command's spending only, one more attempt is made.
    scoped = otel(cli_env, "resume", sid, "just this", "--max-llm-calls", "1", "--budget-scope", "run")
    assert error_lines(scoped.stderr) == ["error: budget exhausted for session: 1 of 1 LLM calls made"]
    assert len(llm_records(cli_env, sid)) == 6

    raised = otel(cli_env, "resume", sid, "carry on", "--max-llm-calls", "100")
    assert raised.exit_code == 0, raised.stderr
    assert raised.stdout.strip()
    assert len(llm_records(cli_env, sid)) > 6


def test_a_cost_limit_with_an_unpriced_model_is_refused_unless_allowed(cli_env, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # the processes inherit it
    with OpenAIServer() as server:
        server.plan(Reply(content="priced at nothing known"))
        refused = otel(cli_env, "run", "--model", "openai/unpriced-local-model", "--api-base", server.api_base,
                       "--max-cost-usd", "1", "hi")
        assert refused.exit_code == 2
        assert refused.stderr.strip().splitlines()[-1] == (
            "Error: a cost limit cannot be kept with unpriced model(s) openai/unpriced-local-model: their cost is "
            "unknown (set a price with OTEL_AGENTS_PRICES, or pass --allow-unpriced)")
        assert "Traceback" not in refused.stderr
        assert server.requests == [] and not (cli_env / "sessions").exists()

        # A token limit needs no price; --allow-unpriced takes the cost limit as given.
        allowed = otel(cli_env, "run", "--model", "openai/unpriced-local-model", "--api-base", server.api_base,
                       "--max-cost-usd", "1", "--allow-unpriced", "hi")
        assert allowed.exit_code == 0, allowed.stderr
        assert allowed.stdout == "priced at nothing known\n"
        assert len(server.requests) == 1


@pytest.mark.parametrize("budget, message", [
    ({"max_cost": 1}, "agent_budgets.Worker: unknown budget key(s) max_cost"),
    ({"max_llm_calls": -1}, "agent_budgets.Worker: budget max_llm_calls: Input should be greater than or equal to 0"),
    ({"max_tokens": True}, "agent_budgets.Worker: budget max_tokens: Value error, must be an integer, not a boolean"),
])
def test_a_bad_budget_in_a_script_is_one_usage_line(cli_env, tmp_path, budget, message):
    script = tmp_path / "bad.json"
    script.write_text(json.dumps({"name": "bad-budget", "agents": {"main": ["hi"]}, "agent_budgets": {"Worker": budget}}))
    result = CliRunner().invoke(cli, ["run", "--script", str(script), "hi"])
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.stderr
