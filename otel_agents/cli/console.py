"""Console log lines rendered from span data (seed 002 "Console Logging Semantics").

Every stderr line reads ``[txn:<session txn>] <path label> <kind>/<id>: <LEVEL> <message>``:
the txn is the session's console id (the first run's trace id prefix, the seed's
originTxnId), the same on every run, resume and ``send`` of the session, so one grep
finds all of it; each run's own trace id stays on its spans. The path label is the
tree position of the operation the line concerns, the kind is llm, tool or session.
Nothing in the runtime prints; this span processor (and live-record listener) is the
only place console lines come from.

Levels: by default only WRN and ERR (a budget warning's ``host_notice`` record is a WRN
line too). ``verbose`` adds one VRB line per LLM and tool request/response (latency,
sizes, tokens, cost) and per working-memory truncation, THK lines for reasoning and a FIN line per run.
A run that stops on an error ends with its ``error:`` line (``run_line``), named by the run's root. ``trace_llm`` /
``trace_tools`` add TRC lines with the full request and response payloads, redacted
and capped.

The console is a copy that leaves the session: spans and records hold content as the
model was sent it, so every line is redacted here (``redaction.redact``), and shown with its
control characters escaped (``terminal_text.shown``: a model's ESC or U+202E never reaches the terminal).
"""

from __future__ import annotations

import json
import math
import sys
import threading
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Context, Decimal
from typing import Any, Callable, Mapping, TextIO

from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import Span as ApiSpan

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import message_from_record
from otel_agents.terminal_text import shown
from otel_agents.tracing.redaction import redact, redact_text

TXN_PREFIX = 8
TRACE_CAP = 4096  # bytes of payload per TRC line


@dataclass
class ConsoleOptions:
    verbose: bool = False
    trace_llm: bool = False
    trace_tools: bool = False


def _cap(text: str, cap: int = TRACE_CAP) -> str:
    raw = text.encode("utf-8")
    if len(raw) <= cap:
        return text
    return raw[:cap].decode("utf-8", "ignore") + f"…[{len(raw) - cap} more bytes]"


def _payload(value: Any) -> str:
    """A TRC payload: redacted before it is capped, so no cut can leave half a secret unmatched."""
    return _cap(json.dumps(redact(value), ensure_ascii=False))


def one_line(text: object) -> str:
    """The text with its line breaks (and runs of spaces) as single spaces: a stderr line is one line."""
    return " ".join(str(text).split())


def kind_and_id(name: str, attributes: Mapping[str, Any]) -> tuple[str, str]:
    operation = attributes.get(sc.GEN_AI_OPERATION_NAME) or name.split(" ", 1)[0]
    if operation == sc.OP_CHAT:
        model = str(attributes.get(sc.LLM_MODEL) or attributes.get(sc.GEN_AI_REQUEST_MODEL, "?"))
        provider = attributes.get(sc.GEN_AI_PROVIDER_NAME)
        short = model.split("/", 1)[1] if "/" in model else model
        return "llm", f"{provider}:{short}" if provider else model
    if operation == sc.OP_EXECUTE_TOOL:
        return "tool", f"{attributes.get(sc.GEN_AI_TOOL_TYPE, 'function')}:{attributes.get(sc.GEN_AI_TOOL_NAME, '?')}"
    return "session", str(attributes.get(sc.GEN_AI_AGENT_NAME) or name.split(" ", 1)[-1])


def txn_of(trace_id: int) -> str:
    """The console id a trace id gives: its first hex digits."""
    return format(trace_id, "032x")[:TXN_PREFIX]


def saved_txn(runs: list[Mapping[str, Any]]) -> str | None:
    """The console id of a saved session from its runs (the tree's ``runs``, or meta's
    ``last_run`` alone): the one recorded on them, else, for a session saved before ids
    were recorded, its first run's trace id prefix (when ``runs`` starts with run 1)."""
    for run in reversed(runs):
        txn = (run.get("attributes") or {}).get(sc.SESSION_TXN) or run.get("txn")
        if isinstance(txn, str) and txn:
            return txn
    if not runs or runs[0].get("index") != 1:
        return None
    try:
        return txn_of(int(runs[0]["trace_id"], 16))
    except (KeyError, TypeError, ValueError):
        return None


def keep_session_txn(session, context, txn: str | None) -> None:
    """Record the console id on the root span of every run ``context`` starts (``SESSION_TXN``).

    A new session's id is its first run's trace id prefix, known only once that run has
    begun: it is set on that run's root span from inside the run, and on the later ones
    at their start.
    """
    from opentelemetry import trace

    if txn is not None:
        context.extra[sc.SESSION_TXN] = txn
        return

    def first_run() -> None:
        span = trace.get_current_span()
        ctx = span.get_span_context()
        if ctx.is_valid:
            context.extra[sc.SESSION_TXN] = txn_of(ctx.trace_id)
            span.set_attribute(sc.SESSION_TXN, context.extra[sc.SESSION_TXN])

    session.before_next_run.append(first_run)


