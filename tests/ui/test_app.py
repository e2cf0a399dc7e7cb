"""The app as a whole: every endpoint answers, errors are one JSON line with the right status, nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from otel_agents.ui.app import create_app
from otel_agents.ui.security import CONTENT_SECURITY_POLICY
from support.ui_sessions import LOCAL, digest_tree


def endpoints(client: TestClient, session_id: str) -> list[str]:
    """Every JSON endpoint of one session, with real ids taken from the API itself."""
    base = f"/api/sessions/{session_id}"
    runs = client.get(f"{base}/nodes").json()["nodes"]
    urls = [base, f"{base}/nodes", f"{base}/agents", f"{base}/costs", f"{base}/ledger", f"{base}/ledger.csv"]
    pending = [r["id"] for r in runs]
    llm = tool = None
    while pending:  # the whole tree, page by page
        span_id = pending.pop()
        urls.append(f"{base}/nodes/{span_id}")
        for row in client.get(f"{base}/nodes", params={"parent": span_id, "limit": 1000}).json()["nodes"]:
            pending.append(row["id"])
            llm = llm or (row["id"] if row["kind"] == "llm" and row["status"] == "ok" else None)
            tool = tool or (row["id"] if row["kind"] == "tool" else None)
    agents = client.get(f"{base}/agents").json()["agents"]
    names = [a["agent_id"] for a in agents]
    urls.append(f"{base}/dialog?" + "&".join(f"agents={n}" for n in names[:2]))
    urls += [f"{base}/perspective/{n}" for n in names]
    messages = [i["message_id"] for i in client.get(f"{base}/perspective/{names[-1]}").json()["items"]]
    for message_id in messages:
        urls += [f"{base}/messages/{message_id}/trace", f"{base}/messages/{message_id}/heard"]
    if llm:
        urls.append(f"{base}/context/{llm}")
    return urls


def test_every_endpoint_answers_json_with_the_security_headers_and_writes_nothing(ui_home, client):
    before = digest_tree(ui_home.sessions, ui_home.billing)
    for session_id in (ui_home.demo, *ui_home.seeds):
        urls = endpoints(client, session_id)
        assert len(urls) > 8
        for url in ["/api/sessions", *urls]:
            response = client.get(url)
            assert response.status_code == 200, (url, response.text)
            assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
            assert response.headers["x-content-type-options"] == "nosniff"
            assert response.headers["referrer-policy"] == "no-referrer"
            if not url.endswith(".csv"):
                assert response.headers["content-type"].startswith("application/json")
                response.json()
    assert digest_tree(ui_home.sessions, ui_home.billing) == before
    # Not even a lock file or a views cache appeared anywhere in the home.
    assert sorted(p.name for p in ui_home.home.iterdir()) == ["billing.jsonl", "sessions"]


def test_pages_serve_the_single_page_app_with_the_csp(ui_home, tmp_path):
    static = tmp_path / "static"
    static.mkdir()
    (static / "index.html").write_text('<!doctype html><script type="module" src="/static/app.js"></script>')
    (static / "app.js").write_text("export {};")
    client = TestClient(create_app(ui_home.sessions, [ui_home.billing], static_dir=static), base_url=LOCAL)
    for url in ("/", f"/s/{ui_home.demo}", f"/s/{ui_home.demo}?view=dialog&agents=Jack,Jill"):
        page = client.get(url)
        assert page.status_code == 200
        assert page.text == (static / "index.html").read_text()
        assert page.headers["content-type"].startswith("text/html")
        assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    script = client.get("/static/app.js")
    assert script.status_code == 200 and script.text == "export {};"
    assert script.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert client.get("/static/missing.js").status_code == 404
    assert client.get("/s/bad%20id").status_code == 400


def test_the_packaged_pages_are_served_when_present(client):
    page = client.get("/")
    shipped = Path(__file__).resolve().parents[2] / "otel_agents" / "ui" / "static" / "index.html"
    if shipped.is_file():
        assert page.status_code == 200 and page.text == shipped.read_text()
    else:  # the front end is built on another branch: the server says so in one line
        assert page.status_code == 503 and "index.html" in page.json()["error"]


@pytest.mark.parametrize("url, status", [
    ("/api/sessions/no-such-session", 404),
    ("/api/sessions/no-such-session/nodes", 404),
    ("/api/sessions/no-such-session/live", 404),
    ("/api/sessions/..%2F..%2Fetc", 400),
    ("/api/sessions/%2E%2E", 400),
    ("/api/sessions/" + "a" * 200, 400),
    ("/api/sessions/bad%20id", 400),
    ("/api/sessions/bad%00id", 400),
    ("/api/sessions/-leading-dash", 400),
    ("/api/nothing-here", 404),
])
def test_unknown_and_malformed_session_ids(client, url, status):
    response = client.get(url)
    assert response.status_code == status, response.text
    assert list(response.json()) == ["error"] and "\n" not in response.json()["error"]


@pytest.mark.parametrize("url", ["/api/sessions/..%2f", "/api/sessions/%2E%2E/", "/s/..%2F"])
def test_a_climbing_path_is_refused_before_any_redirect(client, url):
    response = client.get(url, follow_redirects=False)
    assert response.status_code == 400, (response.status_code, response.headers.get("location"))
    assert response.json() == {"error": "malformed path: no '..' segments or encoded slashes in an id"}


@pytest.mark.parametrize("suffix, status", [
    ("/nodes/0123456789abcdef", 404),
    ("/nodes/XYZ", 400),
    ("/nodes/0123456789ABCDEF", 400),
    ("/nodes/0123456789abcdef0", 400),
    ("/nodes?parent=0123456789abcdef", 404),
    ("/nodes?parent=..", 400),
    ("/nodes?offset=-1", 400),
    ("/nodes?limit=0", 400),
    ("/nodes?limit=1001", 400),
    ("/nodes?offset=x", 400),
    ("/ledger?limit=abc", 400),
    ("/perspective/Nobody", 404),
    ("/perspective/..%2f..%2fx", 400),  # the path parameter takes slashes: an encoded one must not become one
    ("/perspective/main%2FJill", 400),
    ("/perspective/%2E%2E/%2e%2e/x", 400),
    ("/dialog?agents=main&agents=Nobody", 404),
    ("/dialog", 400),
    ("/messages/msg_999999/trace", 404),
    ("/messages/msg_999999/heard", 404),
    ("/messages/not-a-message/trace", 400),
    ("/messages/msg_1%2F..%2F/trace", 400),
    ("/context/0123456789abcdef", 404),
    ("/live?cursor=zz", 400),
])
def test_unknown_and_malformed_ids_within_a_session(ui_home, client, suffix, status):
    response = client.get(f"/api/sessions/{ui_home.demo}{suffix}")
    assert response.status_code == status, response.text
    assert list(response.json()) == ["error"]


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
@pytest.mark.parametrize("url", ["/", "/api/sessions", "/api/sessions/{demo}", "/api/sessions/{demo}/nodes",
                                 "/static/app.js"])
def test_only_get_and_head(ui_home, client, method, url):
    before = digest_tree(ui_home.sessions, ui_home.billing)
    response = client.request(method, url.format(demo=ui_home.demo), content=b"{}")
    assert response.status_code == 405
    assert response.json()["error"].startswith(f"method {method} not allowed")
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert digest_tree(ui_home.sessions, ui_home.billing) == before


def test_head_is_allowed(client):
    assert client.head("/api/sessions").status_code == 200


@pytest.mark.parametrize("suffix, status", [
    ("/", 404), ("/nodes/", 404), ("/live/", 404), ("/costs/", 404),
    ("/perspective/?agent=x", 400), ("/perspective/main/", 400),  # {agent:path} takes them: no such agent name
])
def test_a_trailing_slash_is_an_unknown_endpoint_not_a_redirect(ui_home, client, suffix, status):
    for url, expected in ((f"/api/sessions/{ui_home.demo}{suffix}", status), ("/api/sessions/", 404),
                          (f"/s/{ui_home.demo}/", 404)):
        response = client.get(url, follow_redirects=False)
        assert response.status_code == expected, (url, response.status_code, response.headers.get("location"))
        assert list(response.json()) == ["error"]
