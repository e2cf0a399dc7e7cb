"""Decoded trace files into session directories and the ledger, as a live run writes them.

Two steps, so that nothing is written unless everything is valid:

- :func:`plan_import` (reads, never writes) groups the spans by session, merges
  them with what each session directory already holds and checks that nothing
  contradicts it: the same span again changes nothing, a span that only started
  there and ended here completes it, new runs are added, a redacted copy of a saved
  span or record (an ``--otlp-file`` of the session) is the same one, and a record (message
  id) that differs from the saved one, or sits on another span, is an
  :class:`ImportConflict` (naming the fields that differ, never their values);
- :func:`apply_import` feeds the new records and spans to the session's
  :class:`~otel_agents.persistence.session_sink.SessionSink`, the writer a live run
  uses (events.jsonl, spans.jsonl, then ``tree.json.gz`` and ``meta.json`` once), and
  appends the ledger records (ids dedupe).

Traces without a session id (other software's) become sessions named after
their trace id, ``trace-<first 16 hex digits>``. Two different spans with the
same id (other software reuses ids) keep both: the later one gets an id derived
from the original (kept under ``otel_agents.import.original_span_id``), the same
derivation each time, so re-importing a file changes nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from otel_agents.persistence.repair import mark_awaiting_trace, mark_billed
from otel_agents.persistence.span_placement import in_journal_form, record_lines, sessions_of_traces
from otel_agents.persistence.events_file import EventLine, EventsFileError, read_event_lines
from otel_agents.persistence.intake_order import ready_to_bill, sort_events_file
from otel_agents.persistence.journal import JournalError, is_record_event, read_journal, spans_from_journal
from otel_agents.persistence.ledger_records import ledger_records
from otel_agents.persistence.redacted_copy import is_redacted_copy
from otel_agents.persistence.notices import stderr_warning
from otel_agents.persistence.private import open_private_append
from otel_agents.persistence.paths import Paths
from otel_agents.persistence.store import SessionStore, StoreError
from otel_agents.persistence.session_meta import created_ns_of
from otel_agents.persistence.tree import build_tree
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.decoding import ORIGINAL_SPAN_ID
from otel_agents.tracing.records import message_id_number
from otel_agents.tracing.spandata import SpanData



class ImportConflict(ValueError):
    """The files contradict a saved session (or each other); one line naming what and where."""


@dataclass(frozen=True)
class Source:
    """The spans decoded from one file (name kept for error messages)."""

    name: str
    spans: Sequence[SpanData]


@dataclass
class SessionImport:
    """What importing does to one session directory."""

    session_id: str
    directory: Path
    existed: bool
    new_spans: list[SpanData] = field(default_factory=list)  # journaled whole
    completed: list[tuple[SpanData, SpanData]] = field(default_factory=list)  # (saved start only, ended)
    new_records: list[EventLine] = field(default_factory=list)
    tree: dict[str, Any] = field(default_factory=dict)
    created_ns: int = 0
    ledger: list[dict[str, Any]] = field(default_factory=list)
    ledger_written: int = 0
    # Billed only once every trace of the session is known whole (intake_order.ready_to_bill, as
    # collect): a record's path depends on every span, and a ledger record is never rewritten.
    whole: bool = True

    @property
    def changed(self) -> bool:
        return bool(self.new_spans or self.completed or self.new_records) or not self.existed

    def summary(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "directory": str(self.directory),
            "created": not self.existed,
            "spans_added": len(self.new_spans),
            "spans_completed": len(self.completed),
            "records_added": len(self.new_records),
            "runs": len(self.tree.get("runs", [])),
            "ledger_records_added": self.ledger_written,
            "billed": self.whole,
        }


# --------------------------------------------------------------------------- ids


def _derived_span_id(span: SpanData, n: int) -> str:
    digest = hashlib.blake2b(f"{span.trace_id}:{span.span_id}:{n}".encode(), digest_size=8).hexdigest()
    return digest if int(digest, 16) else "1".rjust(16, "0")


# --------------------------------------------------------------------------- comparing


# A price import gave a call (llm/import_pricing.py): today's price map may differ from the saved one's,
# and the saved price stands (`billing rebuild --reprice` re-prices), so it is not part of the span's facts.
_IMPORT_PRICE_KEYS = ("otel_agents.import.priced", sc.GEN_AI_USAGE_COST, sc.LLM_PRICE_SOURCE, sc.LLM_PRICE_ID,
                      sc.LLM_PRICE_ENTRY)


def _facts(span: SpanData) -> tuple:
    """Everything about a span except its records (compared one by one, by message id)."""
    others = tuple((e.name, e.time_ns, e.attributes) for e in span.events if not is_record_event(e))
    attributes = span.attributes
    if attributes.get(_IMPORT_PRICE_KEYS[0]):
        attributes = {k: v for k, v in attributes.items() if k not in _IMPORT_PRICE_KEYS}
    return (
        span.trace_id, span.parent_span_id, span.name, span.kind, span.start_ns, span.end_ns,
        attributes, span.status, span.status_message, span.links, span.resource, span.scope, others,
    )


def _start_facts(span: SpanData) -> tuple:
    return (span.trace_id, span.parent_span_id, span.name, span.kind, span.start_ns)


def _span_diff(a: SpanData, b: SpanData) -> str:
    fields = ("parent_span_id", "name", "kind", "start_ns", "end_ns", "status", "status_message", "scope")
    named = {f: getattr(a, f) for f in fields} | {f"attribute {k}": v for k, v in a.attributes.items()}
    other = {f: getattr(b, f) for f in fields} | {f"attribute {k}": v for k, v in b.attributes.items()}
    return _diff(named, other) or "its events, links or resource"


def _diff(a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
    """The fields that differ, by name only: a saved value may hold a secret the file had redacted, and an
    error message is shown and logged where the session directory's contents are not."""
    keys = [k for k in list(a) + [k for k in b if k not in a] if a.get(k) != b.get(k)]
    return ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")


