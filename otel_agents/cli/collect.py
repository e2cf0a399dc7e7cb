"""``otel-agents collect``: an OTLP trace receiver writing sessions and the ledger (docs/collect.md)."""

from __future__ import annotations

import click
from pydantic import ValidationError

from otel_agents.cli.options import FiniteFloat, not_empty, storage_options
from otel_agents.persistence.intake_state import HoldPolicy


class CollectRefused(click.ClickException):
    exit_code = 2


@click.command()
@click.option("--http", "http", default="127.0.0.1:4318", callback=not_empty, show_default=True, metavar="HOST:PORT",
              help="OTLP/HTTP address (POST /v1/traces); 'off' for none.")
@click.option("--grpc", "grpc", default=None, callback=not_empty, metavar="HOST:PORT", help="OTLP/gRPC address (e.g. 127.0.0.1:4317).")
@click.option("--hold-seconds", type=click.FloatRange(min=0.0), default=HoldPolicy().unnamed_hold_seconds,
              show_default=True, help="Seconds a trace that names no otel-agents session is held before its spans "
              "are dropped and counted as ignored.")
@click.option("--json-log", is_flag=True, help="The per-minute log line as JSON.")
@click.option("--log-every", type=FiniteFloat(min=0.1), default=60.0, hidden=True)
@click.option("--max-queued", type=click.IntRange(min=1), default=256, hidden=True,
              help="Decoded requests waiting for the writer before the receiver answers 429/RESOURCE_EXHAUSTED.")
@click.option("--settle", type=FiniteFloat(min=0.0), default=1.0, show_default=True,
              help="Seconds without a new span before a session's tree, meta.json and ledger records are written.")
@click.option("--write-delay", type=FiniteFloat(min=0.0), default=0.0, hidden=True,
              help="Make the writer slow (tests of backpressure).")
@storage_options
def collect(http, grpc, hold_seconds, json_log, log_every, max_queued, settle, write_delay, paths) -> None:
    """Receive OTLP traces and write each otel-agents session and its ledger records, until SIGTERM/SIGINT."""
    from otel_agents.collect.service import CollectError, CollectOptions, run_collect

    try:
        hold = HoldPolicy(unnamed_hold_seconds=hold_seconds)
    except ValidationError:  # inf or nan: refused here, in collect's one-line form
        raise CollectRefused(f"--hold-seconds must be a finite number of seconds, not {hold_seconds}") from None
    try:
        run_collect(CollectOptions(paths=paths, http=None if http == "off" else http, grpc=grpc, json_log=json_log,
                                   log_every_s=log_every, max_queued=max_queued, settle_s=settle,
                                   write_delay_s=write_delay, hold=hold))
    except CollectError as exc:
        raise CollectRefused(str(exc)) from None
