"""Credential values known from the environment, replaced wherever they occur in text.

These are the process's own secrets (``OPENAI_API_KEY``, a ``*_TOKEN``, the values of
``OTEL_EXPORTER_OTLP_HEADERS``): nothing the program records, saves or shows may hold
them, so they are replaced at the source, before a record or attribute exists. Unlike
pattern redaction (``redaction.py``), this also applies to the session directory and to
what agents' transcripts hold, so the original run and a resumed one send the same bytes.

A credential is also replaced in the forms text commonly carries it in (:func:`forms_of`):
JSON-escaped (a server echoing it in an error body, ``/`` written ``\\/`` or not),
URL-encoded, and base64 inside ``user:key`` after a ``Basic`` scheme word.
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
from typing import Mapping, NamedTuple
from urllib.parse import quote, quote_plus, unquote

MARKER = "[REDACTED]"
# Shorter values ("1", "true", "us-east-1") are settings, not credentials, and would
# replace ordinary words everywhere.
MIN_CREDENTIAL_CHARS = 8
# Upper-cased environment variable names holding one of these hold a credential.
_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE")
_SCHEMES = ("bearer ", "basic ", "token ", "digest ")

# Characters no encoding below changes: a run of them is in every form but base64 (the anchor).
_PLAIN = re.compile(r"[A-Za-z0-9_.~-]+")
_PERCENT = re.compile(r"%[0-9A-F]{2}")
# Base64 forms are looked for only after a Basic scheme word (``Basic``/``basic``), where
# Basic auth puts them: one substring test for most texts, not three per credential.
_BASIC_WORD = "asic "


class _Credential(NamedTuple):
    anchor: str  # in every text form (empty: no usable run, every form is looked for)
    forms: tuple[str, ...]  # the value and its encodings, longest first


_lock = threading.Lock()
_values: tuple[str, ...] | None = None  # longest first, so a value inside another goes second
_credentials: tuple[_Credential, ...] = ()  # of _values, in the same order
_basic_forms: tuple[str, ...] = ()  # base64 of every value, longest first
_longest_form = 0
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


def forms_of(value: str) -> tuple[str, ...]:
    """``value`` and the text forms it commonly takes, longest first: JSON-escaped (once, twice,
    with ``/`` as ``\\/``), URL-encoded (``%XX`` either case, ``+`` for a space)."""
    forms = {value}
    for text in (json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]):
        for escaped in (text, text.replace("/", "\\/")):
            forms.update((escaped, json.dumps(escaped)[1:-1]))
    for encoded in (quote(value, safe=""), quote(value), quote_plus(value), quote_plus(value, safe="/")):
        forms.update((encoded, _PERCENT.sub(lambda m: m.group().lower(), encoded)))
    return tuple(sorted(forms, key=lambda f: (-len(f), f)))


def base64_forms_of(value: str) -> tuple[str, ...]:
    """What base64 of any text holding ``value`` holds, at each of the three byte alignments
    (``user:key`` puts it anywhere): the characters its bytes alone decide (and with ``\\/``)."""
    forms = set()
    for offset in range(3):
        data = b"\0" * offset + value.encode("utf-8", "surrogatepass")
        core = base64.b64encode(data).decode()[-(-8 * offset // 6) : 8 * len(data) // 6]
        forms.update((core, core.replace("/", "\\/")))
    return tuple(sorted(forms, key=lambda f: (-len(f), f)))


def _credential(value: str) -> _Credential:
    runs = _PLAIN.findall(value)
    anchor = max(runs, key=len) if runs else ""
    return _Credential(anchor if len(anchor) >= 4 else "", forms_of(value))


def known_credentials() -> tuple[str, ...]:
    """This process's credentials: its environment's (read once) and any added."""
    global _values, _credentials, _basic_forms, _longest_form
    values = _values
    if values is None:
        with _lock:
            found = set(credentials_in(os.environ)) | _added
            values = tuple(sorted(found, key=lambda v: (-len(v), v)))
            # Every form is worked out once per set of credentials: scrubbing is on every span's path.
            _credentials = tuple(map(_credential, values))
            basic = {form for value in values for form in base64_forms_of(value)}
            _basic_forms = tuple(sorted(basic, key=lambda f: (-len(f), f)))
            _longest_form = max((len(f) for c in _credentials for f in c.forms), default=0)
            _longest_form = max(_longest_form, *map(len, _basic_forms), 0)
            _values = values
    return values


def longest_form() -> int:
    """The length of the longest form of a known credential (0: none is known)."""
    known_credentials()
    return _longest_form


def credential_free(data: bytes | bytearray, end: int | None = None) -> bool:
    """Whether no known credential occurs in ``data[:end]``: text as marshal and pickle write it (UTF-8).

    A text holding a credential holds its UTF-8 bytes, so a False here may be a false
    alarm (bytes spanning two values) but a True is never wrong: the caller may skip
    :func:`scrub_text` for every text those bytes held.
    """
    stop = len(data) if end is None else end
    known_credentials()
    needles = [form for c in _credentials for form in ((c.anchor,) if c.anchor else c.forms)]
    needles += _basic_forms
    return not any(data.find(needle.encode("utf-8", "surrogatepass"), 0, stop) >= 0 for needle in needles)


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


def scrub_text(text: str, *, any_base64: bool = False) -> str:
    """``text`` with every known credential, in any of its forms, replaced by the marker.

    Base64 forms are looked for when a Basic scheme word is in ``text``, or always with ``any_base64``
    (a piece of a stream, whose scheme word may have been in a piece already shown)."""
    if len(text) < MIN_CREDENTIAL_CHARS:
        return text
    if _values is None:
        known_credentials()
    # One substring test per credential for most texts: its anchor is in every form but base64.
    for anchor, forms in _credentials:
        if anchor in text:
            for form in forms:
                if form in text:
                    text = text.replace(form, MARKER)
    if _basic_forms and (any_base64 or _BASIC_WORD in text):
        for form in _basic_forms:
            if form in text:
                text = text.replace(form, MARKER)
    return text


class StreamScrubber:
    """Text arriving in pieces (a streamed reply), scrubbed before it is shown: a credential may
    be split across pieces, so the last ``longest_form() - 1`` characters wait for the next piece.

    Base64 forms are replaced wherever they occur: the ``Basic`` word before one may be in a piece
    already shown, and one shown before a later ``Basic`` word could not be taken back."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, text: str) -> str:
        """What of the text so far can be shown now."""
        text = scrub_text(self._held + text, any_base64=True)
        hold = longest_form() - 1
        # A credential starting before the held tail ends inside ``text``: it was replaced whole.
        cut = max(0, len(text) - hold) if hold > 0 else len(text)
        self._held = text[cut:]
        return text[:cut]

    def flush(self) -> str:
        """The text held back: the stream ended."""
        text, self._held = self._held, ""
        return scrub_text(text, any_base64=True)
