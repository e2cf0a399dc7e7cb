"""Python apps for the CLI: ``package.module:factory`` imported into a root agent and its hooks.

The factory takes no arguments and returns the session's root ``otel_agents.Agent``, or a
pair ``(agent, hooks)``; the module is looked up on ``sys.path`` and in the current directory.
``run --app`` records the reference on each run's root span (``otel_agents.run.app``) so
``resume`` imports the same app and gives the restored agents its tools and hooks again.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from typing import Any


class AppError(ValueError):
    """An app reference that cannot be imported or does not give an agent; the message is one line."""


@dataclass(frozen=True)
class App:
    reference: str
    agent: Any  # otel_agents.api.Agent
    hooks: tuple[Any, ...] = ()


def load_app(reference: str) -> App:
    """Import ``module:factory``, call the factory, and check what it returned."""
    from otel_agents.api import Agent
    from otel_agents.api_checks import hooks_of

    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise AppError(f"app {reference!r} is not of the form package.module:factory")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as uvicorn does: an app in the current directory imports (console script too)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # an app's import can fail any way; name the app and the cause
        raise AppError(f"cannot import app {reference!r}: {type(exc).__name__}: {_one_line(exc)}") from None
    factory = module
    for part in attribute.split("."):
        factory = getattr(factory, part, None)
    if not callable(factory):
        raise AppError(f"app {reference!r}: {module_name} has no callable {attribute!r}")
    try:
        made = factory()
    except Exception as exc:
        raise AppError(f"app {reference!r}: its factory raised {type(exc).__name__}: {_one_line(exc)}") from None
    agent, hooks = made if isinstance(made, tuple) and len(made) == 2 else (made, ())
    if not isinstance(agent, Agent):
        raise AppError(f"app {reference!r}: its factory returned {type(agent).__name__}, not an otel_agents.Agent")
    try:
        return App(reference, agent, hooks_of(f"app {reference!r}", hooks))
    except TypeError as exc:
        raise AppError(str(exc)) from None


def reimport_app(reference: str) -> App:
    """The app a saved session was started with, for ``otel_agents.resume``; ``ResumeError`` if it cannot be."""
    from otel_agents.restore import ResumeError

    try:
        return load_app(reference)
    except AppError as exc:
        raise ResumeError(f"{exc} (pass tools= and hooks= to resume without it)") from None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or "(no message)"
