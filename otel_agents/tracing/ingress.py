"""Ingress metadata (seed 002): where a run came from, as attributes of its root span."""

from __future__ import annotations

import getpass
import os
import socket
import sys
from typing import Any, Mapping, Sequence

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.credentials import MARKER
from otel_agents.tracing.redaction import is_secret_key, redact_secrets
from otel_agents.version import __version__


# Option and variable names whose value is a credential: the registry's secret keys, and any
# name ending in one of these words (``--openai-api-key``, ``GITHUB_TOKEN``; not ``--max-tokens``).
_SECRET_ENDINGS = ("key", "token", "secret", "password", "passwd", "credentials")


def redacted_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` with secrets replaced: key-shaped values anywhere, the value of a secret-named
    ``NAME=VALUE``, and the argument after a secret-named option (``--api-key VALUE``), which
    has no shape to be recognised by. IP addresses are kept, as the session keeps the run's api
    base: copies that leave the session mask them (``redaction.redact_text``)."""
    out: list[str] = []
    secret_value_next = False
    for arg in map(str, argv):
        if secret_value_next:
            out.append(MARKER)
            secret_value_next = False
            continue
        name, equals, _ = arg.partition("=")
        if equals and " " not in name and secret_name(name):
            out.append(f"{name}={MARKER}")
            continue
        secret_value_next = arg.startswith("-") and not equals and secret_name(arg)
        out.append(redact_secrets(arg))
    return out


def secret_name(option: str) -> bool:
    """True for an option or variable name that introduces a credential."""
    name = option.lstrip("-").lower().replace("-", "_")
    return bool(name) and (is_secret_key(name) or name.endswith(_SECRET_ENDINGS))


def _user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a uid with no passwd entry (containers) and no $USER
        return None


def ingress_attributes(argv: Sequence[str] | None = None, sender: str | None = None,
                       keep_argv: bool = True) -> dict[str, Any]:
    """The root-span attributes of a run started by this process (``sender``: who delivered
    an outside event, for ``send``/``--watch``). Absent facts are left out, never guessed;
    ``keep_argv`` off (``--redacted-save``) leaves out the command line, which holds the prompts."""
    attributes: dict[str, Any] = {
        sc.INGRESS_CWD: os.getcwd(),
        sc.INGRESS_ARGV: redacted_argv(sys.argv if argv is None else argv) if keep_argv else None,
        sc.INGRESS_PID: os.getpid(),
        sc.INGRESS_USER: _user(),
        sc.INGRESS_HOST: socket.gethostname(),
        sc.INGRESS_VERSION: __version__,
        sc.INGRESS_SENDER: sender,
    }
    return {key: value for key, value in attributes.items() if value is not None}


def ingress_of(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """The ingress fields of a root span's attributes, by short name (``cwd``, ``argv``, ...)."""
    return {key.rsplit(".", 1)[1]: attributes[key] for key in sc.INGRESS_KEYS if key in attributes}
