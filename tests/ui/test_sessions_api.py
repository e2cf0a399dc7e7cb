"""The sessions listing (as ``sessions list`` sees each status) and one session's summary."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta

import pytest
from starlette.testclient import TestClient

from otel_agents.persistence import ownership
from otel_agents.ui.app import create_app
from support.held_sessions import held_run, opened_session
from support.ui_sessions import DEMO_PROMPT, LOCAL, RunningServer, clean_env, digest_tree, killed_sessions

SUMMARY_KEYS = {"id", "title", "status", "live", "created", "updated", "runs", "agents", "tokens", "cost_usd", "problem"}


def test_listing_matches_sessions_list(ui_home, client):
    listed = ui_home.cli("sessions", "list", "--json")
    assert listed.returncode == 0
    expected = {item["id"]: item for item in json.loads(listed.stdout)}
    answer = client.get("/api/sessions").json()
    assert answer["total"] == len(expected) == 1 + len(ui_home.seeds) and answer["offset"] == 0
    for row in answer["sessions"]:
        assert set(row) == SUMMARY_KEYS
        meta = expected[row["id"]]
        if "problem" in meta:  # no meta.json, nor a tree to say more: listed, with why
            assert row["problem"] == meta["problem"] and row["status"] == "failed"
            assert (row["runs"], row["agents"], row["tokens"], row["cost_usd"]) == (None, None, None, None)
            continue
        assert (row["title"], row["status"], row["created"], row["updated"], row["runs"], row["agents"]) == (
            meta["title"], meta["status"], meta["created"], meta["updated"], meta["runs"], meta["agents"])
        assert row["tokens"] == meta["totals"]["input_tokens"] + meta["totals"]["output_tokens"]
        assert row["cost_usd"] == meta["totals"]["cost_usd"] and row["live"] is False


def test_filter_sort_and_page(ui_home, client):
    assert [s["id"] for s in client.get("/api/sessions", params={"q": "JACK AND"}).json()["sessions"]] == [ui_home.demo]
    assert [s["id"] for s in client.get("/api/sessions", params={"q": ui_home.demo[-6:]}).json()["sessions"]] == [
        ui_home.demo]
    assert client.get("/api/sessions", params={"q": "no such words"}).json() == {"total": 0, "offset": 0, "sessions": []}
    assert [s["id"] for s in client.get("/api/sessions", params={"status": "ok"}).json()["sessions"]] == [ui_home.demo]
    assert client.get("/api/sessions", params={"status": "running"}).json()["total"] == 0
    by_tokens = client.get("/api/sessions", params={"sort": "tokens", "order": "desc"}).json()["sessions"]
    assert by_tokens[0]["id"] == ui_home.demo
    ascending = client.get("/api/sessions", params={"sort": "tokens", "order": "asc"}).json()["sessions"]
    assert ascending[0]["id"] == ui_home.demo  # the seeds' tokens are unknown (no meta.json nor tree): last
    assert [s["tokens"] for s in ascending[1:]] == [None] * len(ui_home.seeds)
    by_cost = client.get("/api/sessions", params={"sort": "cost"}).json()["sessions"]
    assert by_cost[0]["id"] == ui_home.demo  # the sessions without a cost come last, either order
    ids = [s["id"] for s in client.get("/api/sessions", params={"sort": "title"}).json()["sessions"]]
    paged = [client.get("/api/sessions", params={"sort": "title", "offset": k, "limit": 2}).json() for k in (0, 2, 4)]
    assert [s["id"] for p in paged for s in p["sessions"]] == ids
    for bad in ({"status": "done"}, {"sort": "size"}, {"order": "up"}, {"limit": "0"}, {"offset": "-3"}):
        response = client.get("/api/sessions", params=bad)
        assert response.status_code == 400 and "error" in response.json()


def test_detail(ui_home, client):
    detail = client.get(f"/api/sessions/{ui_home.demo}").json()
    assert detail["id"] == ui_home.demo and detail["status"] == "ok" and detail["live"] is False
    (run,) = detail["runs"]
    assert run["index"] == 1 and run["status"] == "ok" and len(run["trace_id"]) == 32
    assert run["prompt"] == "Create Jack and Jill for a cafe discussion" and run["jaeger_url"] is None
    assert run["started"] < run["ended"]
    assert [a["name"] for a in detail["agents"]] == ["main", "Jack", "Jill", "ResourceMonitor", "Inner"]
    assert [a["color"] for a in detail["agents"]] == [0, 1, 2, 3, 4]
    assert detail["agents"][4]["path"] == "main/Jill/Inner"
    assert isinstance(detail["start_ms_epoch"], int)
    # Created as the run began: the same moment give or take start-up (seconds on a loaded machine,
    # so not the same minute's text, which a minute boundary between them broke).
    created, started = (datetime.fromisoformat(t[:19]) for t in (detail["created"], run["started"]))
    assert timedelta(seconds=-5) <= started - created < timedelta(minutes=2), (detail["created"], run["started"])
    assert detail["node_count"] > 30


def test_jaeger_links(ui_home):
    app = create_app(ui_home.sessions, [ui_home.billing], jaeger_url="http://jaeger.local:16686/")
    client = TestClient(app, base_url=LOCAL)
    (run,) = client.get(f"/api/sessions/{ui_home.demo}").json()["runs"]
    assert run["jaeger_url"] == f"http://jaeger.local:16686/trace/{run['trace_id']}"


@pytest.mark.parametrize("stored, shown", [("error", "failed"), ("cancelled", "interrupted"), ("ok", "ok")])
def test_statuses_in_the_uis_words(own_home, stored, shown):
    meta_path = own_home.sessions / own_home.demo / "meta.json"
    meta_path.write_text(json.dumps({**json.loads(meta_path.read_text()), "status": stored}))
    client = TestClient(create_app(own_home.sessions, [own_home.billing]), base_url=LOCAL)
    assert client.get("/api/sessions", params={"q": own_home.demo}).json()["sessions"][0]["status"] == shown


def test_a_session_held_by_a_writer_is_running_and_live_until_released(own_home):
    """The rule of ``sessions list``: running only while a process holds the lock, else interrupted."""
    directory = own_home.sessions / own_home.demo
    meta = json.loads((directory / "meta.json").read_text())
    (directory / "meta.json").write_text(json.dumps({**meta, "status": "running"}))
    client = TestClient(create_app(own_home.sessions, [own_home.billing]), base_url=LOCAL)
    held = ownership.take(directory)
    try:
        row = client.get("/api/sessions", params={"status": "running"}).json()["sessions"]
        assert [(r["id"], r["live"]) for r in row] == [(own_home.demo, True)]
        assert client.get(f"/api/sessions/{own_home.demo}").json()["live"] is True
    finally:
        held.release()
    row = client.get("/api/sessions", params={"q": own_home.demo}).json()["sessions"][0]
    assert (row["status"], row["live"]) == ("interrupted", False)
    assert client.get(f"/api/sessions/{own_home.demo}").json()["status"] == "interrupted"


def test_a_killed_sessions_list_row_says_what_its_detail_says(tmp_path):
    """meta.json of a run killed with SIGKILL is as the run began: the list reads the recovered tree, as the detail."""
    import subprocess
    import sys

    sessions = killed_sessions(tmp_path)
    (directory,) = sessions.iterdir()
    meta = json.loads((directory / "meta.json").read_text())
    assert meta["status"] == "running" and meta["totals"]["llm_calls"] == 0 and meta["title"] is None
    before = digest_tree(sessions)
    client = TestClient(create_app(sessions, []), base_url=LOCAL)
    for _ in range(2):  # the second from the cache
        (row,) = client.get("/api/sessions").json()["sessions"]
        detail = client.get(f"/api/sessions/{directory.name}").json()
        assert row["status"] == detail["status"] == "interrupted" and row["cost_usd"] > 0
        assert {"tokens": row["tokens"], "cost_usd": row["cost_usd"]} == detail["totals"]
        assert (row["title"], row["agents"], row["updated"]) == (
            detail["title"], len(detail["agents"]), detail["updated"]) == (DEMO_PROMPT, 5, row["updated"])
        assert row["updated"] > meta["updated"]
    listed = subprocess.run([sys.executable, "-m", "otel_agents", "sessions", "list", "--json", "--sessions-dir",
                             str(sessions)], capture_output=True, text=True, env=clean_env(tmp_path), timeout=120)
    (cli_row,) = json.loads(listed.stdout)
    assert (cli_row["totals"]["cost_usd"], cli_row["title"]) == (row["cost_usd"], row["title"])
    assert digest_tree(sessions) == before  # read, never repaired


def _cli_rows(sessions, tmp_path) -> list[dict]:
    """``sessions list --json`` of ``sessions``, a real process."""
    import subprocess
    import sys

    listed = subprocess.run([sys.executable, "-m", "otel_agents", "sessions", "list", "--json", "--sessions-dir",
                             str(sessions)], capture_output=True, text=True, env=clean_env(tmp_path), timeout=120)
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)


def test_a_running_sessions_row_has_its_totals_so_far_as_sessions_list_does(tmp_path):
    """meta.json is written as a run begins: the row of a first run in progress said $0 and no title
    while ``sessions list`` (and the detail) read the journal. Both read it the same way now."""
    with held_run(tmp_path) as (home, directory):
        sessions = home / "sessions"
        before = digest_tree(sessions)
        (cli_row,) = _cli_rows(sessions, tmp_path / "unused")
        client = TestClient(create_app(sessions, []), base_url=LOCAL)
        for _ in range(2):  # the second from the cache
            (row,) = client.get("/api/sessions").json()["sessions"]
            assert (row["status"], row["live"], row["title"], row["runs"], row["agents"]) == (
                "running", True, cli_row["title"], cli_row["runs"], cli_row["agents"]) and row["title"] == "Hold on"
            totals = cli_row["totals"]
            assert (row["tokens"], row["cost_usd"]) == (totals["input_tokens"] + totals["output_tokens"],
                                                        totals["cost_usd"]) and row["cost_usd"] > 0
        detail = client.get(f"/api/sessions/{directory.name}").json()
        assert (detail["title"], detail["status"]) == (row["title"], "running")
        assert detail["totals"] == {"tokens": row["tokens"], "cost_usd": row["cost_usd"]}
        assert digest_tree(sessions) == before  # read, nothing written


def test_a_session_opened_before_its_first_meta_is_a_running_row(tmp_path):
    """No meta.json yet, a process holding it: running (as ``sessions list`` says), not failed with a problem."""
    with opened_session(tmp_path) as opened:
        client = TestClient(create_app(opened.home / "sessions", []), base_url=LOCAL)
        (row,) = client.get("/api/sessions").json()["sessions"]
        assert (row["id"], row["status"], row["live"], row["problem"]) == (opened.directory.name, "running", True, None)
        assert (row["runs"], row["agents"], row["tokens"], row["cost_usd"], row["title"]) == (0, 0, 0, 0.0, None)
        detail = client.get(f"/api/sessions/{opened.directory.name}")  # its lock alone: nothing to read, yet it is
        assert detail.status_code == 200 and (detail.json()["status"], detail.json()["runs"]) == ("running", [])
        opened.note()
        (row,) = client.get("/api/sessions", params={"status": "running"}).json()["sessions"]
        assert row["agents"] == 1 and row["problem"] is None
        (cli_row,) = _cli_rows(opened.home / "sessions", tmp_path / "unused")
        assert (cli_row["status"], cli_row["agents"], cli_row["created"]) == ("running", 1, row["created"])


def _first_live_status(url: str) -> dict:
    """The ``status`` event a ``/live`` stream opens with."""
    import httpx

    with httpx.stream("GET", url, timeout=30) as response:
        event = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line[len("event: "):]
            elif line.startswith("data: ") and event == "status":
                return json.loads(line[len("data: "):])
    raise AssertionError("the stream ended without a status")


def _everywhere(sessions, session_id) -> tuple[dict, dict, dict]:
    """The session's list row, its detail and its first /live status, over a real server."""
    import httpx

    with RunningServer(create_app(sessions, [])) as server:
        (row,) = httpx.get(f"{server.url}/api/sessions", params={"q": session_id}).json()["sessions"]
        detail = httpx.get(f"{server.url}/api/sessions/{session_id}").json()
        status = _first_live_status(f"{server.url}/api/sessions/{session_id}/live")
    return row, detail, status


