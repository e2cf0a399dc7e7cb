"""What every request passes: GET/HEAD only, the token, security headers, and checked ids and paging."""

from __future__ import annotations

import hmac
import re
from http.cookies import CookieError, SimpleCookie
from typing import Iterable, Mapping
from urllib.parse import parse_qs, quote

from starlette.datastructures import MutableHeaders
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from otel_agents.tracing.records import is_message_id
from otel_agents.tracing.session_ids import valid_session_id

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}
TOKEN_COOKIE = "otel_agents_ui_token"
ALLOWED_METHODS = ("GET", "HEAD")
SPAN_ID = re.compile(r"^[0-9a-f]{16}$")
AGENT_NAME = re.compile(r"^[^\x00-\x1f/]{1,200}$")  # an id, a name or a path like main/Jill: no control characters
MAX_LIMIT = 1000


class ApiError(Exception):
    """A request refused with ``{"error": message}`` and this status."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def check_session_id(value: str) -> str:
    if not valid_session_id(value):
        raise ApiError(400, f"malformed session id {value[:80]!r}")
    return value


def check_span_id(value: str) -> str:
    if not SPAN_ID.match(value):
        raise ApiError(400, f"malformed span id {value[:80]!r}: 16 lowercase hex digits expected")
    return value


def check_message_id(value: str) -> str:
    if not is_message_id(value) or len(value) > 40:
        raise ApiError(400, f"malformed message id {value[:80]!r}: msg_<digits> expected")
    return value


def check_span_or_message_id(value: str) -> str:
    """What ``view context`` takes: a span id or a message id; anything else is malformed, not unknown."""
    if not SPAN_ID.match(value) and not (is_message_id(value) and len(value) <= 40):
        raise ApiError(400, f"malformed span or message id {value[:80]!r}: 16 lowercase hex digits or msg_<digits> "
                            "expected")
    return value


def check_agent(value: str) -> str:
    if not AGENT_NAME.match(value) and not ("/" in value and all(AGENT_NAME.match(p) for p in value.split("/"))):
        raise ApiError(400, f"malformed agent {value[:80]!r}")
    return value


def paging(query: Mapping[str, str], default_limit: int) -> tuple[int, int]:
    """``offset`` and ``limit`` from the query: integers, offset >= 0, 1 <= limit <= MAX_LIMIT."""
    out = []
    for name, default, low in (("offset", 0, 0), ("limit", default_limit, 1)):
        raw = query.get(name)
        if raw is None or raw == "":
            out.append(default)
            continue
        if not re.fullmatch(r"[0-9]{1,9}", raw) or not (low <= int(raw) <= (MAX_LIMIT if name == "limit" else 10**9)):
            bound = f"1..{MAX_LIMIT}" if name == "limit" else "a whole number >= 0"
            raise ApiError(400, f"bad {name} {raw[:40]!r}: {bound} expected")
        out.append(int(raw))
    return out[0], out[1]


LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def host_name(value: str) -> str:
    """A Host header's or an address's name, without the port, lowercase, IPv6 in brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value.split("]")[0] + "]"
    if value.count(":") > 1:  # a bare IPv6 address
        return f"[{value}]"
    return value.split(":")[0].rstrip(".")


TRAVERSAL = "malformed path: no '..' segments or encoded slashes in an id"


def is_traversal(scope: Scope) -> bool:
    """A path that tries to climb out of an id (``..``, ``%2F``, ``%5C``): malformed rather than unknown."""
    raw = (scope.get("raw_path") or scope.get("path", "").encode()).decode("latin-1").lower()
    return "%2f" in raw or "%5c" in raw or any(part in ("..", ".") for part in scope.get("path", "").split("/"))


class Guard:
    """ASGI middleware: security headers on every response, only GET/HEAD, a Host that names this server,
    the token when one is set, and no path that climbs out of an id.

    The token is accepted as ``Authorization: Bearer T``, as the cookie, or as ``?token=T``
    (a first page load), which is answered with the cookie so the page's own requests carry it.
    ``hosts``: the names a request's Host may give besides the loopback ones (any port), or None for any
    name (a wildcard bind, where the token is required anyway).
    """

    def __init__(self, app: ASGIApp, token: str | None = None, hosts: Iterable[str] | None = ()):
        self.app = app
        self.token = token
        self.hosts = None if hosts is None else {*LOOPBACK_NAMES, *(host_name(h) for h in hosts)}
        # The cookie holds the token percent-encoded: a raw ``;`` would end it (or add attributes) and
        # ``,``, ``"`` or a space would not survive the cookie parsers; the encoding is only ASCII letters,
        # digits, ``%-._~``, which every parser keeps as they are.
        self.cookie = quote(token, safe="") if token is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
                if set_cookie:
                    headers.append("set-cookie", f"{TOKEN_COOKIE}={self.cookie}; HttpOnly; SameSite=Strict; Path=/")
            await send(message)

        set_cookie = False
        # DNS rebinding: a page of attacker.example whose name now resolves to 127.0.0.1 sends its own name
        # as Host. The name is what it cannot fake; the port is not checked (an ssh tunnel may change it).
        host = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == b"host"), "")
        if self.hosts is not None and host_name(host) not in self.hosts:
            await error_response(400, f"host {host[:80]!r} is not this server's name: open the URL printed by "
                                      "`otel-agents ui`")(scope, receive, send_with_headers)
            return
        if scope["method"] not in ALLOWED_METHODS:
            response = error_response(405, f"method {scope['method']} not allowed: this server is read-only",
                                      {"allow": ", ".join(ALLOWED_METHODS)})
            await response(scope, receive, send_with_headers)
            return
        if self.token is not None:
            how = self._presented(scope)
            if how is None:
                await error_response(401, "a token is required: open the URL printed by `otel-agents ui`")(
                    scope, receive, send_with_headers)
                return
            set_cookie = how == "query"
        if is_traversal(scope):  # before routing: a redirect or a route must never see it first
            await error_response(400, TRAVERSAL)(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    def _presented(self, scope: Scope) -> str | None:
        """How the right token came (header, cookie or query), or None."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        auth = headers.get("authorization", "")
        # A header's bytes are the token's UTF-8 bytes: undo the latin-1 decoding before comparing.
        scheme, _, credentials = auth.partition(" ")
        # HTTP auth schemes are case-insensitive (RFC 9110 11.1): "bearer T" is "Bearer T".
        if scheme.lower() == "bearer" and self._right(credentials.strip().encode("latin-1"), self.token):
            return "header"
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except CookieError:  # a malformed cookie header is no token
            cookie = SimpleCookie()
        if TOKEN_COOKIE in cookie and self._right(cookie[TOKEN_COOKIE].value.encode("latin-1"), self.cookie):
            return "cookie"
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), encoding="utf-8", errors="surrogateescape")
        if any(self._right(value.encode("utf-8", "surrogateescape"), self.token) for value in query.get("token", [])):
            return "query"
        return None

    @staticmethod
    def _right(presented: bytes, expected: str) -> bool:
        return hmac.compare_digest(presented, expected.encode("utf-8"))
