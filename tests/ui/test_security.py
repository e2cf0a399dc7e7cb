"""The token rule, the security headers on every kind of answer, and the checks of ids and paging."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from otel_agents.ui.app import create_app
from otel_agents.ui.security import (
    CONTENT_SECURITY_POLICY, TOKEN_COOKIE, ApiError, check_message_id, check_session_id, check_span_id, paging,
)
from support.ui_sessions import LOCAL

TOKEN = "s3cret-token_value"


@pytest.fixture(scope="module")
def guarded(ui_home):
    return create_app(ui_home.sessions, [ui_home.billing], token=TOKEN)


def test_without_the_token_every_request_is_refused(ui_home, guarded):
    client = TestClient(guarded, base_url=LOCAL)
    for url in ("/", f"/s/{ui_home.demo}", "/api/sessions", f"/api/sessions/{ui_home.demo}/nodes", "/static/app.js",
                f"/api/sessions/{ui_home.demo}/live"):
        response = client.get(url)
        assert response.status_code == 401, url
        assert "token" in response.json()["error"]
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    wrong = client.get("/api/sessions", headers={"authorization": "Bearer not-it"})
    assert wrong.status_code == 401
    assert client.get("/api/sessions", params={"token": TOKEN + "x"}).status_code == 401
    assert client.get("/api/sessions", headers={"cookie": f"{TOKEN_COOKIE}=nope"}).status_code == 401


def test_the_bearer_header_lets_a_request_through(guarded):
    response = TestClient(guarded, base_url=LOCAL).get("/api/sessions", headers={"authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    assert "set-cookie" not in response.headers


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "BeArEr"])
def test_the_bearer_scheme_is_case_insensitive_as_every_http_auth_scheme(guarded, scheme):
    client = TestClient(guarded, base_url=LOCAL)
    assert client.get("/api/sessions", headers={"authorization": f"{scheme} {TOKEN}"}).status_code == 200
    assert client.get("/api/sessions", headers={"authorization": f"{scheme} not-it"}).status_code == 401
    assert client.get("/api/sessions", headers={"authorization": f"{scheme}x {TOKEN}"}).status_code == 401


def test_a_token_in_the_url_sets_a_strict_http_only_cookie_that_later_requests_carry(guarded):
    client = TestClient(guarded, base_url=LOCAL)
    first = client.get("/api/sessions", params={"token": TOKEN})
    assert first.status_code == 200
    cookie = first.headers["set-cookie"]
    assert cookie.startswith(f"{TOKEN_COOKIE}={TOKEN};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    later = client.get("/api/sessions")  # the client keeps the cookie, as the page's fetches do
    assert later.status_code == 200
    assert TestClient(guarded, base_url=LOCAL).get("/api/sessions").status_code == 401  # a fresh client has no cookie


def test_without_a_token_set_nothing_is_asked(client):
    assert client.get("/api/sessions").status_code == 200


def test_session_ids():
    assert check_session_id("20261125-140731-9d34ec") == "20261125-140731-9d34ec"
    for bad in ("..", "a/..", "a" * 129, "", "-x", "a b", "a\x00", "a..b"):
        with pytest.raises(ApiError) as caught:
            check_session_id(bad)
        assert caught.value.status == 400


def test_span_and_message_ids():
    assert check_span_id("0123456789abcdef") and check_message_id("msg_000017")
    for bad in ("0123456789abcde", "0123456789ABCDEF", "g123456789abcdef", "../../etc/passw"):
        with pytest.raises(ApiError):
            check_span_id(bad)
    for bad in ("msg_", "msg_12a", "message_1", "msg_" + "1" * 40):
        with pytest.raises(ApiError):
            check_message_id(bad)


@settings(max_examples=200, deadline=None)
@given(offset=st.one_of(st.none(), st.text(max_size=12), st.integers(-5, 10**10).map(str)),
       limit=st.one_of(st.none(), st.text(max_size=12), st.integers(-5, 2000).map(str)))
def test_paging_is_a_pair_in_bounds_or_a_400(offset, limit):
    query = {k: v for k, v in (("offset", offset), ("limit", limit)) if v is not None}
    try:
        got_offset, got_limit = paging(query, 200)
    except ApiError as exc:
        assert exc.status == 400 and "\n" not in exc.message
        return
    assert 0 <= got_offset <= 10**9 and 1 <= got_limit <= 1000
    if offset not in (None, ""):
        assert got_offset == int(offset)
    if limit not in (None, ""):
        assert got_limit == int(limit)
    else:
        assert got_limit == 200


def test_a_host_that_is_not_the_servers_name_is_refused(ui_home):
    """DNS rebinding: a page of attacker.example resolved to 127.0.0.1 sends its own name as Host."""
    app = create_app(ui_home.sessions, [ui_home.billing], hosts=["ui.example.lan"])
    client = TestClient(app)
    for host in ("attacker.example:8801", "attacker.example", "127.0.0.1.attacker.example", "localhostx:1",
                 "testserver", ""):
        response = client.get("/api/sessions", headers={"host": host})
        assert response.status_code == 400, host
        assert "not this server's name" in response.json()["error"]
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    for host in ("127.0.0.1:8801", "127.0.0.1", "localhost:8801", "LocalHost", "[::1]:8801", "[::1]",
                 "ui.example.lan:8777", "ui.example.lan"):
        assert client.get("/api/sessions", headers={"host": host}).status_code == 200, host
    # A token does not lift the check, and the check comes before the token's 401.
    guarded = TestClient(create_app(ui_home.sessions, [ui_home.billing], token=TOKEN))
    assert guarded.get("/api/sessions", params={"token": TOKEN}, headers={"host": "evil.example"}).status_code == 400
    # None (a wildcard bind, where a token is required): any name.
    assert TestClient(create_app(ui_home.sessions, [ui_home.billing], hosts=None)).get(
        "/api/sessions", headers={"host": "box.lan:8777"}).status_code == 200
