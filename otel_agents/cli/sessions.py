"""``otel-agents sessions``: list, show, verify, repair, rm."""

from __future__ import annotations

import shutil
import sys
from typing import Any

import click

from otel_agents.cli.options import (
    ledger_errors_are_data_errors, reads_whole_sessions, session_dir_or_exit, storage_options,
)
from otel_agents.cli.session_render import count_text, render_session
from otel_agents.terminal_text import shown


class SessionDataUnreadable(click.ClickException):
    """Damaged or missing session files: one line, exit 2 like any other bad input."""

    exit_code = 2


@click.group()
def sessions() -> None:
    """Saved sessions: list, show, verify, repair, rm."""


def _json(value: Any) -> None:
    import orjson

    click.echo(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode())


@sessions.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="One JSON array of the sessions' meta.json summaries.")
@storage_options
def list_command(as_json: bool, paths) -> None:
    """List saved sessions, newest first (by creation; unreadable ones last)."""
    from otel_agents.cli.console import total_cost
    from otel_agents.persistence.listed import listed_sessions
    from otel_agents.persistence.session_meta import effective_status

    # meta.json lags a running session, one whose writer was killed mid-run, and a new one (it has none
    # until its first run begins): their summaries are read from the journal.
    listings = listed_sessions(paths.sessions_dir)[::-1]
    if as_json:
        out = []
        for item in listings:
            if item.meta is None:
                out.append({"id": item.session_id, "problem": item.problem})
            else:
                out.append({**item.meta, "id": item.session_id, "status": effective_status(item.meta, item.directory)})
        _json(out)
        return
    if not listings:
        click.echo(f"no sessions in {paths.sessions_dir}", err=True)
        return
    click.echo(f"{'ID':<24} {'CREATED':<19} {'RUNS':>4} {'STATUS':<11} {'COST':>11}  TITLE")
    for item in listings:
        meta = item.meta
        if meta is None:
            click.echo(shown(f"{item.session_id:<24} {'?':<19} {'?':>4} {'unreadable':<11} {'?':>11}  {item.problem}",
                             lines=False))
            continue
        totals = meta.get("totals") if isinstance(meta.get("totals"), dict) else {}
        cost = total_cost(totals.get("cost_usd", "?"), totals.get("unpriced_calls"), totals.get("llm_calls"))
        # One row a line: a title's (a prompt's) line breaks and other control characters escaped.
        click.echo(shown(
            f"{item.session_id:<24} {str(meta.get('created') or '?')[:19]:<19} {count_text(meta.get('runs')):>4} "
            f"{effective_status(meta, item.directory):<11} {cost:>11}  {meta.get('title') or ''}"
            + _lineage(meta) + _cut(meta), lines=False
        ))


def _cut(meta) -> str:
    """`` (N values cut or events dropped by the sender's export)`` for a session received so (not resumable)."""
    from otel_agents.persistence.session_meta import TRUNCATED_VALUES

    count = meta.get(TRUNCATED_VALUES)
    if type(count) is not int or count <= 0:
        return ""
    return f"  ({count} values cut or events dropped by the sender's export)"


def _lineage(meta) -> str:
    """`` (fork of SOURCE at MESSAGE)`` for a fork (meta.json's ``forked_from``), else nothing."""
    source = meta.get("forked_from")
    if not isinstance(source, dict):
        return ""
    return f"  (fork of {source.get('session')} at {source.get('message')})"