def _operation(span: ApiSpan) -> Any:
    return (getattr(span, "attributes", None) or {}).get(sc.GEN_AI_OPERATION_NAME)


_MICRO = Decimal("0.000001")


def dollars(cost: float | int) -> str:
    """A cost to the micro-dollar, rounded half-even as `billing summary` rounds its exact sums (a float's
    ``:.6f`` rounds its binary value: 0.0000135 showed as $0.000013 here and 0.000014 there). Costs are
    rounded to 12 decimals where they are made, so rounding a float sum to 12 first gives the exact sum."""
    if not math.isfinite(cost):
        return f"${cost}"  # a hand-edited meta.json: the listing still lists
    exact = Decimal(repr(round(cost, 12)))
    # enough digits for any total (the default 28 cannot show 1e22 to the micro-dollar)
    return f"${exact.quantize(_MICRO, rounding=ROUND_HALF_EVEN, context=Context(prec=max(28, exact.adjusted() + 8)))}"


def _money(cost: Any) -> str:
    return "unpriced" if cost is None else dollars(cost)


def total_cost(cost: Any, unpriced_calls: Any, llm_calls: Any) -> str:
    """A total's cost as text: never a plain zero for calls whose cost is unknown. ``unpriced`` when every
    call was; a trailing ``+`` (at least this much) when some were."""
    if isinstance(cost, bool) or not isinstance(cost, (int, float)):
        return "?"  # a hand-edited meta.json: the listing still lists
    unpriced = unpriced_calls if isinstance(unpriced_calls, int) and not isinstance(unpriced_calls, bool) else 0
    if unpriced > 0 and isinstance(llm_calls, int) and unpriced >= llm_calls:
        return "unpriced"
    return dollars(cost) + ("+" if unpriced > 0 else "")


