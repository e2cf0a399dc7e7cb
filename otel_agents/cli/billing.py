"""``otel-agents billing``: summary, export, rebuild.

Reads the ledger in one streaming pass (summary and export also read several ledgers, the
shards of a fleet, as one: persistence/ledger_shards.py); ``rebuild`` re-derives it from the saved
session trees (persistence/ledger_rebuild.py) and says what differed, keeping the costs recorded at call time
unless ``--reprice`` asks for the current prices. Dates are UTC days, both ends inclusive.
"""

from __future__ import annotations

import sys
from datetime import date, datetime
from decimal import Context, Decimal
from pathlib import Path

import click

from otel_agents.cli.options import (
    DataError,
    SafePath,
    ledger_errors_are_data_errors,
    ledger_sources_options,
    reads_whole_sessions,
    refuse_storage_output,
    storage_options,
)
from otel_agents.terminal_text import shown

DATE_FORMAT = "%Y-%m-%d"


def _date(ctx: click.Context, param: click.Parameter, value: str | None) -> date | None:
    if value is None:
        return None
    try:
        return datetime.strptime(value, DATE_FORMAT).date()
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date in the form YYYY-MM-DD", ctx, param) from None


def filter_options(func):
    func = click.option("--session", "session_id", metavar="ID", help="Only this session's records.")(func)
    func = click.option("--until", callback=_date, metavar="DATE", help="Last UTC day included (YYYY-MM-DD).")(func)
    func = click.option("--since", callback=_date, metavar="DATE", help="First UTC day included (YYYY-MM-DD).")(func)
    return func


def _filters(since: date | None, until: date | None, session_id: str | None):
    from otel_agents.persistence.ledger_summary import Filters

    if since and until and since > until:
        raise click.UsageError(f"--since {since} is after --until {until}")
    return Filters(since, until, session_id)


def _warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


@click.group()
def billing() -> None:
    """The billing ledger: summary, export, rebuild."""


# --- summary -----------------------------------------------------------------------------


def _cost_text(cost: Decimal | None) -> str:
    if cost is None:
        return "-"
    # Enough digits for any total (the default 28 cannot show 1e22 to the micro-dollar).
    digits = Context(prec=max(28, cost.adjusted() + 8))
    return f"{cost.quantize(Decimal('0.000001'), context=digits)}"