@sessions.command()
@click.argument("session_id")
@click.option("--json", "as_json", is_flag=True, help="The whole tree payload as JSON.")
@click.option("--ids", is_flag=True, help="End each run, turn and operation line with its span id (for `view ID context SPAN_ID`).")
@storage_options
@ledger_errors_are_data_errors
@reads_whole_sessions
def show(session_id: str, as_json: bool, ids: bool, paths) -> None:
    """Show a session's tree: path labels, status, durations, tokens and cost, per agent totals.

    Read-only: a session whose writer died is shown with its open spans interrupted.
    """
    from otel_agents.persistence.saved import SessionUnreadable, load_saved, reader_meta
    from otel_agents.persistence.session_meta import effective_status, make_meta
    from otel_agents.persistence.tree_file import make_payload

    directory = session_dir_or_exit(paths, session_id)
    # The tree is all this shows: a current checkpoint's events.jsonl is not read.
    try:
        loaded = load_saved(directory, lambda m: click.echo(f"warning: {m}", err=True), records=False)
    except SessionUnreadable as exc:
        raise SessionDataUnreadable(str(exc)) from None
    if loaded.tree is None:
        raise SessionDataUnreadable(f"session {session_id} has no readable tree: " + "; ".join(loaded.notes))
    # A killed writer's meta.json is as its run began: titled, dated and counted from the tree, as `list` does.
    tree, meta = loaded.tree, reader_meta(loaded.meta, loaded.tree, directory)
    if meta is not None:
        meta = {**meta, "status": effective_status(meta, directory)}
    if as_json:
        # As tree.json.gz holds it: nested, or with runs as flat node lists when too deep for JSON.
        _json(make_payload(tree, meta or make_meta(tree, created_ns=0, updated_ns=0)))
        return
    click.echo(shown("\n".join(render_session(tree, meta, ids=ids))))


@sessions.command()
@click.argument("session_id")
@storage_options
@ledger_errors_are_data_errors
@reads_whole_sessions
def verify(session_id: str, paths) -> None:
    """Check that tree.json.gz, events.jsonl and the billing ledger agree; exit 1 naming each disagreement.

    A session whose writer died is reported as interrupted and recoverable (exit 0 when
    its files agree otherwise). Read-only.
    """
    from otel_agents.persistence.session_check import verify_directory

    directory = session_dir_or_exit(paths, session_id)
    if not paths.billing_file.exists():  # read as empty: say so, or a ledger kept elsewhere reads as records lost
        click.echo(f"warning: no ledger at {paths.billing_file}: checked as empty (another home's? pass --billing-file)",
                   err=True)
    check = verify_directory(directory, paths.billing_file, lambda m: click.echo(f"warning: {m}", err=True))
    if check.problems:
        click.echo(f"session {session_id}: {len(check.problems)} disagreement(s)")
        for problem in check.problems:  # quoting the files' values (a ledger record's id, say)
            click.echo(f"  {shown(problem, lines=False)}")
        sys.exit(1)
    click.echo(f"session {session_id}: tree, events.jsonl ({check.records} records) and ledger "
               f"({check.ledger_records} records) agree")
    for note in check.notes:
        click.echo(f"  {shown(note, lines=False)}")


@sessions.command()
@click.argument("session_id")
@storage_options
@ledger_errors_are_data_errors
@reads_whole_sessions
def repair(session_id: str, paths) -> None:
    """Record what a dead writer left unfinished: interrupted spans, the tree, meta.json, the ledger.

    Says what it changed; a session that needs nothing is left as it is. Exit 2 while
    another process writes the session.
    """
    from otel_agents.cli.execution import own_session
    from otel_agents.persistence.repair import repair_session

    directory = session_dir_or_exit(paths, session_id)
    with own_session(directory):
        try:
            changes = repair_session(directory, paths.billing_file, lambda m: click.echo(f"warning: {m}", err=True))
        except ValueError as exc:
            raise SessionDataUnreadable(str(exc)) from None
    if not changes:
        click.echo(f"session {session_id}: nothing to repair")
        return
    click.echo(f"session {session_id}: repaired")
    for change in changes:
        click.echo(f"  {shown(change, lines=False)}")


@sessions.command()
@click.argument("session_id")
@storage_options
def rm(session_id: str, paths) -> None:
    """Delete a session directory (its billing records stay in the ledger); exit 2 while it is being written."""
    from otel_agents.cli.execution import own_session

    directory = session_dir_or_exit(paths, session_id)
    if directory.is_symlink():
        directory.unlink()  # never follow a link out of the sessions directory
    else:
        with own_session(directory):  # removed under its lock: no writer can be inside it
            shutil.rmtree(directory)
    click.echo(f"removed session {session_id}", err=True)
