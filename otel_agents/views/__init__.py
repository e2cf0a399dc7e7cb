"""Multi-perspective views of a saved session (seed 001): agents, transcripts, dialog,
perspectives, causality, content references and the exact context of any LLM attempt."""

from otel_agents.views.errors import (
    AmbiguousAgent,
    AmbiguousMessage,
    SessionDataError,
    UnknownAgent,
    UnknownMessage,
    UnknownSpan,
    ViewError,
)
from otel_agents.views.viewer import SessionViewer

__all__ = [
    "AmbiguousAgent",
    "AmbiguousMessage",
    "SessionDataError",
    "SessionViewer",
    "UnknownAgent",
    "UnknownMessage",
    "UnknownSpan",
    "ViewError",
]
