"""``run``/``resume`` limits: exit 1 when the session's budget is spent, a sub-agent's is its caller's error
result, resume counts what was spent, and a cost limit with an unpriced model is refused (exit 2).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from otel_agents.cli import cli
from support.in_process import run_in_process
from support.openai_server import OpenAIServer, Reply
from support.stderr_lines import error_lines


@pytest.fixture
def cli_env(home, monkeypatch):
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    monkeypatch.delenv("OTEL_AGENTS_PRICES", raising=False)
    return home


def invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def otel(home, *args, cwd=None):
    """The whole command as a user runs it, in this process (``stderr``/``stdout``/``exit_code`` as click's
    runner names them)."""
    done = run_in_process(*args, home=home, env={"OTEL_TRACES_EXPORTER": "none"}, cwd=cwd or home.parent)
    done.exit_code = done.returncode
    return done


def session_of(stderr: str) -> str:
    return [line for line in stderr.splitlines() if line.startswith("session: ")][-1].split(": ", 1)[1]


def llm_records(home, sid):
    path = home / "billing.jsonl"
    rows = [orjson.loads(line) for line in path.read_bytes().splitlines()] if path.exists() else []
    return [r for r in rows if r["session_id"] == sid and r["type"] == "llm"]


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


def test_a_sub_agent_budget_from_a_script_is_its_callers_error_result(cli_env, tmp_path):
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


def test_with_otel_sdk_disabled_the_run_is_still_billed_and_resume_counts_it(cli_env):
    # OTEL_SDK_DISABLED turned the spans off, and with them the ledger and the tree: the money was
    # spent, never billed, and a resume under the same limit ran on.
    first = run_in_process("run", "--max-cost-usd", "0.0006", home=cli_env,
                           env={"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "none"}, cwd=cli_env.parent)
    assert first.returncode == 1, first.stderr
    sid = session_of(first.stderr)
    spent = sum(r["cost_usd"] or 0.0 for r in llm_records(cli_env, sid))
    assert spent >= 0.0006
    assert invoke("sessions", "verify", sid).exit_code == 0
    again = run_in_process("resume", sid, "more", "--max-cost-usd", "0.0006", home=cli_env,
                           env={"OTEL_SDK_DISABLED": "true"}, cwd=cli_env.parent)
    assert again.returncode == 1
    assert "budget exhausted for session" in again.stderr
    assert sum(r["cost_usd"] or 0.0 for r in llm_records(cli_env, sid)) == spent  # nothing more was spent


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
    ({"max_tokens": True}, "agent_budgets.Worker: budget max_tokens: must be an integer, not a boolean"),
    ({"max_cost_usd": float("nan")}, "agent_budgets.Worker: budget max_cost_usd: must be a number, not NaN"),
    ({"max_cost_usd": "0.5"}, "agent_budgets.Worker: budget max_cost_usd: must be a number, not a string"),
    ({"max_cost_usd": float("inf")}, "agent_budgets.Worker: budget max_cost_usd: must be a finite number of US dollars"),
])
def test_a_bad_budget_in_a_script_is_one_usage_line(cli_env, tmp_path, budget, message):
    script = tmp_path / "bad.json"
    script.write_text(json.dumps({"name": "bad-budget", "agents": {"main": ["hi"]}, "agent_budgets": {"Worker": budget}}))
    result = CliRunner().invoke(cli, ["run", "--script", str(script), "hi"])
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_resume_carries_the_last_runs_limits_on_with_its_own_options_on_top(cli_env):
    first = otel(cli_env, "run", "--max-llm-calls", "5")
    assert first.exit_code == 1
    sid = session_of(first.stderr)
    meta = json.loads((cli_env / "sessions" / sid / "meta.json").read_text())
    assert json.loads(meta["last_run"]["budget"]) == {"max_llm_calls": 5}

    # No option given: the run's limit is still in force, counting what the session spent.
    again = otel(cli_env, "resume", sid, "carry on")
    assert again.exit_code == 1
    assert error_lines(again.stderr) == ["error: budget exhausted for session: 5 of 5 LLM calls made"]
    assert len(llm_records(cli_env, sid)) == 5

    # Another kind of limit given: on top of the carried one, which still stops the run.
    tokens = otel(cli_env, "resume", sid, "carry on", "--max-tokens", "1000000")
    assert error_lines(tokens.stderr) == ["error: budget exhausted for session: 5 of 5 LLM calls made"]
    meta = json.loads((cli_env / "sessions" / sid / "meta.json").read_text())
    assert json.loads(meta["last_run"]["budget"]) == {"max_llm_calls": 5, "max_tokens": 1000000}

    # --budget-scope run: the carried limit counts this command's attempts only, as before.
    scoped = otel(cli_env, "resume", sid, "just this", "--budget-scope", "run")
    made = len(llm_records(cli_env, sid)) - 5
    assert 1 <= made <= 5, scoped.stderr
    assert scoped.exit_code == (1 if made == 5 else 0)


def test_a_limit_given_for_one_run_is_not_carried_to_the_next(cli_env):
    sid = session_of(otel(cli_env, "run", "--max-llm-calls", "50", "hello").stderr)
    scoped = otel(cli_env, "resume", sid, "just this", "--max-llm-calls", "1", "--budget-scope", "run")
    assert scoped.exit_code in (0, 1), scoped.stderr  # one call: answered, or stopped by the limit of 1
    meta = json.loads((cli_env / "sessions" / sid / "meta.json").read_text())
    assert json.loads(meta["last_run"]["budget"]) == {"max_llm_calls": 1}  # in force during that run
    # The next resume has the session's limit again (50), counting what the session spent; the run's
    # own limit of 1 would have stopped it before any call ("2 of 1 LLM calls made").
    before = len(llm_records(cli_env, sid))
    plain = otel(cli_env, "resume", sid, "carry on")
    assert plain.exit_code == 0, plain.stderr
    assert len(llm_records(cli_env, sid)) > before
    meta = json.loads((cli_env / "sessions" / sid / "meta.json").read_text())
    assert json.loads(meta["last_run"]["budget"]) == {"max_llm_calls": 50}


def test_a_carried_limit_that_is_not_json_is_one_usage_line(cli_env):
    sid = session_of(otel(cli_env, "run", "--max-llm-calls", "50", "hello").stderr)
    meta_path = cli_env / "sessions" / sid / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["last_run"]["budget"] = "{not json"
    meta_path.write_text(json.dumps(meta))
    billed = len(llm_records(cli_env, sid))
    done = otel(cli_env, "resume", sid, "carry on")
    assert done.exit_code == 2
    assert done.stderr.strip().splitlines()[-1] == "Error: the last run: its budget is not JSON"
    assert "Traceback" not in done.stderr
    assert len(llm_records(cli_env, sid)) == billed


SUB_AGENT_AGAIN = {
    "name": "budgeted-again",
    "agents": {
        "main": [{"tool_calls": [{"name": "task", "arguments": {"name": "Worker", "user_prompt": "work"}}]},
                 "The worker stopped early.",
                 {"tool_calls": [{"name": "discuss", "arguments": {"speakers": ["Worker"], "prompt": "again"}}]},
                 "The worker is still out.",
                 {"tool_calls": [{"name": "discuss", "arguments": {"speakers": ["Worker"], "prompt": "again"}}]},
                 "The worker spoke."],
        "Worker": [{"tool_calls": [{"name": "task", "arguments": {"name": "Helper"}}],
                    "usage": {"input_tokens": 30, "output_tokens": 5}},
                   {"text": "back at work", "usage": {"input_tokens": 3, "output_tokens": 2}}],
    },
    "agent_budgets": {"Worker": {"max_tokens": 20}},
}


def test_a_sub_agent_budget_spent_in_run_1_stays_spent_after_resume(cli_env, tmp_path):
    script = tmp_path / "again.json"
    script.write_text(json.dumps(SUB_AGENT_AGAIN))
    first = otel(cli_env, "run", "--script", str(script), "go", cwd=tmp_path)
    assert first.stdout == "The worker stopped early.\n", first.stderr
    sid = session_of(first.stderr)
    assert [r["agent_name"] for r in llm_records(cli_env, sid)] == ["main", "Worker", "main"]

    # A new process: the Worker's budget counts the 35 tokens it spent in run 1 (the tree's and the ledger's).
    again = otel(cli_env, "resume", sid, "ask the worker again", cwd=tmp_path)
    assert again.exit_code == 0, again.stderr
    assert again.stdout == "The worker is still out.\n"
    assert "ERR budget exhausted for Worker: 35 of 20 tokens spent" in again.stderr
    assert [r["agent_name"] for r in llm_records(cli_env, sid)] == ["main", "Worker", "main", "main", "main"]
    worker_tokens = sum(r["tokens"]["input"] + r["tokens"]["output"] for r in llm_records(cli_env, sid)
                        if r["agent_name"] == "Worker")
    assert worker_tokens == 35

    # --budget-scope run: this command's spending only, so the Worker answers.
    scoped = otel(cli_env, "resume", sid, "once more", "--budget-scope", "run", cwd=tmp_path)
    assert scoped.exit_code == 0, scoped.stderr
    assert scoped.stdout == "The worker spoke.\n"
    assert "budget exhausted" not in scoped.stderr
    assert [r["agent_name"] for r in llm_records(cli_env, sid)][5:] == ["main", "Worker", "main"]


def test_budget_warnings_and_exhaustion_are_host_notices_never_sent_to_the_model(cli_env, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # the process inherits it
    with OpenAIServer() as server:
        # 20 tokens a call: the 4th call takes both limits to 80 % (80 of 100 tokens, 4 of 5 calls),
        # the 5th spends the token limit, and the 6th prompt's attempt is refused.
        server.plan(*[Reply(content=f"Answer {i}.", prompt_tokens=15, completion_tokens=5) for i in range(1, 7)])
        result = otel(cli_env, "run", "--model", "openai/x", "--api-base", server.api_base,
                      "--max-tokens", "100", "--max-llm-calls", "5", "p1", "p2", "p3", "p4", "p5", "p6")
        bodies = server.bodies
    assert result.exit_code == 1, result.stderr
    assert error_lines(result.stderr) == ["error: budget exhausted for session: 100 of 100 tokens spent"]
    assert len(bodies) == 5
    session_dir = cli_env / "sessions" / session_of(result.stderr)
    records = [json.loads(x) for x in (session_dir / "events.jsonl").read_text().splitlines()]
    notices = [r for r in records if r["event_type"] == "host_notice"]
    assert [(n["notice"], n["content"]) for n in notices] == [
        ("budget_warning", "budget warning for session: 80 of 100 tokens spent (80% of the limit)"),
        ("budget_warning", "budget warning for session: 4 of 5 LLM calls made (80% of the limit)"),
        ("budget", "budget exhausted for session: 100 of 100 tokens spent"),
    ]
    # The user is told at 80 %, on the console, as it happens (the README's promise); the model never is.
    warned = [line.split(": WRN ", 1)[1] for line in result.stderr.splitlines() if ": WRN budget warning" in line]
    assert warned == [n["content"] for n in notices[:2]], result.stderr
    # Each on the span that caused it: the 4th attempt (after the reply it paid for), the refused turn.
    journal = [json.loads(x) for x in (session_dir / "spans.jsonl").read_text().splitlines()]
    starts = {x["start"]: x for x in journal if "start" in x}
    replies = [r for r in records if r["event_type"] == "transcript_entry" and r.get("role") == "assistant"]
    assert notices[0]["span_id"] == notices[1]["span_id"] == replies[3]["span_id"]
    assert records.index(notices[0]) == records.index(replies[3]) + 1
    refused = starts[notices[2]["span_id"]]
    assert refused["name"] == "turn" and notices[2]["message_id"] > replies[4]["message_id"]
    # No model request carries them, not even the one after the warnings.
    sent = json.dumps([body["messages"] for body in bodies])
    assert "budget" not in sent
    view = invoke("view", str(session_dir), "perspective", "main")
    host_lines = [line for line in view.stdout.splitlines() if "[Host]" in line]
    assert len(host_lines) == 3 and all(line.endswith("(not sent to the model)") for line in host_lines)


def test_a_cli_run_shows_a_budget_warning_as_one_console_line(tmp_path):
    # A real process: the Python API logs the warning too (budget.LOGGER), and logging's last resort
    # would print it beside the console's line were a CLI run to log it (in pytest, its handlers catch it).
    script = tmp_path / "chatty.json"
    script.write_text(json.dumps({"name": "chatty", "agents": {"main": ["one", "two", "three", "four"]}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_AGENTS_HOME=str(tmp_path / "home"), OTEL_TRACES_EXPORTER="none",
               PYTHONPATH=str(Path(__file__).resolve().parents[2]), LITELLM_LOCAL_MODEL_COST_MAP="True")
    done = subprocess.run([sys.executable, "-m", "otel_agents", "run", "--script", str(script), "--max-llm-calls",
                           "5", "a", "b", "c", "d"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    told = [line for line in done.stderr.splitlines() if "budget warning" in line]
    assert len(told) == 1 and told[0].endswith(": WRN budget warning for session: 4 of 5 LLM calls made "
                                               "(80% of the limit)"), done.stderr


@pytest.mark.parametrize("stream", [False, True])
def test_a_reply_without_usage_is_estimated_so_limits_still_stop(cli_env, monkeypatch, stream):
    """A server that sends no ``usage`` was billed 0 tokens at $0.00, and no limit ever stopped; it is now
    litellm's estimate, streamed or not, marked ``usage_estimated`` on the ledger line."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer(default_reply=Reply(content="an answer of several words", send_usage=False)) as server:
        result = otel(cli_env, "run", *(["--stream"] if stream else []), "--max-tokens", "5",
                      "--model", "openai/gpt-4o-mini", "--api-base", server.api_base,
                      "a long prompt of many words", "p2", "p3", "p4")
        assert result.exit_code == 1, result.stderr
        assert error_lines(result.stderr)[0].startswith("error: budget exhausted for session: ")
        assert len(server.requests) == 1
    (record,) = llm_records(cli_env, session_of(result.stderr))
    assert record["tokens"]["input"] > 0 and record["tokens"]["output"] > 0
    assert record["cost_usd"] > 0 and record["price_source"] == "litellm"
    assert record["usage_estimated"] is True


