"""``otel-agents export ID``: a saved session's spans sent again to an OTLP endpoint (session_export.py)."""

from __future__ import annotations

import sys

import click

from otel_agents.cli.options import reads_whole_sessions, session_dir_or_exit, storage_options


class ExportRefused(click.ClickException):
    """An endpoint, header list or session that cannot be used: one line, exit 2, nothing sent."""

    exit_code = 2


@click.command(name="export")
@click.argument("session_id")
@click.option("--endpoint", metavar="URL",
              help="OTLP endpoint (default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT); "
                   "for HTTP a URL without a path gets /v1/traces.")
@click.option("--headers", metavar="K=V,...",
              help="Request headers, URL-encoded as in OTEL_EXPORTER_OTLP_HEADERS (default: that variable).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: spans sent, delivered, not delivered.")
@storage_options
@reads_whole_sessions
def export(session_id: str, endpoint: str | None, headers: str | None, as_json: bool, paths) -> None:
    """Send the saved session SESSION_ID's spans to an OTLP endpoint again.

    The spans come from the session's journal (spans.jsonl) with their trace and span
    ids, redacted and capped as a live export sends them, so a backend that was down
    during the run can be filled in later (one that has some already deduplicates or
    overwrites them). Read-only: works on a session another process is writing (its
    spans that have not ended are left out). Exit 0 when every span was delivered, 1
    when the endpoint did not take them after the exporter's retries, 2 for bad input.
    """
    from otel_agents.session_export import SessionNotExportable, export_session
    from otel_agents.tracing.resend import resolve_target
    from otel_agents.tracing.setup import ConfigError, warn_about_millisecond_timeout

    directory = session_dir_or_exit(paths, session_id)
    try:
        target = resolve_target(endpoint, headers)
    except ConfigError as exc:
        raise ExportRefused(str(exc)) from None
    warn = lambda m: click.echo(f"warning: {m}", err=True)  # noqa: E731
    # No exit cap here: the command is the wait for the endpoint.
    warn_about_millisecond_timeout(target.timeout_s, "each request may wait that long")
    try:
        done = export_session(directory, target, warn)
    except (SessionNotExportable, ConfigError) as exc:  # ConfigError: a bad OTEL_*_LIMIT or value cap, before sending
        raise ExportRefused(str(exc)) from None
    report = done.report
    if as_json:
        import orjson

        click.echo(orjson.dumps(done.summary(), option=orjson.OPT_INDENT_2).decode())
    else:
        click.echo(f"{report.delivered} of {report.spans} spans of session {session_id} sent to {report.endpoint}")
        if done.still_open:
            click.echo(f"{done.still_open} spans of the running session have not ended and were not sent")
    if not report.complete:
        click.echo(
            f"error: {report.spans - report.delivered} of {report.spans} spans not delivered to "
            f"{report.endpoint} ({report.failure or 'no answer'})", err=True,
        )
        sys.exit(1)