@pytest.mark.parametrize("damage", ["truncated", "missing"])
def test_a_session_without_a_readable_meta_json_has_its_streams_status_everywhere(own_home, damage):
    """The list and the detail said failed (nothing said why) and /live interrupted, while ``sessions show``
    rebuilds it from the journal: ok. All say what the streams hold, with why meta.json was not used."""
    directory = own_home.sessions / own_home.demo
    meta = json.loads((directory / "meta.json").read_text())
    if damage == "truncated":
        os.truncate(directory / "meta.json", 300)
    else:
        (directory / "meta.json").unlink()
    before = digest_tree(own_home.sessions)
    shown = own_home.cli("sessions", "show", own_home.demo)
    assert shown.returncode == 0 and shown.stdout.decode().split()[:3] == ["session", own_home.demo, "ok"]
    row, detail, status = _everywhere(own_home.sessions, own_home.demo)
    assert row["status"] == detail["status"] == status["status"] == "ok" and status["live"] is False
    assert "meta.json" in row["problem"]
    assert any("meta.json" in note and "streams" in note for note in detail["notes"]), detail["notes"]
    assert (row["title"], row["runs"], row["agents"], row["cost_usd"]) == (
        meta["title"], meta["runs"], meta["agents"], meta["totals"]["cost_usd"])
    assert row["tokens"] == detail["totals"]["tokens"] == meta["totals"]["input_tokens"] + meta["totals"]["output_tokens"]
    assert row["created"] is not None and row["updated"] is not None
    assert digest_tree(own_home.sessions) == before  # read, nothing written