def format_table(header: list[str], rows: list[list[str]], numeric_from: int = 1) -> str:
    """Aligned plain-text columns: the first left-aligned, numbers right-aligned. A cell's control
    characters (a model or agent name from an imported trace) are escaped before it is measured."""
    header, rows = [shown(str(c), lines=False) for c in header], [[shown(str(c), lines=False) for c in r] for r in rows]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = []
    for row in [header, *rows]:
        cells = [str(c).ljust(w) if i < numeric_from else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _table_row(row) -> list[str]:
    t = row.tokens
    return [
        row.key, str(row.calls), str(row.llm_calls), str(row.tool_calls), str(row.failed_calls),
        str(t["input"]), str(t["output"]), str(t["cache_read"]), str(t["cache_write"]), str(t["reasoning"]),
        str(t["total"]), _cost_text(row.cost_usd), str(row.unpriced_calls),
    ]


@billing.command()
@click.option("--by", type=click.Choice(["session", "agent", "model", "day"]), default="session", show_default=True,
              help="Group rows by this.")
@filter_options
@click.option("--json", "as_json", is_flag=True, help="JSON for machines instead of a table.")
@ledger_errors_are_data_errors
@ledger_sources_options
def summary(by: str, since: date | None, until: date | None, session_id: str | None, as_json: bool, paths,
            ledgers: list[Path]) -> None:
    """Calls, tokens and cost from the ledger(s), grouped; a null cost counts as unpriced, never as 0.

    With unpriced calls COST_USD is a partial sum: a note on stderr says so (--json: "complete": false).
    """
    from otel_agents.persistence.ledger_shards import LedgerShards, ReadStats
    from otel_agents.persistence.ledger_summary import summarize, summarize_file, total

    filters = _filters(since, until, session_id)
    if len(ledgers) == 1:  # one ledger keeps the parallel path for large files
        stats = ReadStats()
        rows = summarize_file(ledgers[0], by, filters, warn=_warn, stats=stats)
        duplicates = stats.duplicates  # warned of, naming the ledger
    else:
        shards = LedgerShards(ledgers, _warn)
        rows = summarize(filters.apply(shards), by)
        duplicates = shards.duplicates  # those inside one ledger were warned of, naming it
        if shards.across_ledgers:
            what = "record found in more than one ledger was" if shards.across_ledgers == 1 else \
                "records found in more than one ledger were"
            click.echo(f"note: {shards.across_ledgers} {what} counted once", err=True)
    grand = total(rows)
    named = str(ledgers[0]) if len(ledgers) == 1 else ", ".join(map(str, ledgers))
    if as_json:
        import orjson

        doc = {
            "ledger": str(ledgers[0]) if len(ledgers) == 1 else None,
            "ledgers": [str(p) for p in ledgers],
            "duplicates": duplicates,
            "by": by,
            "filters": {
                "since": since.isoformat() if since else None,
                "until": until.isoformat() if until else None,
                "session": session_id,
            },
            "rows": [r.as_dict() for r in rows],
            "total": grand.as_dict(),
        }
        sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.flush()
        return
    if not rows:
        click.echo(f"no ledger records{' match' if filters != type(filters)() else ''} ({named})")
        return
    header = [by.upper(), "CALLS", "LLM", "TOOLS", "FAILED", "INPUT", "OUTPUT", "CACHE_R", "CACHE_W", "REASONING",
              "TOKENS", "COST_USD", "UNPRICED"]
    body = [_table_row(r) for r in rows]
    if len(rows) > 1:
        body.append(["TOTAL", *_table_row(grand)[1:]])
    click.echo(format_table(header, body))
    if grand.unpriced_calls:  # a sum without them is no total: say so (--json: "complete": false)
        click.echo(
            f"note: COST_USD leaves out the {grand.unpriced_calls} unpriced calls, so it is a partial sum; "
            "give their models a price (OTEL_AGENTS_PRICES) and run `billing rebuild --reprice`",
            err=True,
        )


# --- export ------------------------------------------------------------------------------


@billing.command()
@click.option("--format", "fmt", type=click.Choice(["csv", "jsonl"]), required=True, help="Output format.")
@filter_options
@click.option("-o", "--output", type=SafePath(dir_okay=False, path_type=Path), help="Write here instead of stdout.")
@ledger_errors_are_data_errors
@ledger_sources_options
def export(fmt: str, since: date | None, until: date | None, session_id: str | None, output: Path | None, paths,
           ledgers: list[Path]) -> None:
    """The ledger's records (filtered) as CSV or JSON lines; several ledgers give each record once."""
    from otel_agents.persistence.ledger_shards import LedgerShards
    from otel_agents.persistence.ledger_export import export_csv, export_jsonl

    filters = _filters(since, until, session_id)
    if output is not None and output.resolve() in {p.resolve() for p in ledgers}:
        raise click.UsageError(f"--output {output} is the ledger itself (one being read); choose another file")
    refuse_storage_output(output, paths, "--output")
    records = filters.apply(LedgerShards(ledgers, _warn))  # each ledger was checked before --output is opened
    if fmt == "csv":
        import io

        out = _open_output(output, "w") if output else io.TextIOWrapper(
            sys.stdout.buffer, encoding="utf-8", newline="", write_through=True
        )
        try:
            count = export_csv(records, out)
        finally:
            out.flush()
            if output:
                out.close()
            else:
                out.detach()
    else:
        out_b = _open_output(output, "wb") if output else sys.stdout.buffer
        try:
            count = export_jsonl(records, out_b)
        finally:
            out_b.flush()
            if output:
                out_b.close()
    if output:
        click.echo(f"exported {count} records to {output}", err=True)


def _open_output(output: Path, mode: str):
    """``--output`` opened for writing; a path that cannot be is bad input (one line, exit 2)."""
    try:
        return open(output, mode, **({"newline": "", "encoding": "utf-8"} if "b" not in mode else {}))
    except OSError as exc:
        raise DataError(f"cannot write --output {output}: {exc.strerror or exc}") from None


# --- rebuild -----------------------------------------------------------------------------


@billing.command()
@click.option("--dry-run", is_flag=True, help="Only report the differences; leave the ledger as it is.")
@click.option("--reprice", is_flag=True,
              help="Price every successful LLM record again from its recorded tokens with the current prices "
                   "(litellm's map and OTEL_AGENTS_PRICES) and report the difference per record and in total, "
                   "against the price entry of its session's pricing snapshot. A record whose model has no "
                   "current price keeps its recorded one (said on stderr). "
                   "Without it the costs recorded at call time are kept.")
@click.option("--prices", "prices_file", type=click.Path(dir_okay=False, path_type=Path),
              help="With --reprice: price with this file (litellm-style entries by model string) instead of "
                   "OTEL_AGENTS_PRICES.")
@storage_options
@ledger_errors_are_data_errors
@reads_whole_sessions
def rebuild(dry_run: bool, reprice: bool, prices_file: Path | None, paths) -> None:
    """Regenerate the ledger from the saved sessions and report what differed.

    Records of sessions with no readable saved tree (deleted, or damaged) are kept:
    money spent stays on the books. So are those of a session whose saved state is
    not whole (a journal cut short of its checkpoint, torn or damaged lines): only the
    records it implies that the ledger lacks are added, and stderr names the session. Costs are the ones computed at call time
    (recorded on each attempt's span); --reprice replaces them with today's prices.
    """
    from otel_agents.persistence.ledger_rebuild import rebuild_ledger

    if prices_file is not None and not reprice:
        raise click.UsageError("--prices is used only with --reprice")
    adjust = None
    if reprice:
        from functools import partial

        from otel_agents.repricing import reprice_plan

        adjust = partial(reprice_plan, prices=_current_prices(prices_file), sessions_dir=paths.sessions_dir)
    from otel_agents.llm.pricing import NonFiniteCost

    try:
        done = rebuild_ledger(paths.billing_file, paths.sessions_dir, _warn, dry_run=dry_run, adjust=adjust)
    except NonFiniteCost as exc:  # raised while the plan is adjusted: nothing was written
        raise PricesRefused(str(exc)) from None
    plan, written, unreadable = done.plan, done.written, done.unreadable
    for rid in plan.added:  # ids and models are a ledger's text, which a hand may have edited
        click.echo(f"+ {shown(str(rid), lines=False)}")
    for rid, fields in plan.changed:
        click.echo(f"~ {shown(str(rid), lines=False)} ({', '.join(fields)})")
    for rid in plan.removed:
        click.echo(f"- {shown(str(rid), lines=False)}")
    # Their records are kept as they are: a live writer bills its own, a damaged tree implies none.
    not_rebuilt = [f"{n} {why}" for n, why in ((done.live, "being written"), (unreadable, "unreadable"),
                                               (done.incomplete, "not whole")) if n]
    click.echo(
        f"rebuild: {done.sessions} sessions, {plan.derived} records derived; "
        f"{len(plan.added)} added, {len(plan.changed)} changed, {len(plan.removed)} removed, "
        f"{plan.duplicates} duplicate lines dropped"
        + (f" ({plan.disagreeing} record{'s' if plan.disagreeing > 1 else ''} whose copies differed kept as "
           "the preferred copy)" if plan.disagreeing else "")
        + f", {plan.kept} kept from sessions not rebuilt"
        + (f" ({', '.join(not_rebuilt)})" if not_rebuilt else "")
    )
    if reprice:
        _report_prices(plan)
    if not plan.differs:
        priced_now = reprice and not plan.prices_kept
        click.echo("the ledger already matches the saved sessions" + (" and the current prices" if priced_now else "")
                   + (f" ({plan.held} records of sessions not whole kept as they are)" if plan.held else ""))
    elif dry_run:
        click.echo("dry run: the ledger is unchanged")
    else:
        click.echo(f"wrote {written} records to {paths.billing_file}")


class PricesRefused(click.ClickException):
    """A price file (--prices, OTEL_AGENTS_PRICES) that cannot be used: one line, exit 2, nothing written."""

    exit_code = 2


def _current_prices(prices_file: Path | None = None):
    from otel_agents.llm.pricing import PriceConfigError, PriceTable

    try:
        return PriceTable.from_file(prices_file) if prices_file is not None else PriceTable.from_env()
    except PriceConfigError as exc:  # not click's UsageError: its Usage lines would blame the command line
        raise PricesRefused(str(exc)) from None


def _report_prices(plan) -> None:
    """One line per record priced differently, then the totals (exact decimals, USD); on stderr, the
    models whose records kept their price because the current prices have none for them."""
    from otel_agents.repricing import signed_usd, total, usd

    for change in plan.price_changes:
        delta = (
            f" ({signed_usd(total([change.new_cost]) - total([change.old_cost]))})"
            if change.old_cost is not None and change.new_cost is not None
            else ""
        )
        snapshot = f" [snapshot {change.snapshot}]" if change.snapshot else ""
        if change.snapshot_disagrees:
            snapshot += f" [the snapshot gives {usd(change.snapshot_cost)}]"
        click.echo(
            f"$ {shown(str(change.record_id), lines=False)} {shown(str(change.model), lines=False)}: "
            f"{usd(change.old_cost)} ({change.old_source}) -> "
            f"{usd(change.new_cost)} ({change.new_source}){delta}{snapshot}"
        )
    _report_kept(plan.prices_kept)
    sources = len(plan.source_changes)
    same_cost = (f"; {sources} record{'s' if sources > 1 else ''} kept {'their' if sources > 1 else 'its'} cost "
                 "and only changed price source") if sources else ""
    if not plan.price_changes:  # no "their cost 0 -> 0" of records that are not there
        click.echo(f"reprice: {plan.repriced} LLM records priced, none differently{same_cost}")
        return
    old = [c.old_cost for c in plan.price_changes]
    new = [c.new_cost for c in plan.price_changes]
    # A sum with unpriced records in it is no total: it says so, and no difference is made of it.
    delta = f" ({signed_usd(total(new) - total(old))})" if None not in old and None not in new else ""
    click.echo(
        f"reprice: {plan.repriced} LLM records priced, {len(plan.price_changes)} differently; "
        f"their cost {_sum_text(old)} -> {_sum_text(new)} USD{delta}{same_cost}"
    )


def _sum_text(costs: list) -> str:
    from otel_agents.repricing import total, usd

    unpriced = costs.count(None)
    if unpriced == len(costs):
        return "unpriced"
    return usd(total(costs)) + (f" + {unpriced} unpriced" if unpriced else "")


def _report_kept(kept: list) -> None:
    by_model: dict = {}
    for change in kept:
        by_model[change.model] = by_model.get(change.model, 0) + 1
    for model, count in by_model.items():
        click.echo(
            f"reprice: kept the recorded price of {count} {model} record{'s' if count > 1 else ''}: the current "
            f"prices have none for {model} (give one with --prices FILE or OTEL_AGENTS_PRICES)",
            err=True,
        )
