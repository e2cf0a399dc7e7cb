"""``otel-agents billing``: summary, export, rebuild.

Reads the ledger in one streaming pass; ``rebuild`` re-derives it from the saved
session trees and says what differed, keeping the costs recorded at call time
unless ``--reprice`` asks for the current prices. Dates are UTC days, both ends inclusive.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import click

from otel_agents.cli.options import SafePath, ledger_errors_are_data_errors, reads_whole_sessions, storage_options

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
    return "-" if cost is None else f"{cost.quantize(Decimal('0.000001'))}"


def format_table(header: list[str], rows: list[list[str]], numeric_from: int = 1) -> str:
    """Aligned plain-text columns: the first left-aligned, numbers right-aligned."""
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
@storage_options
@ledger_errors_are_data_errors
def summary(by: str, since: date | None, until: date | None, session_id: str | None, as_json: bool, paths) -> None:
    """Calls, tokens and cost from the ledger, grouped; a null cost counts as unpriced, never as 0."""
    from otel_agents.persistence.ledger_summary import summarize_file, total

    filters = _filters(since, until, session_id)
    rows = summarize_file(paths.billing_file, by, filters, warn=_warn)
    grand = total(rows)
    if as_json:
        import orjson

        doc = {
            "ledger": str(paths.billing_file),
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
        click.echo(f"no ledger records{' match' if filters != type(filters)() else ''} ({paths.billing_file})")
        return
    header = [by.upper(), "CALLS", "LLM", "TOOLS", "FAILED", "INPUT", "OUTPUT", "CACHE_R", "CACHE_W", "REASONING",
              "TOKENS", "COST_USD", "UNPRICED"]
    body = [_table_row(r) for r in rows]
    if len(rows) > 1:
        body.append(["TOTAL", *_table_row(grand)[1:]])
    click.echo(format_table(header, body))


# --- export ------------------------------------------------------------------------------


@billing.command()
@click.option("--format", "fmt", type=click.Choice(["csv", "jsonl"]), required=True, help="Output format.")
@filter_options
@click.option("-o", "--output", type=SafePath(dir_okay=False, path_type=Path), help="Write here instead of stdout.")
@storage_options
@ledger_errors_are_data_errors
def export(fmt: str, since: date | None, until: date | None, session_id: str | None, output: Path | None, paths) -> None:
    """The ledger's records (filtered) as CSV or JSON lines."""
    from otel_agents.persistence.ledger_summary import export_csv, export_jsonl
    from otel_agents.persistence.ledger_read import iter_records

    filters = _filters(since, until, session_id)
    if output is not None and output.resolve() == paths.billing_file.resolve():
        raise click.UsageError(f"--output {output} is the ledger itself; choose another file")
    records = filters.apply(iter_records(paths.billing_file, _warn))
    if fmt == "csv":
        import io

        out = open(output, "w", newline="", encoding="utf-8") if output else io.TextIOWrapper(
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
        out_b = open(output, "wb") if output else sys.stdout.buffer
        try:
            count = export_jsonl(records, out_b)
        finally:
            out_b.flush()
            if output:
                out_b.close()
    if output:
        click.echo(f"exported {count} records to {output}", err=True)


# --- rebuild -----------------------------------------------------------------------------


def derived_records(sessions_dir: Path, warn) -> tuple[dict[str, list[dict[str, Any]]], int]:
    """Ledger records of every saved session tree, by session id; and how many trees were unreadable."""
    from otel_agents.persistence.ledger_records import ledger_records
    from otel_agents.persistence.paths import InvalidSessionId, Paths
    from otel_agents.persistence.store import SessionStore, StoreError

    out: dict[str, list[dict[str, Any]]] = {}
    unreadable = 0
    if not sessions_dir.is_dir():
        return out, unreadable
    checker = Paths(sessions_dir, Path("/dev/null"))
    for entry in sorted(sessions_dir.iterdir()):
        if not entry.is_dir():
            continue
        try:
            checker.session_dir(entry.name)
        except InvalidSessionId:
            continue
        store = SessionStore(entry)
        if not store.tree_path.exists():
            continue
        try:
            tree = store.load_tree()
        except StoreError as exc:
            warn(f"{exc}; its ledger records are kept as they are")
            unreadable += 1
            continue
        out[tree.get("id") or entry.name] = ledger_records(tree)
    return out, unreadable


@dataclass
class RebuildPlan:
    """What a rebuild changes, record ids by kind of difference."""

    records: list[dict] = field(default_factory=list)  # the new ledger, in order
    derived: int = 0
    added: list[str] = field(default_factory=list)
    changed: list[tuple[str, list[str]]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept: int = 0
    duplicates: int = 0
    repriced: int = 0  # LLM records priced again (--reprice)
    price_changes: list = field(default_factory=list)  # repricing.PriceChange, those priced differently

    @property
    def differs(self) -> bool:
        return bool(self.added or self.changed or self.removed or self.duplicates or self.price_changes)


def plan_rebuild(old: list[dict], by_session: dict[str, list[dict[str, Any]]]) -> RebuildPlan:
    """Pure: the ledger the saved sessions imply, compared with the one on disk.

    Records of sessions with no readable saved tree are kept as they are.
    """
    import orjson

    from otel_agents.persistence.ledger_records import carry_repricing
    from otel_agents.tracing.redaction import redact

    plan = RebuildPlan()
    old_by_id: dict[str, dict] = {}
    for record in old:
        if record["record_id"] in old_by_id:
            plan.duplicates += 1
        old_by_id.setdefault(record["record_id"], record)
    new_records = []
    for records in by_session.values():
        for record in records:
            record = orjson.loads(orjson.dumps(redact(record)))  # exactly what a ledger line holds
            previous = old_by_id.get(record["record_id"])
            record = carry_repricing(previous, record)  # a re-price stays until the span's cost changes
            new_records.append(record)
            if previous is None:
                plan.added.append(record["record_id"])
            elif previous != record:
                fields = sorted(k for k in set(previous) | set(record) if previous.get(k) != record.get(k))
                plan.changed.append((record["record_id"], fields))
    plan.derived = len(new_records)
    new_ids = {r["record_id"] for r in new_records}
    kept = []
    for rid, record in old_by_id.items():
        if rid in new_ids:
            continue
        if record.get("session_id") in by_session:
            plan.removed.append(rid)
        else:
            kept.append(record)
    plan.kept = len(kept)
    plan.records = sorted(kept + new_records, key=lambda r: (str(r.get("ts") or ""), r["record_id"]))
    return plan


@billing.command()
@click.option("--dry-run", is_flag=True, help="Only report the differences; leave the ledger as it is.")
@click.option("--reprice", is_flag=True,
              help="Price every successful LLM record again from its recorded tokens with the current prices "
                   "(litellm's map and OTEL_AGENTS_PRICES) and report the difference per record and in total. "
                   "Without it the costs recorded at call time are kept.")
@storage_options
@ledger_errors_are_data_errors
@reads_whole_sessions
def rebuild(dry_run: bool, reprice: bool, paths) -> None:
    """Regenerate the ledger from the saved sessions and report what differed.

    Records of sessions with no readable saved tree (deleted, or damaged) are kept:
    money spent stays on the books. Costs are the ones computed at call time
    (recorded on each attempt's span); --reprice replaces them with today's prices.
    """
    from otel_agents.persistence.ledger import rewrite_records

    prices = _current_prices() if reprice else None
    by_session, unreadable = derived_records(paths.sessions_dir, _warn)
    plans: list[RebuildPlan] = []

    def rewrite(old: list[dict]) -> list[dict] | None:
        plan = plan_rebuild(old, by_session)
        if prices is not None:
            from otel_agents.llm.scripted_provider import PROVIDER, register_demo_price
            from otel_agents.repricing import reprice as reprice_records

            # The offline model's demo price exists only once a run registers it.
            for model in {str(r.get("model")) for r in plan.records if r.get("type") == "llm"}:
                if model.startswith(f"{PROVIDER}/"):
                    register_demo_price(model)
            plan.repriced, plan.price_changes = reprice_records(plan.records, prices)
        plans.append(plan)
        return plan.records if plan.differs and not dry_run else None

    # The comparison runs under the ledger's lock, so no concurrent append is lost.
    written = rewrite_records(paths.billing_file, rewrite, _warn)
    plan = plans[0]
    for rid in plan.added:
        click.echo(f"+ {rid}")
    for rid, fields in plan.changed:
        click.echo(f"~ {rid} ({', '.join(fields)})")
    for rid in plan.removed:
        click.echo(f"- {rid}")
    click.echo(
        f"rebuild: {len(by_session)} sessions, {plan.derived} records derived; "
        f"{len(plan.added)} added, {len(plan.changed)} changed, {len(plan.removed)} removed, "
        f"{plan.duplicates} duplicate lines dropped, {plan.kept} kept from sessions without a readable saved tree"
        + (f" ({unreadable} unreadable)" if unreadable else "")
    )
    if prices is not None:
        _report_prices(plan)
    if not plan.differs:
        click.echo("the ledger already matches the saved sessions" + (" and the current prices" if reprice else ""))
    elif dry_run:
        click.echo("dry run: the ledger is unchanged")
    else:
        click.echo(f"wrote {written} records to {paths.billing_file}")


def _current_prices():
    from otel_agents.llm.pricing import PriceConfigError, PriceTable

    try:
        return PriceTable.from_env()
    except PriceConfigError as exc:
        raise click.UsageError(str(exc)) from None


def _report_prices(plan: RebuildPlan) -> None:
    """One line per record priced differently, then the totals (exact decimals, USD)."""
    from otel_agents.repricing import total, usd

    for change in plan.price_changes:
        delta = (
            f" ({total([change.new_cost]) - total([change.old_cost]):+f})"
            if change.old_cost is not None and change.new_cost is not None
            else ""
        )
        click.echo(
            f"$ {change.record_id} {change.model}: {usd(change.old_cost)} ({change.old_source}) -> "
            f"{usd(change.new_cost)} ({change.new_source}){delta}"
        )
    old = total(c.old_cost for c in plan.price_changes)
    new = total(c.new_cost for c in plan.price_changes)
    click.echo(
        f"reprice: {plan.repriced} LLM records priced, {len(plan.price_changes)} differently; "
        f"their cost {usd(old)} -> {usd(new)} USD ({new - old:+f})"
    )
