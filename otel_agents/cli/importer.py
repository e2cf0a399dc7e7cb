"""``otel-agents import``: OTLP/JSON and Jaeger JSON files into session directories and the ledger."""

from __future__ import annotations

import click


@click.command(name="import")
@click.argument("files", nargs=-1, required=True)
def import_traces(files) -> None:
    """Import trace FILES (OTLP/JSON or Jaeger JSON) as sessions."""
    raise click.UsageError("import is not implemented yet")
