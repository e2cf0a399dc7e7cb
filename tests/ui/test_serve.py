"""``otel-agents ui`` as served: the printed URL opens the page whatever characters the token holds."""

from __future__ import annotations

import signal
import subprocess
import sys
import urllib.error
import urllib.request
from http.cookies import SimpleCookie

import pytest
from starlette.testclient import TestClient

from otel_agents.ui.app import create_app
from otel_agents.ui.security import TOKEN_COOKIE
from otel_agents.ui.serve import page_url  # noqa
from support.ui_sessions import LOCAL, clean_env

# Characters that mean something in a query (+ & = #), end a cookie or add attributes to it (; ,), need quoting
# in one (space, "), or are not ASCII.
ODD_TOKENS = ["a+b", "tok&x=1", "p#1", "x;y", "t; Domain=attacker.example", 'q"u o,t=e', "%41%", "päss wörd"]


@pytest.mark.parametrize("token", ODD_TOKENS)
def test_the_url_and_the_cookie_carry_any_token(ui_home, token):
    app = create_app(ui_home.sessions, [ui_home.billing], token=token)
    client = TestClient(app, base_url=LOCAL)
    url = page_url("127.0.0.1", 8777, token)
    first = client.get(url.removeprefix("http://127.0.0.1:8777"))
    assert first.status_code == 200, url
    set_cookie = first.headers["set-cookie"]
    # One cookie, with our attributes only: nothing of the token became an attribute.
    parsed = SimpleCookie()
    parsed.load(set_cookie)
    assert list(parsed) == [TOKEN_COOKIE]
    assert parsed[TOKEN_COOKIE]["domain"] == "" and set_cookie.endswith("; HttpOnly; SameSite=Strict; Path=/")

    def fresh(headers):
        return TestClient(app, base_url=LOCAL).get("/api/sessions", headers=headers).status_code

    assert fresh({"cookie": f"{TOKEN_COOKIE}={parsed[TOKEN_COOKIE].value}"}) == 200
    assert fresh({"authorization": f"Bearer {token}".encode()}) == 200
    assert fresh({"cookie": f"{TOKEN_COOKIE}=x"}) == 401


def test_the_printed_url_of_a_real_server_opens_the_page(tmp_path):
    (tmp_path / "home" / "sessions").mkdir(parents=True)
    token = "a+b&x=1#;y"
    process = subprocess.Popen([sys.executable, "-m", "otel_agents", "ui", "--port", "0", "--token", token],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=clean_env(tmp_path / "home"))
    try:
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and "#" not in url and "&" not in url, url
        with urllib.request.urlopen(url, timeout=10) as answer:
            assert answer.status == 200
            cookie = answer.headers["set-cookie"].split(";")[0]
        api = url.split("?")[0] + "api/sessions"
        with urllib.request.urlopen(urllib.request.Request(api, headers={"cookie": cookie}), timeout=10) as answer:
            assert answer.status == 200
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(api, timeout=10)
        assert refused.value.code == 401
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(20) == 0


def _status(url: str, headers: dict[str, str]) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.parametrize("args, other_name", [
    ([], 400), (["--host", "127.0.0.2"], 400), (["--host", "0.0.0.0", "--token", "t"], 200),
])
def test_a_real_server_answers_only_its_own_names_unless_bound_to_every_address(tmp_path, args, other_name):
    """On loopback a page of another name (DNS rebinding) is refused; a wildcard bind is reached by names no
    one can list, so there the required token guards it."""
    (tmp_path / "home" / "sessions").mkdir(parents=True)
    process = subprocess.Popen([sys.executable, "-m", "otel_agents", "ui", "--port", "0", *args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=clean_env(tmp_path / "home"))
    try:
        printed = process.stdout.readline().strip().split("?")[0]
        port = printed.split(":")[2].split("/")[0]
        api = printed + "api/sessions"
        auth = {"authorization": "Bearer t"}
        assert _status(api, auth) == 200  # the name the URL gives (--host's)
        assert _status(api, {**auth, "host": f"attacker.example:{port}"}) == other_name
        for name in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
            assert _status(api, {**auth, "host": name}) == 200, name
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(20) == 0


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_stopping_with_a_live_stream_open_is_quick_and_quiet(own_home, signum):
    """An open session page holds a server-sent event stream: stopping waited out the graceful timeout, then
    printed a ~60-line traceback of the cancelled stream."""
    import socket
    import time

    process = subprocess.Popen([sys.executable, "-m", "otel_agents", "ui", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(own_home.home))
    try:
        port = int(process.stdout.readline().strip().split(":")[2].split("/")[0])
        stream = socket.create_connection(("127.0.0.1", port), timeout=10)
        stream.sendall(f"GET /api/sessions/{own_home.demo}/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        received = b""
        while b"event: status" not in received:  # the stream is running
            received += stream.recv(65536)
        asked = time.monotonic()
        process.send_signal(signum)
        assert process.wait(20) == 0
        took = time.monotonic() - asked
        stream.close()
    finally:
        if process.poll() is None:
            process.kill()
    errors = process.stderr.read()
    assert len(errors.splitlines()) <= 1, errors
    assert took < 1.5, f"{took:.1f} s to stop"
