"""Secret redaction: what every copy that leaves the session directory goes through.

Two classes of secret. Credentials the process knows (environment variables, header
values; ``credentials.py``) and the values of secret-named keys (an ``Authorization``
header) are replaced at the source by :func:`scrub`, so they are written nowhere.
Pattern-labelled secrets in content (``password=...``, ``sk-...``, bearer tokens) are
what the model was sent: the session directory keeps them verbatim, so a resumed model
sees what the original run saw, and :func:`redact` replaces them in every copy that
leaves it (exporters, ``--otlp-file``, console payloads, ``--redacted-save``, billing export).

Header-like keys have their values replaced whole; key-shaped values (API keys,
bearer tokens) are replaced wherever they occur inside text, and so are the
values written after a secret key inside text (``Authorization: Basic ...``,
``api_key='...'``, ``"x-api-key": "..."``), since error messages and tool
arguments quote headers and keyword arguments verbatim.

The headers seed 002 names (``SEED_002_HEADERS``: ``authorization``, ``x-api-key``,
``x-openai-api-key``, ``x-slack-signature``, ...) are among the secret keys, and IP addresses
are masked too (``ip_masking.py``; ``OTEL_AGENTS_KEEP_IPS=true`` keeps them), and so is the
user-info of a URL (``http://user:password@host``).

Redaction is idempotent: redacting redacted data changes nothing, so a trace
can pass through it any number of times (live, on export, on import).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

from otel_agents.tracing.credentials import MARKER, scrub_text
from otel_agents.tracing.ip_masking import mask_ips

# Seed 002's redaction policy: "authorization, x-api-key, x-openai-api-key, x-slack-signature, etc."
# (the etc.: the other credential headers of the providers and of Slack's request signing).
SEED_002_HEADERS = (
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "x-openai-api-key",
    "openai-api-key",
    "x-anthropic-api-key",
    "anthropic-api-key",
    "x-goog-api-key",
    "x-slack-signature",
    "x-auth-token",
    "cookie",
    "set-cookie",
)

SECRET_KEYS = frozenset(
    {
        *SEED_002_HEADERS,
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "api_key",
        "apikey",
        "x-goog-api-key",
        "anthropic-api-key",
        "openai-api-key",
        "x-auth-token",
        "auth-token",
        "auth_token",
        "cookie",
        "set-cookie",
        "password",
        "passwd",
        "secret",
        "access_token",
        "refresh_token",
        "id_token",
        "client_secret",
        "aws_secret_access_key",
        "aws_session_token",
    }
)

# Key-shaped values, each with a literal that must occur in the text for it to match
# (checked with ``in`` first: most text holds none, and a plain substring test is far
# faster than any regex). Each regex starts with its literal, so the engine skips ahead
# quickly; the word-boundary checks are lookbehinds placed after it for the same reason.
_VALUE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (anchor, re.compile(pattern))
    for anchor, pattern in [
        # OpenAI / Anthropic / OpenRouter keys; not inside a word ("risk-...") but after digits or "_".
        ("sk-", r"sk-(?<![A-Za-z]sk-)(?:ant-|proj-|or-)?[A-Za-z0-9_\-]{16,}"),
        ("AKIA", r"AKIA(?<!\wAKIA)[0-9A-Z]{16}\b"),  # AWS access key id
        ("gh", r"gh[pousr]_(?<!\wgh._)[A-Za-z0-9]{30,}\b"),  # GitHub tokens
        ("github_pat_", r"github_pat_(?<!\wgithub_pat_)[A-Za-z0-9_]{30,}"),
        ("xox", r"xox[abpr]-(?<!\wxox.-)[A-Za-z0-9\-]{10,}"),  # Slack tokens
        ("AIza", r"AIza(?<!\wAIza)[0-9A-Za-z_\-]{35}\b"),  # Google API keys
        ("gsk_", r"gsk_(?<!\wgsk_)[A-Za-z0-9]{20,}"),  # Groq
        ("hf_", r"hf_(?<!\whf_)[A-Za-z0-9]{30,}"),  # Hugging Face
        ("xai-", r"xai-(?<!\wxai-)[A-Za-z0-9]{20,}"),  # xAI
        ("eyJ", r"eyJ(?<!\weyJ)[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),  # JWTs
    ]
)
# Case-insensitive: anchored on the lower-cased text.
_BEARER = re.compile(r"[Bb][Ee][Aa][Rr][Ee][Rr](?<![A-Za-z][Bb][Ee][Aa][Rr][Ee][Rr])\s+[A-Za-z0-9._~+/\-]{8,}=*")
# Every secret key name contains one of these (lower case).
_KEY_ANCHORS = ("auth", "key", "token", "secret", "cookie", "passw", "signature")  # spelled out in redact_text
# The shortest text any value pattern or the bearer pattern matches ("xox" + "b-" + 10,
# "bearer" + " " + 8); keyed values and cookie headers need ':' or '=' instead.
_MIN_SECRET_CHARS = 15

# Inside free text, the value written after a secret key: ``<key><quote?><: or => <quote?><value>``.
# The value may carry an auth scheme (``Basic xyz``) and ends at whitespace, a quote, a backslash
# (escaped JSON), a comma, ``;``, ``&`` or a closing bracket. Words that also occur in prose
# (password, secret, cookie) count only in code-like spellings: ``password=x``, ``"password": "x"``.
_STRONG_TEXT_KEYS = sorted(SECRET_KEYS - {"password", "passwd", "secret", "cookie"}, key=len, reverse=True)
_WEAK_TEXT_KEYS = ("password", "passwd", "secret", "cookie")
_VALUE = r"((?:(?:bearer|basic|token|digest)\s+)?(?!\[REDACTED\])[^\s\"'\\,;&}\]\)]+)"
_KEYED_VALUE = re.compile(
    r"(?i)(?<![A-Za-z0-9_\-])("
    r"(?:" + "|".join(map(re.escape, _STRONG_TEXT_KEYS)) + r")\\?[\"']?\s*[:=]\s*\\?[\"']?"
    r"|(?:" + "|".join(_WEAK_TEXT_KEYS) + r")="
    r"|\\?[\"'](?:" + "|".join(_WEAK_TEXT_KEYS) + r")\\?[\"']\s*:\s*\\?[\"']"
    r")" + _VALUE
)
# The user-info of a URL (``http://bob:pw@host``): user and password, replaced as one.
_URL_USERINFO = re.compile(r"(?<=://)[^\s/?#@\[\]\"'<>\\]+@")
# A cookie header's value runs to the end of the line (``Cookie: a=1; b=2``).
_COOKIE_HEADER = re.compile(r"(?i)(?<![A-Za-z0-9_\-])((?:set-)?cookie\s*:\s*)(?!\[REDACTED\])(?=[^\s=;]+=)[^\r\n\"\\]+")


def is_secret_key(key: str) -> bool:
    """``Authorization``, ``x-api-key``; also namespaced keys ending in one
    (``http.request.header.authorization``)."""
    if key in KNOWN_SAFE_KEYS:  # the attribute keys this project writes: one set lookup
        return False
    return _secret_key_rule(key)


def _secret_key_rule(key: str) -> bool:
    normal = key.lower()
    if " " in normal:
        normal = normal.replace(" ", "")
    if normal in SECRET_KEYS:
        return True
    dot = normal.rfind(".")
    return dot >= 0 and normal[dot + 1 :] in SECRET_KEYS


def _known_safe_keys() -> frozenset[str]:
    """Attribute keys written on every span and event here, checked against the rule once.

    Built from the names themselves (semconv, record fields bare and prefixed, resource
    and exception keys), and kept only where the rule says "not secret", so the shortcut can never
    disagree with :func:`_secret_key_rule`.
    """
    from otel_agents.tracing import semconv as sc
    from otel_agents.tracing.records import RECORD_FIELDS

    names = {value for name, value in vars(sc).items() if not name.startswith("_") and isinstance(value, str)}
    names |= {sc.total_attr(scope, key) for scope in ("self", "inclusive") for key in sc.TOTAL_KEYS}
    fields = {"message_id", "event_type", "ts", "trace_id", "span_id", *(f for fs in RECORD_FIELDS.values() for f in fs)}
    names |= fields | {sc.EVENT_FIELD_PREFIX + f for f in fields}  # records are redacted as plain dicts too
    names |= {
        "service.name", "service.version", "service.instance.id", "telemetry.sdk.language", "telemetry.sdk.name",
        "telemetry.sdk.version", "exception.type", "exception.message", "exception.stacktrace", "exception.escaped",
    }
    return frozenset(name for name in names if not _secret_key_rule(name))


KNOWN_SAFE_KEYS = _known_safe_keys()
# True for the attribute keys this project writes (none of them secret); a set's own lookup,
# without a Python call, for loops over every attribute of every span.
known_safe_key = KNOWN_SAFE_KEYS.__contains__


def redact_text(text: str) -> str:
    """``text`` as every copy that leaves the session carries it: secrets redacted, IP addresses masked."""
    return mask_ips(redact_secrets(text))


def redact_secrets(text: str) -> str:
    """``text`` with credentials and secret-shaped values redacted, addresses kept (a user's own settings
    quoted back in an error: where it points is the help, a password in it never is)."""
    text = scrub_text(text)
    # Every secret shape needs 15 characters, or a ':' or '=' (a keyed value, a cookie
    # header), and an IP address a '.' or ':': most attribute values (ids, names) are done here.
    if not text or (len(text) < _MIN_SECRET_CHARS and ":" not in text and "=" not in text and "." not in text):
        return text
    for anchor, pattern in _VALUE_PATTERNS:
        if anchor in text:
            text = pattern.sub(MARKER, text)
    lowered = text.lower()
    if "bearer" in lowered:
        text = _BEARER.sub(MARKER, text)
    if "://" in text and "@" in text:
        text = _URL_USERINFO.sub(MARKER + "@", text)
    if (
        "auth" in lowered or "key" in lowered or "token" in lowered
        or "secret" in lowered or "cookie" in lowered or "passw" in lowered or "signature" in lowered
    ):
        if "cookie" in lowered:
            text = _COOKIE_HEADER.sub(lambda m: m.group(1) + MARKER, text)
        text = _KEYED_VALUE.sub(lambda m: m.group(1) + MARKER, text)
    return text


def redact_text_once(text: str, seen: dict[str, str]) -> str:
    """:func:`redact_text`, each text once per ``seen``: a batch (a run's ledger records, an
    export's spans) repeats most of its texts. ``seen`` lives no longer than the batch, so
    credentials learned meanwhile apply to the next one."""
    redacted = seen.get(text)
    if redacted is None:
        redacted = seen[text] = redact_text(text)
    return redacted


def redact(value: Any) -> Any:
    """Redact strings, and mappings/sequences recursively (secret keys lose their values).

    A ``(name, value)`` pair whose name is a secret key (a header list) loses its value too.
    """
    return _walk(value, redact_text)


def scrub(value: Any) -> Any:
    """:func:`redact` of the source: known credentials and secret keys' values only."""
    return _walk(value, scrub_text)


def _walk(value: Any, text: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        return {k: (MARKER if isinstance(k, str) and is_secret_key(k) else _walk(v, text)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if len(value) == 2 and isinstance(value[0], str) and is_secret_key(value[0]):
            pair = [value[0], MARKER]
            return tuple(pair) if isinstance(value, tuple) else pair
        items = [_walk(v, text) for v in value]
        return tuple(items) if isinstance(value, tuple) else items
    if isinstance(value, (bytes, bytearray)):
        decoded = bytes(value).decode("utf-8", "surrogateescape")
        changed = text(decoded)
        return value if changed == decoded else changed.encode("utf-8", "surrogateescape")
    return value


def redact_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Span/event attributes: values of secret keys replaced whole, all other values redacted."""
    return _walk_attributes(attributes, redact_text)


def scrub_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`redact_attributes` of the source (see :func:`scrub`)."""
    return _walk_attributes(attributes, scrub_text)


def _walk_attributes(attributes: Mapping[str, Any], text: Callable[[str], str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        if is_secret_key(key):
            out[key] = MARKER
        elif type(value) is str:  # the common case, without _walk's dispatch
            out[key] = text(value)
        elif type(value) in _SCALARS:
            out[key] = value
        else:
            out[key] = _walk(value, text)
    return out


_SCALARS = frozenset({int, float, bool, type(None)})