# --------------------------------------------------------------------------- planning


class _Session:
    """One session's spans and records while planning (saved ones first)."""

    def __init__(self, plan: SessionImport, spans: list[SpanData], lines: list[EventLine]):
        self.plan = plan
        self.spans: dict[str, SpanData] = {s.span_id: s for s in spans}
        self.records: dict[str, EventLine] = {}
        for line in lines:
            self.records[line.record["message_id"]] = line

    def add(self, span: SpanData, source: str) -> None:
        known = self.spans.get(span.span_id)
        if known is None:
            self._accept(span, source)
            return
        if _facts(known) == _facts(span) or is_redacted_copy(_facts(known), _facts(span)):
            self._check_records(span, source)
            return
        if _start_facts(known) == _start_facts(span):
            if known.end_ns is None and span.end_ns is not None:
                self._complete(known, span, source)
                return
            if span.end_ns is None:
                self._check_records(span, source)  # we know more already
                return
        self._refuse_a_second_copy(known, span, source)
        # A different span under a used id: keep it under a derived one.
        n = 1
        while True:
            attributes = {**span.attributes, ORIGINAL_SPAN_ID: span.attributes.get(ORIGINAL_SPAN_ID, span.span_id)}
            renamed = dataclasses.replace(span, span_id=_derived_span_id(span, n), attributes=attributes)
            known = self.spans.get(renamed.span_id)
            if known is None:
                self._accept(renamed, source)
                return
            if _facts(known) == _facts(renamed):
                self._check_records(renamed, source)
                return
            n += 1

    def _refuse_a_second_copy(self, known: SpanData, span: SpanData, source: str) -> None:
        """ImportConflict when ``span`` differs from the saved ``known`` yet holds its records: the same span
        read another way (a Jaeger download keeps microseconds and strings where OTLP keeps nanoseconds and
        arrays), not another span that happens to share its id."""
        for line in record_lines(span):
            saved = self.records.get(line.record["message_id"])
            if saved is not None and saved.span_id == known.span_id:
                raise ImportConflict(
                    f"{source}: session {self.plan.session_id}: span {span.span_id} is saved already and this copy "
                    f"of it differs ({_span_diff(known, span)}); import one trace in one format (OTLP or Jaeger), not both"
                )

    def _accept(self, span: SpanData, source: str) -> None:
        self._check_records(span, source)
        self.spans[span.span_id] = span
        self.plan.new_spans.append(span)
        self._take_records(span)

    def _complete(self, known: SpanData, span: SpanData, source: str) -> None:
        self._check_records(span, source)
        self.spans[span.span_id] = span
        self.plan.completed.append((known, span))
        self._take_records(span)

    def _take_records(self, span: SpanData) -> None:
        for line in record_lines(span):
            mid = line.record["message_id"]
            if mid not in self.records:
                self.records[mid] = line
                self.plan.new_records.append(line)

    def _check_records(self, span: SpanData, source: str) -> None:
        for line in record_lines(span):
            mid = line.record["message_id"]
            known = self.records.get(mid)
            if known is None:
                continue
            where = f"{source}: session {self.plan.session_id}: record {mid}"
            # A redacted copy (an --otlp-file of this session) holds nothing the saved record lacks.
            if known.record != line.record and not is_redacted_copy(known.record, line.record):
                raise ImportConflict(
                    f"{where} contradicts the one already saved (it differs in {_diff(known.record, line.record)})"
                )
            if (known.trace_id, known.span_id) != (line.trace_id, line.span_id):
                raise ImportConflict(
                    f"{where} is on span {line.span_id} but already saved on span {known.span_id}"
                )
            if known.ts != line.ts:
                raise ImportConflict(f"{where} is dated {line.ts} but already saved as of {known.ts}")


