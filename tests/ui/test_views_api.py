"""The view endpoints answer exactly what ``otel-agents view ... --json`` prints for the same session."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from otel_agents.cli import cli


@pytest.fixture
def view_json(ui_home, tmp_path):
    """``otel-agents view SESSION ... --json`` parsed; its index cache goes to another home, never ui_home."""

    def run(session_id: str, *args: str):
        result = CliRunner().invoke(cli, ["view", "--sessions-dir", str(ui_home.sessions), session_id, *args, "--json"],
                                    env={"OTEL_AGENTS_HOME": str(tmp_path / "elsewhere")})
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    return run


def sessions(ui_home):
    return [ui_home.demo, *ui_home.seeds]


def test_agents_dialog_and_perspective_equal_the_cli(ui_home, client, view_json):
    for session_id in sessions(ui_home):
        base = f"/api/sessions/{session_id}"
        agents = client.get(f"{base}/agents").json()
        assert agents == view_json(session_id, "agents")
        ids = [a["agent_id"] for a in agents["agents"]]
        names = [a["display_name"] for a in agents["agents"]]
        for pair in {tuple(ids[:2]), tuple(ids[1:3]), tuple(names[-2:])} - {()}:
            dialog = client.get(f"{base}/dialog", params=[("agents", a) for a in pair])
            assert dialog.status_code == 200, dialog.text
            assert dialog.json() == view_json(session_id, "dialog", *pair)
        for agent in [*ids, *names]:
            perspective = client.get(f"{base}/perspective/{agent}")
            assert perspective.json() == view_json(session_id, "perspective", agent)


def test_agents_by_path_reach_the_same_perspective(ui_home, client):
    base = f"/api/sessions/{ui_home.demo}"
    agents = client.get(f"{base}/agents").json()["agents"]
    nested = next(a for a in agents if a["path"].count("/") >= 2)
    by_path = client.get(f"{base}/perspective/{nested['path']}").json()
    assert by_path == client.get(f"{base}/perspective/{nested['agent_id']}").json()
    assert by_path["agent_id"] == nested["agent_id"]


def test_trace_and_heard_of_every_message_equal_the_cli(ui_home, client, view_json):
    for session_id in (ui_home.demo, ui_home.seeds[0]):
        base = f"/api/sessions/{session_id}"
        agents = [a["agent_id"] for a in client.get(f"{base}/agents").json()["agents"]]
        messages = sorted({i["message_id"] for a in agents
                           for i in client.get(f"{base}/perspective/{a}").json()["items"]})
        assert len(messages) > 10
        for message_id in messages[::3]:  # the CLI runs in-process but is still the slow half
            assert client.get(f"{base}/messages/{message_id}/trace").json() == view_json(session_id, "trace", message_id)
            assert client.get(f"{base}/messages/{message_id}/heard").json() == view_json(session_id, "heard", message_id)


def test_context_equals_the_cli_by_span_and_by_answer(ui_home, client, view_json):
    base = f"/api/sessions/{ui_home.demo}"
    attempts = [row for row in _all_rows(client, base) if row["kind"] == "llm"]
    assert len(attempts) >= 10 and any(row["status"] == "error" for row in attempts)
    for row in attempts:
        document = client.get(f"{base}/context/{row['id']}").json()
        assert document == view_json(ui_home.demo, "context", row["id"])
        detail = client.get(f"{base}/nodes/{row['id']}").json()
        assert detail["context"] == document
    answered = next(r for r in attempts if r["status"] == "ok")
    message_id = client.get(f"{base}/nodes/{answered['id']}").json()["response"]["message_id"]
    assert client.get(f"{base}/context/{message_id}").json() == view_json(ui_home.demo, "context", message_id)


@pytest.mark.parametrize("key", ["nothex", "0123456789ABCDEF", "0123456789abcde", "msg_x", "msg_"])
def test_a_malformed_span_or_message_id_of_context_is_400_not_404(ui_home, client, key):
    response = client.get(f"/api/sessions/{ui_home.demo}/context/{key}")
    assert response.status_code == 400 and "malformed" in response.json()["error"]
    assert client.get(f"/api/sessions/{ui_home.demo}/context/ffffffffffffffff").status_code == 404  # well formed


def _all_rows(client, base):
    rows, pending = [], [None]
    while pending:
        parent = pending.pop()
        params = {"limit": 1000} if parent is None else {"parent": parent, "limit": 1000}
        page = client.get(f"{base}/nodes", params=params).json()["nodes"]
        rows += page
        pending += [r["id"] for r in page if r["child_count"]]
    return rows


XSS = ["<script>alert(1)</script>", '<img src=x onerror="alert(1)">']


def test_markup_in_messages_comes_back_as_literal_json_text(own_home):
    from starlette.testclient import TestClient

    from otel_agents.ui.app import create_app
    from support.ui_sessions import LOCAL

    directory = own_home.sessions / "xss"
    directory.mkdir()
    records = [
        {"message_id": "msg_001", "event_type": "agent_created", "agent_id": "agent_root", "language_model": "m"},
        {"message_id": "msg_002", "event_type": "transcript_entry", "agent_id": "agent_root", "role": "user",
         "content": XSS[0]},
        {"message_id": "msg_003", "event_type": "transcript_entry", "agent_id": "agent_root", "role": "assistant",
         "content": XSS[1]},
    ]
    (directory / "events.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    client = TestClient(create_app(own_home.sessions, [own_home.billing]), base_url=LOCAL)
    response = client.get("/api/sessions/xss/perspective/agent_root")
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert [item["content"] for item in response.json()["items"]] == XSS


def test_dialog_and_perspective_pages_are_slices_of_the_whole_view(ui_home, client):
    base = f"/api/sessions/{ui_home.demo}"
    ids = [a["agent_id"] for a in client.get(f"{base}/agents").json()["agents"]]
    wholes = {
        f"{base}/dialog": (client.get(f"{base}/dialog", params=[("agents", ids[0]), ("agents", ids[1])]).json(),
                           [("agents", ids[0]), ("agents", ids[1])]),
        f"{base}/perspective/{ids[0]}": (client.get(f"{base}/perspective/{ids[0]}").json(), []),
    }
    for path, (whole, params) in wholes.items():
        items = whole["items"]
        assert len(items) > 3 and "total" not in whole  # unpaged: the view's own document
        for offset, limit in ((0, 2), (2, 3), (len(items) - 1, 5), (len(items) + 4, 1)):
            page = client.get(path, params=[*params, ("offset", str(offset)), ("limit", str(limit))]).json()
            assert page == {**whole, "items": items[offset:offset + limit], "total": len(items), "offset": offset}
        for bad in (("limit", "0"), ("limit", "1001"), ("offset", "-1"), ("offset", "x")):
            answer = client.get(path, params=[*params, bad])
            assert answer.status_code == 400 and bad[0] in answer.json()["error"]
