"""Whether an imported value is a redacted copy of a saved one: equal but where it holds a redaction marker."""

from __future__ import annotations

import re
from typing import Any

from otel_agents.tracing.credentials import MARKER
from otel_agents.tracing.ip_masking import IP_MARKER

_MARKERS = re.compile(f"({re.escape(MARKER)}|{re.escape(IP_MARKER)})")


def is_redacted_copy(saved: Any, copy: Any) -> bool:
    """True when ``copy`` is ``saved`` with some of its text replaced by ``[REDACTED]`` or ``[IP]``: what an
    ``--otlp-file`` or exporter copy of a saved session holds (redaction.py), never anything the saved one lacks.

    Mappings must have the same keys and sequences the same length; a marker stands for any non-empty text.
    """
    if saved == copy or copy == MARKER:  # a secret key's value is replaced whole, whatever it was
        return True
    if isinstance(saved, str) and isinstance(copy, str):
        return _fills(saved, _MARKERS.split(copy))
    if isinstance(saved, dict) and isinstance(copy, dict):
        return saved.keys() == copy.keys() and all(is_redacted_copy(saved[k], copy[k]) for k in saved)
    if isinstance(saved, (list, tuple)) and isinstance(copy, (list, tuple)):
        return len(saved) == len(copy) and all(is_redacted_copy(a, b) for a, b in zip(saved, copy))
    return False


def _fills(saved: str, parts: list[str]) -> bool:
    """Whether ``saved`` is the texts of ``parts`` (text, marker, text, ..., text) with something non-empty
    for each marker. Each text taken where it first fits: linear, where a pattern of ``.+?`` could backtrack."""
    texts = parts[::2]
    if len(texts) == 1:
        return False  # no marker, and not equal
    first, *middle, last = texts
    if not saved.startswith(first):
        return False
    at = len(first)
    for text in middle:
        found = saved.find(text, at + 1)
        if found < 0:
            return False
        at = found + len(text)
    return len(saved) - len(last) >= at + 1 and saved.endswith(last)