def _load_saved(store: SessionStore) -> tuple[list[SpanData], list[EventLine], dict[str, Any] | None]:
    """The spans and records a session directory holds; ImportConflict if they cannot be merged with."""
    meta = None
    if store.meta_path.exists():
        try:
            meta = store.read_meta()
        except StoreError as exc:
            raise ImportConflict(f"session {store.session_id} exists but {exc}") from None
    has_content = store.events_path.exists() or store.tree_path.exists()
    if not store.journal_path.exists():
        if has_content:
            raise ImportConflict(
                f"session {store.session_id} exists without {store.journal_path.name} (saved by an older otel-agents), "
                "so it cannot be merged with; import into another --sessions-dir"
            )
        return [], [], meta
    try:
        # A torn last line (a crashed writer) is skipped here and cut off before appending.
        lines = read_event_lines(store.events_path, stderr_warning) if store.events_path.exists() else []
        spans = spans_from_journal(read_journal(store.journal_path, stderr_warning), lines)
        build_tree(spans, store.session_id)  # proves the saved spans make a tree before anything is merged
    except (JournalError, EventsFileError, OSError, ValueError, TypeError, LookupError, AttributeError) as exc:
        raise ImportConflict(f"session {store.session_id} exists but cannot be read: {exc}") from None
    return spans, lines, meta


def plan_import(sources: Iterable[Source], sessions_dir: Path) -> list[SessionImport]:
    """What importing these spans would do; reads the session directories, writes nothing."""
    sources = list(sources)
    source_of: dict[int, str] = {}
    everything: list[SpanData] = []
    for source in sources:
        for span in source.spans:
            source_of[id(span)] = source.name
            everything.append(span)
    session_of_trace = sessions_of_traces(everything)
    paths = Paths(Path(sessions_dir), Path("/dev/null"))
    sessions: dict[str, _Session] = {}
    for span in everything:  # file order, then span order: later files meet earlier ones as saved
        session_id = session_of_trace[span.trace_id]
        state = sessions.get(session_id)
        if state is None:
            directory = paths.session_dir(session_id)
            store = SessionStore(directory)
            saved_spans, saved_lines, meta = _load_saved(store) if directory.is_dir() else ([], [], None)
            plan = SessionImport(session_id, directory, existed=directory.is_dir())
            plan.created_ns = created_ns_of(meta) or 0
            state = sessions[session_id] = _Session(plan, saved_spans, saved_lines)
        try:
            stored = in_journal_form(span)
        except (ValueError, OverflowError, TypeError) as exc:
            raise ImportConflict(f"{source_of[id(span)]}: span {span.span_id} of trace {span.trace_id} "
                                 f"cannot be stored: {exc}") from None
        state.add(stored, source_of[id(span)])
    plans = []
    for state in sessions.values():
        plan = state.plan
        plan.new_spans.sort(key=lambda s: (s.start_ns, s.span_id))
        plan.new_records.sort(key=lambda l: message_id_number(l.record["message_id"]))
        try:
            plan.tree = build_tree(list(state.spans.values()), plan.session_id)
        except (ValueError, TypeError, LookupError, AttributeError) as exc:
            raise ImportConflict(f"session {plan.session_id}: the spans cannot be put in a tree "
                                 f"({type(exc).__name__}: {exc})") from None
        if not plan.created_ns:
            plan.created_ns = plan.tree.get("started_ns") or min((s.start_ns for s in state.spans.values()), default=0)
        plan.whole = ready_to_bill(list(state.spans.values()))
        plan.ledger = ledger_records(plan.tree) if plan.whole else []
        plans.append(plan)
    return plans


