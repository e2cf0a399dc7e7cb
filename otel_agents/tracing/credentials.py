"""Credential values known from the environment, replaced wherever they occur in text.

These are the process's own secrets (``OPENAI_API_KEY``, a ``*_TOKEN``, the values of
``OTEL_EXPORTER_OTLP_HEADERS``): nothing the program records, saves or shows may hold
them, so they are replaced at the source, before a record or attribute exists. Unlike
pattern redaction (``redaction.py``), this also applies to the session directory and to
what agents' transcripts hold, so the original run and a resumed one send the same bytes.
"""

from __future__ import annotations

import os
import threading
from typing import Mapping
from urllib.parse import unquote

MARKER = "[REDACTED]"
# Shorter values ("1", "true", "us-east-1") are settings, not credentials, and would
# replace ordinary words everywhere.
MIN_CREDENTIAL_CHARS = 8
# Upper-cased environment variable names holding one of these hold a credential.
_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE")
_SCHEMES = ("bearer ", "basic ", "token ", "digest ")

_lock = threading.Lock()
_values: tuple[str, ...] | None = None  # longest first, so a value inside another goes second
_added: set[str] = set()


def _usable(value: str) -> bool:
    value = value.strip()
    # Paths (SSH_AUTH_SOCK, GOOGLE_APPLICATION_CREDENTIALS) and URLs name where a secret is, not the secret.
    return (
        len(value) >= MIN_CREDENTIAL_CHARS
        and value not in MARKER
        and not value.startswith(("/", "~", "./", "http://", "https://"))
    )


def _header_values(text: str) -> list[str]:
    """Values of an OTLP headers variable: ``k1=v1,k2=Bearer v2`` (URL-encoded)."""
    out = []
    for item in text.split(","):
        _, _, value = item.partition("=")
        value = unquote(value).strip()
        out.append(value)
        if value.lower().startswith(_SCHEMES):
            out.append(value.split(None, 1)[1] if len(value.split(None, 1)) == 2 else "")
    return out


def credentials_in(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The credential values an environment holds, longest first."""
    found: set[str] = set()
    for name, value in environ.items():
        upper = name.upper()
        if upper.endswith("HEADERS"):
            found.update(v for v in _header_values(value) if _usable(v))
        elif any(part in upper for part in _NAME_PARTS) and _usable(value):
            found.add(value.strip())
    return tuple(sorted(found, key=lambda v: (-len(v), v)))


def known_credentials() -> tuple[str, ...]:
    """This process's credentials: its environment's (read once) and any added."""
    global _values
    values = _values
    if values is None:
        with _lock:
            found = set(credentials_in(os.environ)) | _added
            values = _values = tuple(sorted(found, key=lambda v: (-len(v), v)))
    return values


def credential_free(data: bytes | bytearray, end: int | None = None) -> bool:
    """Whether no known credential occurs in ``data[:end]``: text as marshal and pickle write it (UTF-8).

    A text holding a credential holds its UTF-8 bytes, so a False here may be a false
    alarm (bytes spanning two values) but a True is never wrong: the caller may skip
    :func:`scrub_text` for every text those bytes held.
    """
    stop = len(data) if end is None else end
    return not any(data.find(value.encode("utf-8", "surrogatepass"), 0, stop) >= 0 for value in known_credentials())


def add_credential(value: str | None) -> None:
    """A credential the program was handed another way (an API key option)."""
    global _values
    if value and _usable(value):
        with _lock:
            _added.add(value.strip())
            _values = None


def reload_credentials() -> None:
    """Read the environment again (tests that change it in one process)."""
    global _values
    with _lock:
        _values = None


def scrub_text(text: str) -> str:
    """``text`` with every known credential replaced by the marker."""
    if len(text) < MIN_CREDENTIAL_CHARS:
        return text
    for value in _values if _values is not None else known_credentials():
        if value in text:
            text = text.replace(value, MARKER)
    return text
