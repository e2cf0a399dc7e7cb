"""Secret redaction applied before anything leaves the process.

Header-like keys have their values replaced whole; key-shaped values (API keys,
bearer tokens) are replaced wherever they occur inside text.
"""

from __future__ import annotations

import re
from typing import Any

MARKER = "[REDACTED]"

SECRET_KEYS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "api_key",
        "apikey",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
        "password",
        "secret",
        "access_token",
        "refresh_token",
        "client_secret",
    }
)

_VALUE_PATTERNS = re.compile(
    r"|".join(
        [
            r"\bsk-(?:ant-|proj-|or-)?[A-Za-z0-9_\-]{16,}",  # OpenAI / Anthropic / OpenRouter keys
            r"\b[Bb][Ee][Aa][Rr][Ee][Rr]\s+[A-Za-z0-9._~+/\-]{8,}=*",
            r"\bAKIA[0-9A-Z]{16}\b",  # AWS access key id
            r"\bgh[pousr]_[A-Za-z0-9]{30,}\b",  # GitHub tokens
            r"\bxox[abpr]-[A-Za-z0-9\-]{10,}",  # Slack tokens
            r"\bAIza[0-9A-Za-z_\-]{35}\b",  # Google API keys
        ]
    )
)


def is_secret_key(key: str) -> bool:
    return key.lower().replace(" ", "") in SECRET_KEYS


def redact_text(text: str) -> str:
    if not text:
        return text
    return _VALUE_PATTERNS.sub(MARKER, text)


def redact(value: Any) -> Any:
    """Redact strings, and mappings/sequences recursively (secret keys lose their values)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: (MARKER if isinstance(k, str) and is_secret_key(k) else redact(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    if isinstance(value, tuple):
        return tuple(redact(v) for v in value)
    return value
