"""Costs per agent, per model and over time add up to the session's totals; the ledger CSV is ``billing export``'s."""

from __future__ import annotations

import math

from otel_agents.persistence.store import SessionStore


def test_ledger_csv_is_byte_equal_to_billing_export(ui_home, client):
    exported = ui_home.cli("billing", "export", "--format", "csv", "--session", ui_home.demo)
    assert exported.returncode == 0, exported.stderr
    response = client.get(f"/api/sessions/{ui_home.demo}/ledger.csv")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    assert ui_home.demo in response.headers["content-disposition"]
    assert response.content == exported.stdout
    assert response.content.count(b"\n") > 10


def test_ledger_rows_are_the_sessions_records_paged(ui_home, client):
    exported = ui_home.cli("billing", "export", "--format", "jsonl", "--session", ui_home.demo)
    import orjson

    expected = [orjson.loads(line) for line in exported.stdout.splitlines()]
    base = f"/api/sessions/{ui_home.demo}/ledger"
    whole = client.get(base, params={"limit": 1000}).json()
    assert whole["total"] == len(expected) and whole["records"] == expected
    pages = [client.get(base, params={"offset": k, "limit": 3}).json() for k in range(0, len(expected), 3)]
    assert [r for p in pages for r in p["records"]] == expected
    assert {p["total"] for p in pages} == {len(expected)}
    # A session without ledger records: empty, not an error.
    assert client.get(f"/api/sessions/{ui_home.seeds[0]}/ledger").json()["total"] == 0


def test_costs_add_up_to_the_sessions_totals(ui_home, client):
    meta = SessionStore(ui_home.sessions / ui_home.demo).read_meta()
    totals = meta["totals"]
    costs = client.get(f"/api/sessions/{ui_home.demo}/costs").json()
    tokens = totals["input_tokens"] + totals["output_tokens"]
    for rows in (costs["per_agent"], costs["per_model"]):
        assert sum(r["tokens"] for r in rows) == tokens
        assert math.isclose(sum(r["cost_usd"] for r in rows), totals["cost_usd"], abs_tol=1e-9)
    assert sum(r["calls"] for r in costs["per_model"]) == totals["llm_calls"]
    detail = client.get(f"/api/sessions/{ui_home.demo}").json()
    colors = {a["id"]: a["color"] for a in detail["agents"]}
    assert all(colors[r["agent_id"]] == r["color"] for r in costs["per_agent"])
    over_time = costs["over_time"]
    assert len(over_time) == totals["llm_calls"]
    assert all(a["t_ms"] <= b["t_ms"] and a["tokens"] <= b["tokens"] and a["cost_usd"] <= b["cost_usd"]
               for a, b in zip(over_time, over_time[1:]))
    assert over_time[-1]["tokens"] == tokens
    assert math.isclose(over_time[-1]["cost_usd"], totals["cost_usd"], abs_tol=1e-9)


def test_an_events_only_session_has_no_costs(ui_home, client):
    costs = client.get(f"/api/sessions/{ui_home.seeds[0]}/costs").json()
    assert costs == {"per_agent": [], "per_model": [], "over_time": []}
