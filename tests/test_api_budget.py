"""Budgets through the public API: ``Agent(budget=)``, ``Session(budget=)`` and ``resume(budget=, budget_scope=)``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = {
    "name": "budget-api",
    "agents": {
        "lead": [
            {"tool_calls": [{"name": "task", "arguments": {"name": "scout", "user_prompt": "look around"}}]},
            "The scout ran out.",
            "second answer",
            "third answer",
        ],
        "scout": [{"tool_calls": [{"name": "task", "arguments": {"name": "helper"}}]}, "never said"],
    },
}


@pytest.fixture
def script(tmp_path) -> Path:
    path = tmp_path / "budget-api.json"
    path.write_text(json.dumps(SCRIPT))
    return path


def test_an_agent_budget_limits_the_sub_agents_of_its_name_and_the_caller_sees_an_error(script):
    from otel_agents import Agent, Budget, BudgetExhausted, Session

    # The script limits the scout by name; the lead's own budget is on the Agent.
    data = dict(SCRIPT, agent_budgets={"scout": {"max_llm_calls": 1}})
    script.write_text(json.dumps(data))
    with Session(Agent("lead", budget=Budget(max_llm_calls=3)), script=script) as session:
        assert session.run_sync("go") == "The scout ran out."
        lead = session.agent("lead")
        results = [m["content"] for m in lead.transcript if m["role"] == "tool"]
        assert results == ["Error: budget exhausted for scout: 1 of 1 LLM calls made"]
        # The lead's 3 calls include the scout's one: its next attempt would be the fourth.
        assert lead.budget_meter.spent.llm_calls == 3
        with pytest.raises(BudgetExhausted, match="budget exhausted for lead: 3 of 3 LLM calls made"):
            session.run_sync("again")


def test_a_cost_limit_with_an_unpriced_model_is_a_value_error_unless_allowed(script):
    from otel_agents import Agent, Budget, Session

    with pytest.raises(ValueError, match="unpriced model.* openai/unpriced-api-model"):
        Session(Agent("lead", model="openai/unpriced-api-model"), budget=Budget(max_cost_usd=1))
    with pytest.raises(ValueError, match="unpriced"):
        Session(Agent("lead", model="openai/unpriced-api-model", budget=Budget(max_cost_usd=1)))
    Session(Agent("lead", model="openai/unpriced-api-model"), budget=Budget(max_cost_usd=1), allow_unpriced=True)
    Session(Agent("lead", model="openai/unpriced-api-model"), budget=Budget(max_tokens=10))  # no price needed


def test_python_resume_counts_what_the_session_spent_unless_scoped_to_the_run(tmp_path, script):
    program = tmp_path / "budgeted.py"
    program.write_text(
        "import json, sys, otel_agents\n"
        "from otel_agents import Agent, Budget, BudgetExhausted, Session\n"
        "home, script = sys.argv[1:3]\n"
        "out = {}\n"
        "def attempt(session, prompt):\n"
        "    try:\n"
        "        return session.run_sync(prompt)\n"
        "    except BudgetExhausted as exc:\n"
        "        return str(exc)\n"
        "with otel_agents.recording(home=home):\n"
        "    with Session(Agent('lead'), script=script) as first:\n"
        "        out['first'] = first.run_sync('go')\n"
        "    sid = first.id\n"
        "    with otel_agents.resume(sid, script=script, budget=Budget(max_llm_calls=4)) as again:\n"
        "        out['again'] = attempt(again, 'more')\n"
        "    with otel_agents.resume(sid, script=script, budget=Budget(max_llm_calls=1), budget_scope='run') as scoped:\n"
        "        out['scoped'] = attempt(scoped, 'more')\n"
        "    with otel_agents.resume(sid, script=script, budget=Budget(max_llm_calls=10)) as raised:\n"
        "        out['raised'] = attempt(raised, 'more')\n"
        "print(json.dumps(out))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_AGENTS_HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT), LITELLM_LOCAL_MODEL_COST_MAP="True")
    done = subprocess.run([sys.executable, str(program), str(tmp_path / "home"), str(script)], env=env,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    # The first run made 4 attempts (the lead twice, the scout twice): a limit of 4 is spent already.
    assert out == {
        "first": "The scout ran out.",
        "again": "budget exhausted for session: 4 of 4 LLM calls made",
        "scoped": "second answer",
        "raised": "third answer",
    }


def test_python_resume_carries_the_sessions_limits_on_with_its_own_on_top(tmp_path, script):
    program = tmp_path / "carried.py"
    program.write_text(
        "import json, sys, otel_agents\n"
        "from otel_agents import Agent, Budget, BudgetExhausted, Session\n"
        "home, script = sys.argv[1:3]\n"
        "out = {}\n"
        "def attempt(session, prompt):\n"
        "    try:\n"
        "        return session.run_sync(prompt)\n"
        "    except BudgetExhausted as exc:\n"
        "        return str(exc)\n"
        "with otel_agents.recording(home=home):\n"
        "    with Session(Agent('lead'), script=script, budget=Budget(max_llm_calls=4)) as first:\n"
        "        out['first'] = attempt(first, 'go')\n"
        "    sid = first.id\n"
        "    with otel_agents.resume(sid, script=script) as again:\n"
        "        out['again'] = attempt(again, 'more')\n"
        "    with otel_agents.resume(sid, script=script, budget=Budget(max_tokens=10**6)) as tokens:\n"
        "        out['tokens'] = attempt(tokens, 'more')\n"
        "    with otel_agents.resume(sid, script=script, budget=Budget(max_llm_calls=5)) as raised:\n"
        "        out['raised'] = attempt(raised, 'more')\n"
        "print(json.dumps(out))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_AGENTS_HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT), LITELLM_LOCAL_MODEL_COST_MAP="True")
    done = subprocess.run([sys.executable, str(program), str(tmp_path / "home"), str(script)], env=env,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    assert out == {
        "first": "The scout ran out.",  # 4 attempts: the lead twice, the scout twice
        "again": "budget exhausted for session: 4 of 4 LLM calls made",  # no budget given: the run's carried on
        "tokens": "budget exhausted for session: 4 of 4 LLM calls made",  # a token limit on top of it
        "raised": "second answer",
    }


def test_an_agents_own_budget_goes_on_top_of_the_scripts_root_budget(tmp_path):
    # The script's call limit holds although the Agent adds a cost limit of its own.
    from otel_agents import Agent, Budget, BudgetExhausted, Session

    path = tmp_path / "root-budget.json"
    path.write_text(json.dumps({"name": "rb", "budget": {"max_llm_calls": 1}, "agents": {"lead": ["a", "b", "c"]}}))
    agent = Agent("lead", budget=Budget(max_cost_usd=1.0))
    assert agent.budgets_by_name(path) == {"lead": Budget(max_llm_calls=1, max_cost_usd=1.0)}
    with Session(agent, script=path) as session:
        assert session.run_sync("go") == "a"
        with pytest.raises(BudgetExhausted, match="1 of 1 LLM calls made"):
            session.run_sync("again")


def test_a_session_crossing_80_percent_of_a_limit_logs_one_warning_a_program_sees(script, caplog):
    import logging

    from otel_agents import Agent, Budget, Session

    script.write_text(json.dumps({"name": "chatty", "agents": {"lead": ["one", "two", "three", "four", "five"]}}))
    caplog.set_level(logging.WARNING, logger="otel_agents")
    with Session(Agent("lead"), script=script, budget=Budget(max_llm_calls=5)) as session:
        for prompt in ("a", "b", "c"):
            session.run_sync(prompt)
        assert caplog.records == []  # 3 of 5: below the mark
        session.run_sync("d")
        session.run_sync("e")  # past the mark already: not told again
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("otel_agents.budget", logging.WARNING, "budget warning for session: 4 of 5 LLM calls made (80% of the limit)")]


def test_a_program_without_logging_set_up_shows_the_warning_on_stderr_once(tmp_path, script):
    # A real process: pytest's own log handlers would keep logging's last resort from printing.
    script.write_text(json.dumps({"name": "chatty", "agents": {"lead": ["one", "two", "three", "four"]}}))
    program = tmp_path / "program.py"
    program.write_text(
        "import sys\nfrom otel_agents import Agent, Budget, Session\n"
        "with Session(Agent('lead'), script=sys.argv[1], budget=Budget(max_llm_calls=5)) as session:\n"
        "    for prompt in 'abcd':\n        session.run_sync(prompt)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_AGENTS_HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT), LITELLM_LOCAL_MODEL_COST_MAP="True")
    done = subprocess.run([sys.executable, str(program), str(script)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["budget warning for session: 4 of 5 LLM calls made (80% of the limit)"]
