"""GenAI metrics derived from ended spans: a span processor that records the conventions' instruments.

Spans are the state: nothing in the runtime or the LLM client meters anything. Each ended
``chat``, ``invoke_agent`` and ``execute_tool`` span (recognised by ``gen_ai.operation.name``)
is turned into measurements, so spans read back from a file or a Collector could feed the
same instruments (:meth:`GenAiMetrics.observe`). Names, units, bucket boundaries and
attributes are those of the GenAI semantic conventions (model/gen-ai/metrics.yaml and
docs/gen-ai/gen-ai-metrics.md); the cost counter is ours (``otel_agents.usage.cost``, USD),
summed from the same ``gen_ai.usage.cost`` span attribute the billing ledger is built from.
Metric attributes are redacted (IP addresses masked) as every copy that leaves the session is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.trace import StatusCode

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.redaction import redact_text
from otel_agents.tracing.spandata import SpanData

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider

METER_NAME = "otel_agents"

# --- instruments (model/gen-ai/metrics.yaml) ---
CLIENT_OPERATION_DURATION = "gen_ai.client.operation.duration"
CLIENT_TOKEN_USAGE = "gen_ai.client.token.usage"
CLIENT_TIME_TO_FIRST_CHUNK = "gen_ai.client.operation.time_to_first_chunk"
INVOKE_AGENT_DURATION = "gen_ai.invoke_agent.duration"
EXECUTE_TOOL_DURATION = "gen_ai.execute_tool.duration"
USAGE_COST = "otel_agents.usage.cost"  # not a convention: what the ledger bills, in USD

# --- explicit bucket boundaries (docs/gen-ai/gen-ai-metrics.md, "ExplicitBucketBoundaries of") ---
SECONDS_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
AGENT_SECONDS_BUCKETS = (0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 102.4, 204.8, 409.6)

GEN_AI_TOKEN_TYPE = "gen_ai.token.type"
TOKEN_TYPE_INPUT = "input"
TOKEN_TYPE_OUTPUT = "output"
ERROR_OTHER = "_OTHER"  # the conventions' fallback error.type
# The streaming part names this span attribute in semconv; until then, the registry's name.
TIME_TO_FIRST_CHUNK_ATTRIBUTE = getattr(
    sc, "GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK", "gen_ai.response.time_to_first_chunk"
)

# Metric attributes copied from the span when present (low cardinality only: no ids, no content).
CHAT_ATTRIBUTES = (
    sc.GEN_AI_OPERATION_NAME,
    sc.GEN_AI_PROVIDER_NAME,
    sc.GEN_AI_REQUEST_MODEL,
    sc.GEN_AI_RESPONSE_MODEL,
    sc.SERVER_ADDRESS,
    sc.SERVER_PORT,
)
# Exactly the conventions' attributes of the agent and tool metrics (plus error.type when failed).
AGENT_ATTRIBUTES = (sc.GEN_AI_AGENT_NAME, sc.GEN_AI_REQUEST_MODEL)
TOOL_ATTRIBUTES = (sc.GEN_AI_TOOL_NAME, sc.GEN_AI_TOOL_TYPE, sc.GEN_AI_AGENT_NAME)


def _number(value: Any) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _pick(attributes: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    # Metrics only leave the session (a metrics file, a Collector): redacted as spans' copies are,
    # so `server.address` says [IP] there too (unless OTEL_AGENTS_KEEP_IPS).
    return {k: redact_text(v) if isinstance(v, str) else v
            for k in keys if (v := attributes.get(k)) not in (None, "")}


@dataclass(frozen=True)
class EndedOperation:
    """What one ended span gives the metrics: its attributes, duration and outcome."""

    attributes: Mapping[str, Any]
    duration_s: float
    failed: bool

    @classmethod
    def of(cls, span: ReadableSpan) -> "EndedOperation | None":
        if span.end_time is None or span.start_time is None:
            return None
        return cls(dict(span.attributes or {}), (span.end_time - span.start_time) / 1e9,
                   span.status.status_code is StatusCode.ERROR)

    @classmethod
    def of_spandata(cls, span: SpanData) -> "EndedOperation | None":
        """The same from a decoded span (an imported or ingested trace); None if it never ended."""
        if span.end_ns is None:
            return None
        return cls(dict(span.attributes), (span.end_ns - span.start_ns) / 1e9, span.status == "ERROR")


class GenAiMetrics:
    """The conventions' instruments on one meter, and how an ended operation feeds them."""

    def __init__(self, meter_provider: "MeterProvider"):
        meter = meter_provider.get_meter(METER_NAME)
        self.operation_duration = meter.create_histogram(
            CLIENT_OPERATION_DURATION, unit="s", description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=SECONDS_BUCKETS,
        )
        self.token_usage = meter.create_histogram(
            CLIENT_TOKEN_USAGE, unit="{token}", description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )
        self.time_to_first_chunk = meter.create_histogram(
            CLIENT_TIME_TO_FIRST_CHUNK, unit="s",
            description="Time to receive the first chunk of a streamed response.",
            explicit_bucket_boundaries_advisory=SECONDS_BUCKETS,
        )
        self.agent_duration = meter.create_histogram(
            INVOKE_AGENT_DURATION, unit="s", description="The end-to-end duration of a single agent invocation.",
            explicit_bucket_boundaries_advisory=AGENT_SECONDS_BUCKETS,
        )
        self.tool_duration = meter.create_histogram(
            EXECUTE_TOOL_DURATION, unit="s", description="The duration of a single tool execution.",
            explicit_bucket_boundaries_advisory=SECONDS_BUCKETS,
        )
        self.cost = meter.create_counter(
            USAGE_COST, unit="USD", description="Cost of LLM calls as billed in the ledger (otel-agents)."
        )

    def observe(self, op: EndedOperation) -> None:
        operation = op.attributes.get(sc.GEN_AI_OPERATION_NAME)
        if operation == sc.OP_CHAT:
            self._chat(op)
        elif operation == sc.OP_INVOKE_AGENT:
            self.agent_duration.record(op.duration_s, self._with_error(op, AGENT_ATTRIBUTES))
        elif operation == sc.OP_EXECUTE_TOOL:
            self.tool_duration.record(op.duration_s, self._with_error(op, TOOL_ATTRIBUTES))

    def _chat(self, op: EndedOperation) -> None:
        attrs = op.attributes
        base = _pick(attrs, CHAT_ATTRIBUTES)
        self.operation_duration.record(op.duration_s, self._with_error(op, CHAT_ATTRIBUTES))
        # Usage exists only on attempts that got an answer: the same ones the ledger counts tokens for.
        usage_keys = ((TOKEN_TYPE_INPUT, sc.GEN_AI_USAGE_INPUT_TOKENS), (TOKEN_TYPE_OUTPUT, sc.GEN_AI_USAGE_OUTPUT_TOKENS))
        for token_type, key in usage_keys:
            count = _number(attrs.get(key))
            if count is not None:
                self.token_usage.record(int(count), {**base, GEN_AI_TOKEN_TYPE: token_type})
        first_chunk = _number(attrs.get(TIME_TO_FIRST_CHUNK_ATTRIBUTE))
        if first_chunk is not None:
            self.time_to_first_chunk.record(float(first_chunk), base)
        cost = _number(attrs.get(sc.GEN_AI_USAGE_COST))
        if cost is not None and cost >= 0:  # a counter only goes up; unpriced calls add nothing
            self.cost.add(float(cost), base)

    @staticmethod
    def _with_error(op: EndedOperation, keys: tuple[str, ...]) -> dict[str, Any]:
        out = _pick(op.attributes, keys)
        if op.failed:
            out[sc.ERROR_TYPE] = op.attributes.get(sc.ERROR_TYPE) or ERROR_OTHER
        return out


class GenAiMetricsProcessor(SpanProcessor):
    """Feeds :class:`GenAiMetrics` from ended spans; shutting it down flushes and stops its meters."""

    def __init__(self, meter_provider: Any):
        self.meter_provider = meter_provider
        self.metrics = GenAiMetrics(meter_provider)
        self._shut = False

    def on_end(self, span: ReadableSpan) -> None:
        op = EndedOperation.of(span)
        if op is not None:
            self.metrics.observe(op)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.meter_provider.force_flush(timeout_millis)

    def shutdown(self) -> None:
        # The readers' last collection: a short run's only export happens here. Once only: both the
        # tracer provider and a detached gate may ask.
        if not self._shut:
            self._shut = True
            self.meter_provider.shutdown()
