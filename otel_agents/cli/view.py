"""``otel-agents view``: multi-perspective views of a saved session."""

from __future__ import annotations

import click


@click.group()
def view() -> None:
    """Views of a saved session: agents, transcript, dialog, perspective, trace, heard, context."""
