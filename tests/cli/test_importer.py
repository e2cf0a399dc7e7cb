"""``otel-agents import`` of other instrumentations' GenAI traces: runs, agents and priced ledger records."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from otel_agents.persistence.ledger_read import read_records
from otel_agents.persistence.store import SessionStore
from support.in_process import run_in_process

FOREIGN = Path(__file__).resolve().parents[1] / "data" / "foreign"


def otel_agents(home: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_in_process(*args, home=home, env={"OTEL_TRACES_EXPORTER": "none", **(env or {})})


def test_the_issues_jaeger_trace_imports_as_one_run_with_its_agent_and_priced_records(tmp_path):
    done = otel_agents(tmp_path, "import", str(FOREIGN / "jaeger-http-agent.json"), "--json")
    assert done.returncode == 0, done.stderr
    (summary,) = json.loads(done.stdout)
    assert (summary["runs"], summary["ledger_records_added"]) == (1, 4)
    tree = SessionStore(Path(summary["directory"])).load_tree()
    assert [agent["name"] for agent in tree["agents"].values()] == ["Support"]
    records = read_records(tmp_path / "billing.jsonl")
    llm = [r for r in records if r["type"] == "llm"]
    assert sum(r["tokens"]["input"] for r in llm) == 8280 and sum(r["tokens"]["output"] for r in llm) == 1180
    assert {r["price_source"] for r in llm} == {"litellm"} and all(r["cost_usd"] > 0 for r in llm)
    assert {r["agent_name"] for r in records} == {"Support"}
    verified = otel_agents(tmp_path, "sessions", "verify", summary["session_id"])
    assert verified.returncode == 0, verified.stdout + verified.stderr
    shown = otel_agents(tmp_path, "sessions", "show", summary["session_id"])
    assert "1 run(s), 1 agent(s)  in 8280 out 1180" in shown.stdout


@pytest.mark.parametrize(
    "name, agent, llm_calls, tool_calls",
    [
        ("openai-agents.json", "Weather agent", 1, 1),
        ("openllmetry.json", "joke-service", 2, 1),
        ("openinference.json", "RecipeAgent", 2, 1),
    ],
)
def test_each_instrumentations_shape_imports_as_a_run(tmp_path, name, agent, llm_calls, tool_calls):
    done = otel_agents(tmp_path, "import", str(FOREIGN / name), "--json")
    assert done.returncode == 0, done.stderr
    (summary,) = json.loads(done.stdout)
    tree = SessionStore(Path(summary["directory"])).load_tree()
    (run,) = tree["runs"]
    assert run["agent_name"] == agent
    assert (tree["totals"]["inclusive"]["llm_calls"], tree["totals"]["inclusive"]["tool_calls"]) == (llm_calls, tool_calls)
    records = read_records(tmp_path / "billing.jsonl")
    assert len(records) == llm_calls + tool_calls
    assert all(r["price_source"] in {"litellm", "unpriced"} for r in records if r["type"] == "llm")


def test_an_unknown_model_is_recorded_unpriced(tmp_path):
    assert otel_agents(tmp_path, "import", str(FOREIGN / "openinference.json")).returncode == 0
    by_model = {r["model"]: r for r in read_records(tmp_path / "billing.jsonl") if r["type"] == "llm"}
    assert by_model["an-unpublished-model"]["price_source"] == "unpriced"
    assert by_model["an-unpublished-model"]["cost_usd"] is None
    assert by_model["gpt-4o-mini"]["tokens"]["cache_read"] == 128  # OpenInference's cache count, mapped


def test_importing_again_with_other_prices_changes_nothing(tmp_path):
    trace = str(FOREIGN / "jaeger-http-agent.json")
    assert otel_agents(tmp_path, "import", trace).returncode == 0
    before = (tmp_path / "billing.jsonl").read_bytes()
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-4o-mini": {"input_cost_per_token": 1e-3, "output_cost_per_token": 1e-3}}))
    again = otel_agents(tmp_path, "import", trace, env={"OTEL_AGENTS_PRICES": str(prices)})
    assert again.returncode == 0, again.stderr
    assert "unchanged; 0 ledger record(s) added" in again.stdout
    assert (tmp_path / "billing.jsonl").read_bytes() == before


def test_a_trace_split_across_files_is_shaped_once(tmp_path):
    doc = json.loads((FOREIGN / "openllmetry.json").read_text())
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    halves = []
    for n, part in enumerate((spans[:2], spans[2:])):
        copy = json.loads(json.dumps(doc))
        copy["resourceSpans"][0]["scopeSpans"][0]["spans"] = part
        halves.append(tmp_path / f"half{n}.json")
        halves[-1].write_text(json.dumps(copy))
    done = otel_agents(tmp_path, "import", *map(str, halves), "--json")
    assert done.returncode == 0, done.stderr
    (summary,) = json.loads(done.stdout)
    tree = SessionStore(Path(summary["directory"])).load_tree()
    assert len(tree["runs"]) == 1 and tree["totals"]["inclusive"]["llm_calls"] == 2


def test_an_imported_session_priced_on_import_keeps_its_pricing_snapshot(tmp_path):
    from otel_agents.persistence.pricing_file import read_pricing
    from otel_agents.repricing import snapshot_cost

    done = otel_agents(tmp_path, "import", str(FOREIGN / "jaeger-http-agent.json"), "--json")
    assert done.returncode == 0, done.stderr
    (summary,) = json.loads(done.stdout)
    entries = read_pricing(Path(summary["directory"]))
    llm = [r for r in read_records(tmp_path / "billing.jsonl") if r["type"] == "llm"]
    assert {r["price_id"] for r in llm} == set(entries) and all(e["price_source"] == "litellm" for e in entries.values())
    assert [snapshot_cost(r, entries) for r in llm] == [(r["cost_usd"], r["price_source"]) for r in llm]
