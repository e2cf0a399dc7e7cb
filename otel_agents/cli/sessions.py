"""``otel-agents sessions``: list, show, verify, rm."""

from __future__ import annotations

import click


@click.group()
def sessions() -> None:
    """Saved sessions: list, show, verify, rm."""
