"""The provider that served a call and the upstream cost, as litellm reports them, on the chat span and the ledger line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, strategies as st

from otel_agents.cli import cli
from otel_agents.llm.served import served_attributes
from otel_agents.tracing import semconv as sc
from support.openai_server import OpenAIServer, Reply

REPORTED = {"served_provider", "upstream_cost_usd", "upstream_inference_cost_usd"}


@pytest.fixture
def cli_env(home, monkeypatch):
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    monkeypatch.delenv("OTEL_AGENTS_PRICES", raising=False)
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return home


def _run(args: list[str]) -> tuple[Path, list[dict]]:
    result = CliRunner().invoke(cli, ["run", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    session_id = next(x for x in result.stderr.splitlines() if x.startswith("session: ")).split(": ", 1)[1]
    home = Path(__import__("os").environ["OTEL_AGENTS_HOME"])
    ledger = [json.loads(x) for x in (home / "billing.jsonl").read_text().splitlines()]
    return home / "sessions" / session_id, ledger


def _chat_ends(session_dir: Path) -> list[dict]:
    lines = [json.loads(x) for x in (session_dir / "spans.jsonl").read_text().splitlines()]
    names = {x["start"]: x["name"] for x in lines if "start" in x}
    return [x for x in lines if "end" in x and names.get(x["end"], "").startswith("chat ")]


def test_an_openrouter_answer_names_its_provider_and_cost_on_the_span_and_the_ledger_line(cli_env):
    with OpenAIServer() as server:
        server.plan(Reply(content="Served.", provider="DeepInfra", cost=0.00042, upstream_cost=0.0004,
                          prompt_tokens=10, completion_tokens=3))
        session_dir, ledger = _run(["--model", "openrouter/acme/m", "--api-base", server.api_base, "hi"])
        (body,) = server.bodies
    assert body["usage"] == {"include": True}  # litellm asks OpenRouter for the cost
    (line,) = ledger
    assert line["served_provider"] == "DeepInfra" and line["provider"] == "openrouter"
    assert line["upstream_cost_usd"] == 0.00042 and line["upstream_inference_cost_usd"] == 0.0004
    assert line["cost_usd"] is None and line["price_source"] == "unpriced"  # ours stays ours: no price known
    (chat,) = _chat_ends(session_dir)
    attrs = chat["attrs"]
    assert attrs[sc.LLM_SERVED_PROVIDER] == "DeepInfra" and attrs[sc.LLM_UPSTREAM_COST] == 0.00042
    assert CliRunner().invoke(cli, ["sessions", "verify", session_dir.name]).exit_code == 0


def test_an_answer_that_reports_nothing_adds_no_field_to_the_line(cli_env):
    with OpenAIServer() as server:
        server.plan(Reply(content="Plain."))
        _, ledger = _run(["--model", "openai/x", "--api-base", server.api_base, "hi"])
    (line,) = ledger
    assert not REPORTED & set(line)  # older readers see the lines they always saw


def test_the_scripted_provider_reports_what_its_script_says_was_served(cli_env, tmp_path):
    script = tmp_path / "served.json"
    script.write_text(json.dumps({"name": "served", "agents": {"main": [
        {"text": "Routed.", "served": {"provider": "Together", "cost": 0.0025, "upstream_inference_cost": 0.002}}]}}))
    session_dir, ledger = _run(["--script", str(script), "hi"])
    (line,) = [x for x in ledger if x["type"] == "llm"]
    assert (line["served_provider"], line["upstream_cost_usd"], line["upstream_inference_cost_usd"]) == (
        "Together", 0.0025, 0.002)
    assert line["cost_usd"] > 0 and line["cost_usd"] != 0.0025  # our price, from the demo table, beside theirs


@pytest.mark.parametrize("served, why", [
    ({"provider": ""}, "'served.provider' must be a non-empty string"),
    ({"cost": -1}, "'served.cost' must be a cost >= 0"),
    ({"region": "eu"}, "'served' is an object of"),
])
def test_a_bad_served_report_in_a_script_is_one_line_and_exit_2(cli_env, tmp_path, served, why):
    script = tmp_path / "bad.json"
    script.write_text(json.dumps({"name": "bad", "agents": {"main": [{"text": "x", "served": served}]}}))
    result = CliRunner().invoke(cli, ["run", "--script", str(script), "hi"])
    assert result.exit_code == 2 and why in result.stderr and "Traceback" not in result.stderr


@given(cost=st.one_of(st.none(), st.booleans(), st.text(max_size=5), st.floats(allow_nan=True, allow_infinity=True)),
       provider=st.one_of(st.none(), st.integers(), st.text(max_size=8)))
def test_only_a_finite_non_negative_cost_and_a_named_provider_are_recorded(cost, provider):
    attrs = served_attributes({"provider": provider, "usage": {"cost": cost}})
    try:  # a header's cost is text (a LiteLLM proxy's x-litellm-response-cost): numbers in text count
        number = None if isinstance(cost, bool) or cost is None else float(cost)
    except ValueError:
        number = None
    if number is not None and math.isfinite(number) and number >= 0:
        assert attrs[sc.LLM_UPSTREAM_COST] == number
    else:
        assert sc.LLM_UPSTREAM_COST not in attrs
    assert attrs.get(sc.LLM_SERVED_PROVIDER) == (provider.strip() if isinstance(provider, str) and provider.strip() else None)
