"""otel-agents: a multi-agent LLM runtime in which everything that happens is an OpenTelemetry span.

Importing this package is cheap: the public names below load on first use, and litellm is
imported only where an LLM is called. docs/python-api.md describes each of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from otel_agents.version import __version__

if TYPE_CHECKING:
    from otel_agents.api import Agent, Session
    from otel_agents.api_resume import resume
    from otel_agents.api_recording import recording
    from otel_agents.api_fork import fork
    from otel_agents.forking import ForkError
    from otel_agents.exporter import SessionExporter
    from otel_agents.llm.budget import Budget, BudgetExhausted
    from otel_agents.llm.model_settings import ModelSettings
    from otel_agents.llm.scripts import ScriptError
    from otel_agents.restore import ResumeError
    from otel_agents.runtime.agent_approval import agent_approval_hook
    from otel_agents.runtime.eviction import EvictionPolicy
    from otel_agents.runtime.logged_string import LoggedString
    from otel_agents.runtime.hooks import (
        ApprovalHook,
        Decision,
        HookFailed,
        RemindHook,
        ReviewHook,
        ToolRequest,
        TransformHook,
        approval,
        remind,
        reset,
        review,
        transform,
    )
    from otel_agents.runtime.tools import Tool, ToolContext, tool
    from otel_agents.session_recording import RecordingError, SessionExists
    from otel_agents.views.viewer import SessionViewer

# public name -> the module that defines it (loaded by __getattr__ on first use)
_HOMES = {
    "recording": "otel_agents.api_recording",
    "Session": "otel_agents.api",
    "Agent": "otel_agents.api",
    "resume": "otel_agents.api_resume",
    "fork": "otel_agents.api_fork",
    "ModelSettings": "otel_agents.llm.model_settings",
    "Budget": "otel_agents.llm.budget",
    "BudgetExhausted": "otel_agents.llm.budget",
    "tool": "otel_agents.runtime.tools",
    "Tool": "otel_agents.runtime.tools",
    "ToolContext": "otel_agents.runtime.tools",
    "LoggedString": "otel_agents.runtime.logged_string",
    "approval": "otel_agents.runtime.hooks",
    "review": "otel_agents.runtime.hooks",
    "transform": "otel_agents.runtime.hooks",
    "reset": "otel_agents.runtime.hooks",
    "remind": "otel_agents.runtime.hooks",
    "RemindHook": "otel_agents.runtime.hooks",
    "agent_approval_hook": "otel_agents.runtime.agent_approval",
    "ApprovalHook": "otel_agents.runtime.hooks",
    "ReviewHook": "otel_agents.runtime.hooks",
    "TransformHook": "otel_agents.runtime.hooks",
    "Decision": "otel_agents.runtime.hooks",
    "HookFailed": "otel_agents.runtime.hooks",
    "ToolRequest": "otel_agents.runtime.hooks",
    "EvictionPolicy": "otel_agents.runtime.eviction",
    "RecordingError": "otel_agents.session_recording",
    "SessionExists": "otel_agents.session_recording",
    "ScriptError": "otel_agents.llm.scripts",
    "ResumeError": "otel_agents.restore",
    "ForkError": "otel_agents.forking",
    "SessionExporter": "otel_agents.exporter",
    "SessionViewer": "otel_agents.views.viewer",
}

__all__ = ["__version__", *_HOMES]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'otel_agents' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