def test_a_cost_limit_stops_a_reply_without_usage(cli_env, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer(default_reply=Reply(content="an answer", send_usage=False)) as server:
        result = otel(cli_env, "run", "--max-cost-usd", "0.000001", "--model", "openai/gpt-4o-mini",
                      "--api-base", server.api_base, "a long prompt", "p2", "p3", "p4")
        assert result.exit_code == 1, result.stderr
        assert len(server.requests) == 1


def test_a_reply_with_usage_is_not_marked_estimated(cli_env, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as server:
        server.plan(Reply(content="counted", prompt_tokens=10, completion_tokens=2))
        result = otel(cli_env, "run", "--model", "openai/gpt-4o-mini", "--api-base", server.api_base, "hi")
        assert result.exit_code == 0, result.stderr
    (record,) = llm_records(cli_env, session_of(result.stderr))
    assert record["tokens"]["input"] == 10 and "usage_estimated" not in record


def test_a_retry_the_budget_refuses_is_not_announced(cli_env, monkeypatch):
    """With one call allowed, a failed attempt said "retrying in 0.35s", then the retry was refused."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with OpenAIServer() as server:
        server.plan(Reply.error(500), Reply(content="never asked for"))
        result = otel(cli_env, "run", "--model", "openai/x", "--api-base", server.api_base, "--max-attempts", "3",
                      "--max-llm-calls", "1", "hi")
        assert len(server.requests) == 1
    assert result.exit_code == 1, result.stderr
    assert "retrying" not in result.stderr, result.stderr
    assert "attempt 1 of openai/x failed (InternalServerError); the budget allows no retry" in result.stderr
    assert error_lines(result.stderr) == ["error: budget exhausted for session: 1 of 1 LLM calls made"]
    records = [json.loads(x) for x in (cli_env / "sessions" / session_of(result.stderr) / "events.jsonl")
               .read_text().splitlines()]
    notices = [r["notice"] for r in records if r["event_type"] == "host_notice"]
    assert "retry" not in notices and "budget" in notices