def test_a_killed_runs_header_and_rows_say_interrupted_as_sessions_show_does(tmp_path):
    """The header's run and the open rows said error, with ``outcome: interrupted`` only in the node detail."""
    sessions = killed_sessions(tmp_path)
    (directory,) = sessions.iterdir()
    client = TestClient(create_app(sessions, []), base_url=LOCAL)
    base = f"/api/sessions/{directory.name}"
    (run,) = client.get(base).json()["runs"]
    assert run["status"] == "interrupted"
    (top,) = client.get(f"{base}/nodes").json()["nodes"]
    assert (top["status"], top["outcome"]) == ("interrupted", "interrupted")


def test_a_killed_session_without_a_readable_meta_json_is_interrupted_everywhere(tmp_path):
    sessions = killed_sessions(tmp_path)
    (directory,) = sessions.iterdir()
    os.truncate(directory / "meta.json", 300)
    before = digest_tree(sessions)
    row, detail, status = _everywhere(sessions, directory.name)
    assert row["status"] == detail["status"] == status["status"] == "interrupted" and row["cost_usd"] > 0
    assert digest_tree(sessions) == before


def test_unknown_values_sort_last_in_either_order(own_home):
    """A row without a readable meta.json nor a tree has no runs, agents or tokens: null, not 0 (which sorted
    it first of all ascending)."""
    client = TestClient(create_app(own_home.sessions, [own_home.billing]), base_url=LOCAL)
    for order in ("asc", "desc"):
        rows = client.get("/api/sessions", params={"sort": "tokens", "order": order}).json()["sessions"]
        assert [r["id"] for r in rows] == [own_home.demo, *sorted(own_home.seeds)]
        assert [(r["runs"], r["agents"], r["tokens"]) for r in rows[1:]] == [(None, None, None)] * len(own_home.seeds)


