"""``otel-agents billing``: summary, export, rebuild."""

from __future__ import annotations

import click


@click.group()
def billing() -> None:
    """The billing ledger: summary, export, rebuild."""