@dataclass
class ConsoleRenderer(SpanProcessor):
    """Renders console lines; ``label_of(span_id_hex)`` gives the tree position's label."""

    label_of: Callable[[str], str | None]
    options: ConsoleOptions = field(default_factory=ConsoleOptions)
    txn: str | None = None  # the session's console id; a new session's is its first run's trace id prefix
    out: TextIO = field(default_factory=lambda: sys.stderr)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _gone: bool = field(default=False, repr=False)  # the console could not be written: nothing more is tried
    _run_root: Any = field(default=None, repr=False)  # the root span of the run last started

    # --- line assembly ---
    def _line(self, span: ApiSpan | ReadableSpan, level: str, message: str) -> str | None:
        ctx = span.get_span_context() if hasattr(span, "get_span_context") else span.context
        if ctx is None or not ctx.is_valid:
            return None
        attributes = getattr(span, "attributes", None) or {}
        kind, ident = kind_and_id(getattr(span, "name", ""), attributes)
        label = self.label_of(format(ctx.span_id, "016x")) or "?"
        txn = self.txn or txn_of(ctx.trace_id)
        return shown(redact_text(f"[txn:{txn}] {label} {kind}/{ident}: {level} {message}"))

    def run_line(self, level: str, message: str) -> str:
        """A line about the run last started as a whole (the ``error:`` it stopped with), named as the
        other lines are: ``[txn:…] run session/<agent>: error: …``; without a run, ``<level> <message>``."""
        line = self._line(self._run_root, level, message) if self._run_root is not None else None
        return line if line is not None else shown(redact_text(f"{level} {message}"))

    def _emit(self, span: ApiSpan | ReadableSpan, level: str, message: str) -> None:
        line = self._line(span, level, message)
        if line is None:
            return
        with self._lock:
            if self._gone:
                return
            try:
                print(line, file=self.out, flush=True)
            except (OSError, ValueError):  # a closed pipe (`| head`) or stream: the run goes on, unseen
                # Raising here would escape span start or a record's listener and leave the span open.
                self._gone = True

    # --- live records and logs (Telemetry listener) ---
    def on_record(self, span: ApiSpan, record: Mapping[str, Any], ts_ns: int) -> None:
        if record.get("event_type") == sc.EVENT_HOST_NOTICE:
            # A retry, a denial and an exhausted budget have log lines of their own; a budget warning
            # has only its record. Only on the attempt that spent it: a fork replays the records it
            # inherits on its run's root span, and those were told in their own run.
            if record.get("notice") == "budget_warning" and _operation(span) == sc.OP_CHAT:
                self._emit(span, "WRN", one_line(record.get("content") or ""))
            elif (record.get("notice") == "truncation" and self.options.verbose
                  and _operation(span) != sc.OP_INVOKE_AGENT):  # made in a turn or a tool call, not replayed
                self._emit(span, "VRB", one_line(record.get("content") or ""))
            return
        if not (self.options.trace_llm or self.options.trace_tools):
            return
        if record.get("event_type") == sc.EVENT_TRANSCRIPT_ENTRY:
            operation = _operation(span)
            if operation == sc.OP_CHAT and self.options.trace_llm:
                self._emit(span, "TRC", "response " + _payload(message_from_record(record)))
            elif operation == sc.OP_EXECUTE_TOOL and self.options.trace_tools and record.get("role") == "tool":
                self._emit(span, "TRC", "result " + _payload(record.get("content")))

    def on_request(self, span: ApiSpan, messages: list[dict[str, Any]]) -> None:
        """The messages an LLM attempt sends, whole (a resumed agent's history included)."""
        if self.options.trace_llm:
            self._emit(span, "TRC", "request " + _payload(messages))

    def on_log(self, span: ApiSpan, level: str, message: str, ts_ns: int) -> None:
        if level in ("WRN", "ERR") or (level in ("THK", "VRB", "FIN") and self.options.verbose) or (
            level == "TRC" and (self.options.trace_llm or self.options.trace_tools)
        ):
            self._emit(span, level, one_line(message) if level != "THK" else message.replace("\n", " ⏎ "))

    # --- span start/end (SpanProcessor) ---
    def on_start(self, span: Span, parent_context=None) -> None:
        attributes = span.attributes or {}
        operation = attributes.get(sc.GEN_AI_OPERATION_NAME)
        if operation == sc.OP_INVOKE_AGENT and span.parent is None:
            self._run_root = span
            if self.txn is None:
                self.txn = txn_of(span.context.trace_id)  # a new session: its first run names it
        if operation == sc.OP_CHAT:
            if self.options.verbose:
                self._emit(span, "VRB", f"request attempt {attributes.get(sc.LLM_ATTEMPT, 1)}: "
                           f"{attributes.get(sc.CONTEXT_MESSAGE_COUNT, 0)} messages, "
                           f"{attributes.get(sc.CONTEXT_CHARS, 0)} chars")
        elif operation == sc.OP_EXECUTE_TOOL and self.options.verbose:
            self._emit(span, "VRB", f"request: {attributes.get(sc.TOOL_CHARS_IN, 0)} chars of arguments")

    def on_end(self, span: ReadableSpan) -> None:
        attributes = span.attributes or {}
        operation = attributes.get(sc.GEN_AI_OPERATION_NAME)
        if not self.options.verbose:
            return
        if operation == sc.OP_CHAT and sc.ERROR_TYPE not in attributes:
            self._emit(span, "VRB", (
                f"response {attributes.get(sc.LLM_LATENCY_MS, 0):.0f} ms, "
                f"{attributes.get(sc.GEN_AI_USAGE_INPUT_TOKENS, 0)} in / "
                f"{attributes.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS, 0)} out tokens, "
                f"{attributes.get(sc.RESPONSE_CHARS, 0)} chars, {_money(attributes.get(sc.GEN_AI_USAGE_COST))}"
            ))
        elif operation == sc.OP_EXECUTE_TOOL:
            self._emit(span, "VRB", (
                f"response {attributes.get(sc.TOOL_STATUS, '?')}, {attributes.get(sc.TOOL_CHARS_OUT, 0)} chars, "
                f"{attributes.get(sc.TOOL_LATENCY_MS, 0):.0f} ms"
            ))
        elif operation == sc.OP_INVOKE_AGENT and span.parent is None:
            self._emit(span, "FIN", (
                f"run {attributes.get(sc.RUN_INDEX, '?')} done: "
                f"{attributes.get(sc.total_attr('inclusive', 'llm_calls'), 0)} LLM calls, "
                f"{attributes.get(sc.total_attr('inclusive', 'tool_calls'), 0)} tool calls, "
                f"{attributes.get(sc.total_attr('inclusive', 'input_tokens'), 0)} in / "
                f"{attributes.get(sc.total_attr('inclusive', 'output_tokens'), 0)} out tokens, "
                + total_cost(attributes.get(sc.total_attr('inclusive', 'cost_usd'), 0),
                             attributes.get(sc.total_attr('inclusive', 'unpriced_calls'), 0),
                             attributes.get(sc.total_attr('inclusive', 'llm_calls'), 0))
            ))
