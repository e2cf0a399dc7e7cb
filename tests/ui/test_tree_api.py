"""Node rows: every span of the tree once, children in start order and paged, totals that add up; node details."""

from __future__ import annotations

import gzip
import json

from starlette.testclient import TestClient

from otel_agents.ui.app import create_app
from otel_agents.views.loading import span_nodes
from support.ui_sessions import LOCAL

ROW_KEYS = {"id", "parent", "kind", "name", "label", "agent", "agent_id", "status", "outcome", "error", "start_ms",
            "duration_ms", "child_count", "attempt", "retry_of", "self", "inclusive"}


def all_rows(client, base, page=1000):
    rows, pending = [], [None]
    while pending:
        parent = pending.pop()
        offset = 0
        while True:
            params = {"offset": offset, "limit": page, **({"parent": parent} if parent else {})}
            answer = client.get(f"{base}/nodes", params=params).json()
            rows += answer["nodes"]
            pending += [r["id"] for r in answer["nodes"] if r["child_count"]]
            offset += page
            if offset >= answer["total"]:
                break
    return rows


def test_every_span_is_one_row_under_its_parent_in_start_order(ui_home, client):
    base = f"/api/sessions/{ui_home.demo}"
    rows = all_rows(client, base)
    with gzip.open(ui_home.sessions / ui_home.demo / "tree.json.gz") as fh:
        tree = json.load(fh)
    assert {r["id"] for r in rows} == {n["span_id"] for n in span_nodes(tree)}
    assert len(rows) == len({r["id"] for r in rows}) == client.get(base).json()["node_count"]
    by_id = {r["id"]: r for r in rows}
    for row in rows:
        assert set(row) == ROW_KEYS
        if row["parent"] is not None:
            assert by_id[row["parent"]]["start_ms"] <= row["start_ms"]
    for parent in [None, *by_id]:
        children = [r for r in rows if r["parent"] == parent]
        assert [c["start_ms"] for c in children] == sorted(c["start_ms"] for c in children)
        if parent is not None:
            assert by_id[parent]["child_count"] == len(children)
            # inclusive = self + the children's inclusive
            assert by_id[parent]["inclusive"]["tokens"] == by_id[parent]["self"]["tokens"] + sum(
                c["inclusive"]["tokens"] for c in children)
    kinds = {r["kind"] for r in rows}
    assert {"run", "turn", "llm", "tool", "agent", "create_agent"} <= kinds
    runs = [r for r in rows if r["parent"] is None]
    totals = client.get(base).json()["totals"]
    assert sum(r["inclusive"]["tokens"] for r in runs) == totals["tokens"]
    # The demo's failed attempt is visible and its retry points back at it.
    failed = next(r for r in rows if r["kind"] == "llm" and r["status"] == "error")
    retry = next(r for r in rows if r["retry_of"] == failed["id"])
    assert retry["attempt"] == failed["attempt"] + 1 and retry["parent"] == failed["parent"]
    agents = {a["id"]: a["name"] for a in client.get(base).json()["agents"]}
    assert all(agents[r["agent_id"]] == r["agent"] for r in rows)


def test_pages_of_any_size_give_the_same_rows(ui_home, client):
    base = f"/api/sessions/{ui_home.demo}"
    assert all_rows(client, base, page=1) == all_rows(client, base, page=1000) == all_rows(client, base, page=4)
    run = client.get(f"{base}/nodes").json()["nodes"][0]["id"]
    beyond = client.get(f"{base}/nodes", params={"parent": run, "offset": 10_000}).json()
    assert beyond["nodes"] == [] and beyond["total"] > 0 and beyond["offset"] == 10_000