def test_a_forks_run_has_its_own_prompt_and_its_detail_names_its_source(own_home):
    """The fork's first run records the source's records again: their first user message is not its prompt."""
    done = own_home.cli("fork", own_home.demo, "--at", "msg_000021", "What if Jack was grumpy?")
    assert done.returncode == 0, done.stderr
    fork = done.stderr.decode().strip().splitlines()[-1].split("session: ")[1]
    client = TestClient(create_app(own_home.sessions, [own_home.billing]), base_url=LOCAL)
    detail = client.get(f"/api/sessions/{fork}").json()
    assert [run["prompt"] for run in detail["runs"]] == ["What if Jack was grumpy?"]
    assert detail["forked_from"] == {"session": own_home.demo, "message": "msg_000021"}
    source = client.get(f"/api/sessions/{own_home.demo}").json()
    assert source["forked_from"] is None and source["runs"][0]["prompt"] == DEMO_PROMPT


def test_an_empty_session_directory_is_new_as_sessions_list_says_without_1970(own_home):
    """Its row said failed, with no problem, created and updated 1970-01-01."""
    (own_home.sessions / "empty").mkdir()
    (listed,) = [s for s in json.loads(own_home.cli("sessions", "list", "--json").stdout) if s["id"] == "empty"]
    client = TestClient(create_app(own_home.sessions, []), base_url=LOCAL)
    (row,) = client.get("/api/sessions", params={"q": "empty", "status": "new"}).json()["sessions"]
    detail = client.get("/api/sessions/empty").json()
    assert listed["status"] == row["status"] == detail["status"] == "new" and row["problem"] is None
    assert not listed["created"].startswith("1970") and not row["created"].startswith("1970")
    assert not detail["updated"].startswith("1970")


def test_a_detail_from_damaged_streams_has_its_rows_totals_and_says_why(own_home):
    """A torn spans.jsonl without tree.json.gz: the row had meta.json's totals, the detail 0 and one agent."""
    directory = own_home.sessions / own_home.demo
    spans = (directory / "spans.jsonl").read_bytes()
    (directory / "spans.jsonl").write_bytes(spans[:3000])
    (directory / "tree.json.gz").unlink(missing_ok=True)
    client = TestClient(create_app(own_home.sessions, []), base_url=LOCAL)
    (row,) = client.get("/api/sessions", params={"q": own_home.demo}).json()["sessions"]
    detail = client.get(f"/api/sessions/{own_home.demo}").json()
    assert (detail["status"], detail["totals"]["tokens"], detail["totals"]["cost_usd"], detail["agent_count"]) == (
        row["status"], row["tokens"], row["cost_usd"], row["agents"])
    assert any("torn" in note for note in detail["notes"])
