"""``otel-agents import``: OTLP/JSON and Jaeger JSON files into session directories and the ledger."""

from __future__ import annotations

from pathlib import Path

import click

from otel_agents.cli.options import reads_whole_sessions, storage_options


class ImportRefused(click.ClickException):
    """A file that cannot be imported or that contradicts a saved session: one line, exit 2, nothing written."""

    exit_code = 2


@click.command(name="import")
# Plain strings: click.Path stats its value and raises on a NUL byte instead of reporting it.
@click.argument("files", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON array: what was done to each session.")
@storage_options
@reads_whole_sessions
def import_traces(files: tuple[str, ...], as_json: bool, paths) -> None:
    """Import trace FILES (OTLP/JSON or Jaeger JSON) as sessions.

    Each session is written as a live run writes it (events.jsonl, spans.jsonl,
    tree.json.gz, meta.json) and its LLM attempts and tool calls go to the
    ledger. Importing into an existing session merges; the same file twice
    changes nothing. Every file is checked before anything is written: a
    malformed file, or a value the session tree cannot hold (a negative token
    count, a cost that is not a number, a bad message id, nesting deeper than
    64), is exit 2 with one file:line: line, and nothing is written.
    """
    from otel_agents.persistence.import_locks import importing
    from otel_agents.persistence.import_sessions import ImportConflict, Source, apply_import, plan_import
    from otel_agents.persistence.span_placement import sessions_of_traces
    from otel_agents.persistence.importers import read_trace_file
    from otel_agents.tracing.decoding import ImportFormatError
    from otel_agents.persistence.ownership import SessionBusy
    from otel_agents.persistence.paths import InvalidSessionId
    from otel_agents.persistence.store import NotALedger, StoreError

    if "" in files:  # Path('') is '.', the working directory
        raise ImportRefused("'' is not a file name")
    sources = []
    for path in map(Path, files):
        try:
            sources.append(Source(str(path), read_trace_file(path)))
        except ImportFormatError as exc:
            raise ImportRefused(str(exc)) from None
        except (OSError, ValueError) as exc:  # e.g. a path no file can have (a NUL byte)
            raise ImportRefused(f"{path!r}:0: cannot read: {exc}") from None
    sources = _understood(sources, Source)
    session_ids = set(sessions_of_traces(span for source in sources for span in source.spans).values())
    try:
        with importing(paths.sessions_dir, session_ids) as own:
            try:
                plans = plan_import(sources, paths.sessions_dir)
            except (ImportConflict, InvalidSessionId) as exc:
                raise ImportRefused(str(exc)) from None
            apply_import(plans, paths.sessions_dir, paths.billing_file, own=own)
    except SessionBusy as exc:
        raise ImportRefused(f"{exc}; import once it has finished") from None
    except NotALedger as exc:
        raise ImportRefused(str(exc)) from None
    except (StoreError, OSError) as exc:
        raise click.ClickException(f"cannot write the import: {exc}") from None
    if as_json:
        import orjson

        click.echo(orjson.dumps([plan.summary() for plan in plans], option=orjson.OPT_INDENT_2).decode())
        return
    for plan in plans:
        summary = plan.summary()
        if not plan.changed:
            what = "unchanged"
        elif summary["created"]:
            what = f"created: {summary['spans_added']} span(s), {summary['records_added']} record(s), {summary['runs']} run(s)"
        else:
            what = (
                f"merged: {summary['spans_added']} new span(s), {summary['spans_completed']} completed, "
                f"{summary['records_added']} new record(s)"
            )
        billed = (f"{summary['ledger_records_added']} ledger record(s) added" if plan.whole else
                  "not billed yet: a trace is not whole (its root, a parent or some of the calls its root counts "
                  "are missing); importing the rest bills it, or `otel-agents sessions repair` bills what there is")
        click.echo(f"session {plan.session_id}: {what}; {billed}")


def _understood(sources: list, source_type) -> list:
    """Every file's spans in the tree's shape (tracing/foreign.py), unpriced model calls priced.

    Read together, so a trace split across files is shaped once; a synthetic span goes with
    the first file that holds its trace.
    """
    from otel_agents.llm.import_pricing import priced
    from otel_agents.tracing.foreign import understood

    everything = [span for source in sources for span in source.spans]
    shaped = priced(understood(everything))
    out, start = [], 0
    file_of_trace: dict[str, int] = {}
    for number, source in enumerate(sources):
        end = start + len(source.spans)
        out.append(list(shaped[start:end]))
        for span in source.spans:
            file_of_trace.setdefault(span.trace_id, number)
        start = end
    for span in shaped[start:]:
        out[file_of_trace[span.trace_id]].append(span)
    return [source_type(source.name, spans) for source, spans in zip(sources, out)]