# --------------------------------------------------------------------------- writing


def apply_import(plans: Sequence[SessionImport], sessions_dir: Path, billing_file: Path,
                 own: Callable[[Path], Any] | None = None) -> None:
    """Write each changed session directory, then append every session's ledger records.

    ``own``: called with each directory before it is written, to own it (import_locks.py).
    """
    from otel_agents.persistence.ledger import append_records
    from otel_agents.persistence.store import check_ledger_writable

    # Every destination is proved writable (and the ledger one) before the first byte goes anywhere.
    if any(plan.ledger for plan in plans):
        check_ledger_writable(billing_file)
    stores = {plan.session_id: SessionStore.create(Path(sessions_dir), plan.session_id) for plan in plans if plan.changed}
    if own is not None:
        for plan in plans:
            if plan.changed:
                own(stores[plan.session_id].directory)
    for plan in plans:
        if plan.changed:
            _write_session(stores[plan.session_id], plan)
    for plan in plans:
        store = stores.get(plan.session_id) or SessionStore(Path(sessions_dir) / plan.session_id)
        if not plan.whole:  # billed by the import that completes it, or by `sessions repair` / resume
            if plan.changed:
                mark_awaiting_trace(store)
            continue
        plan.ledger = ledger_records(plan.tree)  # of the tree as written
        plan.ledger_written = append_records(billing_file, plan.ledger) if plan.ledger else 0
        try:
            mark_billed(store.directory, store.read_meta())  # a resume need not bill these runs again
        except StoreError:
            pass


def _write_session(store: SessionStore, plan: SessionImport) -> None:
    """The plan through the one session writer (session_sink.py), as a live run would have written it.

    Records first (each is already on its span's events), then each new span's start and
    end, then the ends of saved spans that were open; the tree and meta.json once, at the end.
    """
    from otel_agents.persistence.session_sink import SessionSink

    warnings: list[str] = []
    sink = SessionSink(store, plan.session_id, resume=plan.existed, from_journal=True, live=False,
                       created_ns=plan.created_ns or time.time_ns(), warn=warnings.append)
    for line in plan.new_records:
        sink.record(line.record, _ns(line.ts), line.trace_id, line.span_id)
    open_private_append(store.events_path).close()  # a session of another software's trace has no records, but the file is part of it
    for span in plan.new_spans:
        sink.start(span)
        if span.end_ns is not None:
            sink.end(span)
    for _, ended in plan.completed:
        sink.end(ended)
    if sink.saved_everything:  # a session imported in parts: its records in message order, as the run wrote them
        sort_events_file(store.events_path)
    # The plan's tree is build_tree of the very spans the sink now holds (pure, order-independent):
    # a 100k-span session is not built twice. Its mark names the sorted file.
    tree = sink.checkpoint(plan.tree)
    sink.close()
    if not sink.saved_everything or tree is None:
        raise StoreError(warnings[0] if warnings else f"cannot save session {plan.session_id}")
    plan.tree = tree


def _ns(ts: str | None) -> int:
    from otel_agents.persistence.timestamps import parse_iso_ts

    return parse_iso_ts(ts) if ts else 0
