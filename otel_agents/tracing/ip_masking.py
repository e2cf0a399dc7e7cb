"""IP addresses masked in every copy that leaves the session directory (seed 002), unless ``OTEL_AGENTS_KEEP_IPS``.

Candidates are found by shape and confirmed by :mod:`ipaddress`, so clock times (``12:04:13``),
versions (``1.45.2``) and code scopes (``std::map``, ``a::b``: IPv6 needs a digit here) are left alone. The marker holds no address,
so masking masked text changes nothing (redaction must be idempotent).
"""

from __future__ import annotations

import ipaddress
import os
import re

IP_MARKER = "[IP]"
KEEP_IPS_ENV = "OTEL_AGENTS_KEEP_IPS"

# Four dotted numbers, not part of a longer dotted run (a 5-part version, a 4-part one after a word).
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
# Hex groups and at least two colons, not inside a word; ipaddress decides.
_IPV6 = re.compile(r"(?<![\w:.])(?=[0-9A-Fa-f:]*\d)[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![\w:])")

_keep: bool | None = None


def keep_ips() -> bool:
    """``OTEL_AGENTS_KEEP_IPS=true`` (1/yes/on): addresses stay as they are. Read once per process."""
    global _keep
    if _keep is None:
        _keep = (os.environ.get(KEEP_IPS_ENV) or "").strip().lower() in {"1", "true", "yes", "on"}
    return _keep


def reload_ip_setting() -> None:
    """Read ``OTEL_AGENTS_KEEP_IPS`` again (tests that change it in one process)."""
    global _keep
    _keep = None


def _valid_v4(match: re.Match[str]) -> str:
    return IP_MARKER if all(int(part) <= 255 for part in match.group(0).split(".")) else match.group(0)


def _valid_v6(match: re.Match[str]) -> str:
    try:
        ipaddress.IPv6Address(match.group(0))
    except ValueError:
        return match.group(0)
    return IP_MARKER


def mask_ips(text: str) -> str:
    """``text`` with IPv4 and IPv6 addresses replaced by the marker (unless kept)."""
    if len(text) < 3 or keep_ips():
        return text
    if "." in text:
        text = _IPV4.sub(_valid_v4, text)
    if ":" in text and text.count(":") >= 2:
        text = _IPV6.sub(_valid_v6, text)
    return text
