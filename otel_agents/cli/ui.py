"""``otel-agents ui``: serve the read-only web app over the saved sessions (docs/ui.md)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from otel_agents.cli.options import ledger_sources_options


class UiRefused(click.ClickException):
    exit_code = 2


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; anything but loopback requires a token (one is generated if not given).")
@click.option("--port", type=click.IntRange(0, 65535), default=8777, show_default=True, help="0: any free port.")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a browser.")
@click.option("--token", default=None, help="Every request must carry it (Bearer header, cookie or ?token=).")
@ledger_sources_options
def ui(host: str, port: int, open_browser: bool, token: str | None, paths, ledgers: list[Path]) -> None:
    """Serve a read-only web app of the saved sessions: trees, dialogs, perspectives, costs, live updates.

    Prints the URL on stdout; stops (exit 0) on SIGINT/SIGTERM. $OTEL_AGENTS_JAEGER_URL adds
    an "open in Jaeger" link to each run.
    """
    from otel_agents.ui.serve import ServeError, ServeOptions, serve

    if token is not None and not token.strip():
        raise click.BadParameter("an empty token protects nothing", param_hint="--token")
    try:
        (token or "").encode("utf-8")
    except UnicodeEncodeError:  # bytes the locale could not decode: they cannot be put in the URL or the cookie
        raise click.BadParameter("the token must be text (UTF-8)", param_hint="--token") from None
    if token is not None and any(c.isspace() or not c.isprintable() for c in token):
        # no client could send it: a Bearer header and a cookie end at a line break, and a space splits them
        raise click.BadParameter("the token must be one word of printable characters (no space or line break)",
                                 param_hint="--token")
    try:
        serve(ServeOptions(paths.sessions_dir, ledgers, host=host, port=port, token=token,
                           open_browser=open_browser, jaeger_url=os.environ.get("OTEL_AGENTS_JAEGER_URL") or None))
    except ServeError as exc:
        raise UiRefused(str(exc)) from None