def test_details_of_an_llm_attempt_a_tool_call_and_a_hook_decision(ui_home, client):
    base = f"/api/sessions/{ui_home.demo}"
    rows = all_rows(client, base)
    attempt = next(r for r in rows if r["kind"] == "llm" and r["status"] == "ok")
    detail = client.get(f"{base}/nodes/{attempt['id']}").json()
    assert detail["node"] == attempt
    assert detail["context"]["span_id"] == attempt["id"] and detail["context"]["messages"]
    assert detail["usage"]["total"] == attempt["self"]["tokens"]
    assert detail["cost_usd"] == attempt["self"]["cost_usd"] and detail["price_source"] == "litellm"
    assert detail["response"]["record"]["role"] == "assistant"
    assert detail["tool"] is None
    ancestors = detail["ancestors"]
    assert ancestors[-1] == attempt["parent"] and client.get(f"{base}/nodes/{ancestors[0]}").json()["node"]["parent"] is None

    tool = next(r for r in rows if r["kind"] == "tool" and r["name"] == "execute_tool task" and r["status"] == "ok")
    call = client.get(f"{base}/nodes/{tool['id']}").json()["tool"]
    assert call["name"] == "task" and json.loads(call["arguments"])["name"]
    assert call["result"].startswith("Created subagent")
    hooked = [client.get(f"{base}/nodes/{r['id']}").json() for r in rows if r["kind"] == "tool"]
    events = [e for d in hooked for e in d["events"] if e["name"] == "otel_agents.hook"]
    assert events and all(e["level"] and e["time"].endswith("Z") and e["message"] for e in events)


def test_an_events_only_session_has_no_nodes(ui_home, client):
    answer = client.get(f"/api/sessions/{ui_home.seeds[0]}/nodes").json()
    assert answer == {"total": 0, "offset": 0, "nodes": [], "cursor": answer["cursor"]}


def test_a_page_carries_the_cursor_of_the_load_it_comes_from(own_home):
    """A page read before the journal grew keeps the older cursor, from which /live replays what it lacks."""
    client = TestClient(create_app(own_home.sessions, [own_home.billing]), base_url=LOCAL)
    base = f"/api/sessions/{own_home.demo}"
    journal = own_home.sessions / own_home.demo / "spans.jsonl"
    whole = journal.read_bytes()
    lines = whole.splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[: len(lines) // 2]))
    page = client.get(f"{base}/nodes").json()
    events_size = (own_home.sessions / own_home.demo / "events.jsonl").stat().st_size
    assert page["cursor"] == f"{journal.stat().st_size}.{events_size}"
    journal.write_bytes(whole)
    detail = client.get(base).json()
    assert detail["cursor"] == f"{len(whole)}.{events_size}" != page["cursor"]
    assert client.get(f"{base}/nodes").json()["cursor"] == detail["cursor"]


def test_a_discuss_call_shows_every_reply_it_gave(ui_home, client):
    """discuss has no single result entry (the tree's response.message_id is None): its tool entries are the result."""
    base = f"/api/sessions/{ui_home.demo}"
    discuss = [r for r in all_rows(client, base) if r["kind"] == "tool" and r["name"] == "execute_tool discuss"]
    assert discuss
    lines = (ui_home.sessions / ui_home.demo / "events.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    for row in discuss:
        call = client.get(f"{base}/nodes/{row['id']}").json()["tool"]
        replies = [r["content"] for r in records if r.get("role") == "tool" and r.get("span_id") == row["id"]]
        assert replies and all(r.get("tool_call_id") == call["call_id"] for r in records
                               if r.get("role") == "tool" and r.get("span_id") == row["id"])
        assert call["result"] == "\n\n".join(replies)
    # The demo's main discussion has two speakers, so two replies, in the order they were given.
    assert any(client.get(f"{base}/nodes/{r['id']}").json()["tool"]["result"].count("\n\n") == 1 for r in discuss)


def test_a_failed_attempt_that_billed_nothing_costs_0_not_unpriced(ui_home, client):
    """Its null cost read as unpriced, where the CLI's totals add nothing and count no unpriced call."""
    base = f"/api/sessions/{ui_home.demo}"
    failed = next(r for r in all_rows(client, base) if r["kind"] == "llm" and r["status"] == "error")
    assert failed["self"]["cost_usd"] == failed["inclusive"]["cost_usd"] == 0
    assert client.get(f"{base}/nodes/{failed['id']}").json()["cost_usd"] == 0
