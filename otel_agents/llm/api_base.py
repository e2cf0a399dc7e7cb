"""The api base a run records (its secrets redacted), and the one a resumed, sent-to or forked session goes on with."""

from __future__ import annotations

import base64
from urllib.parse import unquote, unquote_plus, urlsplit, urlunsplit

from otel_agents.tracing.credentials import MARKER, scrub_text
from otel_agents.tracing.ip_masking import IP_MARKER
from otel_agents.tracing.redaction import is_secret_key

# Query keys that carry credentials in practice (``?key=``, ``?sig=`` of a signed URL, ``?access_token=``),
# beyond the secret header names: a query is the usual place to put a key when no header can be set.
_SECRET_QUERY_WORDS = ("key", "token", "secret", "auth", "pass", "sig", "credential", "session", "code")


class ApiBaseError(ValueError):
    """The recorded api base cannot be gone on with (a secret of it was not recorded); the message says why."""


def sent_api_base(api_base: str) -> tuple[str, dict[str, str]]:
    """``api_base`` without its ``user:password@``, and the headers that send them (HTTP Basic), as curl and
    httpx send a URL's credentials. litellm's async transport (aiohttp) refuses a URL with credentials next to
    the provider's own ``Authorization`` header, before sending anything: no request could ever go out."""
    try:
        parts = urlsplit(api_base)
        user, password = parts.username, parts.password
    except ValueError:  # not a URL urllib can take apart: sent as given, for the provider to judge
        return api_base, {}
    if user is None and password is None:
        return api_base, {}
    host = parts.netloc.rpartition("@")[2]
    pair = f"{unquote(user or '')}:{unquote(password or '')}".encode("utf-8")
    token = base64.b64encode(pair).decode("ascii")
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)), {"Authorization": f"Basic {token}"}


def recorded_api_base(api_base: str) -> str:
    """``api_base`` as a run's span records it: a user-info password, secret-named query values and the
    fragment replaced or dropped, known credentials scrubbed. The rest is kept verbatim (addresses too:
    the session directory keeps them, exports mask them), so a resume can go back to it."""
    try:
        parts = urlsplit(api_base)
        netloc = parts.netloc
        if parts.password is not None:  # user:password@host -> user:[REDACTED]@host
            user_info, _, host = netloc.rpartition("@")
            netloc = f"{user_info.partition(':')[0]}:{MARKER}@{host}"
        query = "&".join(_recorded_query_item(item) for item in parts.query.split("&")) if parts.query else ""
        text = urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    except ValueError:  # not a URL urllib can take apart: only what scrubbing finds is removed
        text = api_base
    return scrub_text(text)


def _recorded_query_item(item: str) -> str:
    """One ``key=value`` of a query, its value replaced when the key names a secret; others kept byte for byte."""
    key, equals, _ = item.partition("=")
    name = unquote_plus(key)
    secret = is_secret_key(name) or any(word in name.lower() for word in _SECRET_QUERY_WORDS)
    return f"{key}={MARKER}" if equals and secret else item


def carried_api_base(given: str | None, recorded: str | None, session_id: str) -> str | None:
    """The api base a session goes on with: ``given`` (``--api-base``; ``''`` is the provider's default
    endpoint), else the one its last run recorded. A recorded one with a secret redacted is refused,
    rather than sending the conversation (and the key) somewhere else."""
    if given is not None:
        return given or None
    if recorded and MARKER in recorded:
        raise ApiBaseError(
            f"session {session_id} ran on api base {recorded}, recorded without its secret: "
            "pass --api-base (api_base=) again"
        )
    if recorded and IP_MARKER in recorded:  # a trace that came back through an export, its address masked
        raise ApiBaseError(f"session {session_id} ran on api base {recorded}, recorded without its address: "
                           "pass --api-base (api_base=) again")
    return recorded or None
