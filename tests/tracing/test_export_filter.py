"""The network copy of spans: capped values, bounded attribute counts, bounded spans and batches.

The end-to-end checks run real sessions whose tool output is far beyond what a
collector accepts, export them through the project's own configuration to a
real gRPC receiver with the collectors' default 4 MiB message limit, and
compare with the local ``--otlp-file`` copy, which must keep every byte.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_agents.runtime.tools import ToolContext, make_tool
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.export_caps import cap_value, value_bytes
from otel_agents.tracing.export_size import encoded_size
from otel_agents.tracing.export_filter import NetworkExportFilter
from otel_agents.tracing.export_rules import MAX_ATTRIBUTES, ExportLimits, filter_span
from otel_agents.tracing.export_size import chunk_by_size
from otel_agents.tracing.setup import TracingOptions, configure_tracing
from support.otlp_receivers import GrpcTraceReceiver, HttpTraceReceiver

from tracing_scenarios import BIG_TOOL_SCRIPT, make_user_tools, run_session, write_script

GRPC_DEFAULT_MAX_MESSAGE = 4 * 1024 * 1024
MARKER_START = "…[truncated "


def _dropped_in_marker(text: str) -> int:
    return int(text.rsplit(MARKER_START, 1)[1].split(" ", 1)[0])


def _finished(build) -> list:
    memory = InMemorySpanExporter()
    unset = SpanLimits.UNSET  # as configure_tracing: nothing dropped locally
    limits = SpanLimits(max_span_attributes=unset, max_event_attributes=unset, max_events=unset)
    provider = TracerProvider(span_limits=limits)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    build(provider.get_tracer("otel_agents"))
    provider.shutdown()
    return list(memory.get_finished_spans())


# --- values ---


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=0, max_size=3000), st.integers(min_value=256, max_value=4000))
def test_capped_strings_fit_the_cap_and_say_what_was_dropped(text, cap):
    out = cap_value(text, cap)
    if value_bytes(text) <= cap:
        assert out == text
        return
    assert value_bytes(out) <= cap
    head = out.rsplit(MARKER_START, 1)[0]
    assert text.startswith(head)
    assert _dropped_in_marker(out) == value_bytes(text) - value_bytes(head)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=400), min_size=1, max_size=30), st.integers(min_value=256, max_value=2000))
def test_capped_string_arrays_fit_the_cap_as_a_whole(items, cap):
    out = cap_value(items, cap)
    assert value_bytes(out) <= max(cap, value_bytes(items) if value_bytes(items) <= cap else 0)
    if value_bytes(items) > cap:
        last = out[-1]
        kept = value_bytes(out[:-1]) + value_bytes(last.rsplit(MARKER_START, 1)[0])
        assert _dropped_in_marker(last) == value_bytes(items) - kept
        assert out[:-1] == items[: len(out) - 1]


def test_cap_never_splits_a_multibyte_character():
    text = "😀" * 1000  # 4 bytes each
    out = cap_value(text, 1001)
    head = out.rsplit(MARKER_START, 1)[0]
    assert set(head) == {"😀"} and value_bytes(out) <= 1001


def test_non_text_values_pass_unchanged():
    assert cap_value(12345678901234, 256) == 12345678901234
    assert cap_value(0.5, 256) == 0.5
    assert cap_value([1, 2, 3], 256) == [1, 2, 3]


def test_chunks_stay_under_the_limit_and_keep_every_span_in_order():
    def build(tracer):
        for i in range(60):
            with tracer.start_as_current_span(f"s{i}") as span:
                span.set_attribute("blob", "b" * (50_000 + 1000 * i))

    spans = [filter_span(s) for s in _finished(build)]
    limit = 512 * 1024
    chunks = chunk_by_size(spans, limit)
    assert len(chunks) > 1
    assert [s.name for c in chunks for s in c] == [s.name for s in spans]
    for chunk in chunks:
        assert encode_spans(chunk).ByteSize() <= limit


def test_spans_with_nothing_to_change_are_sent_as_they_are_and_the_others_as_copies():
    key = "sk-" + "A1b2C3d4" * 4

    def build(tracer):
        with tracer.start_as_current_span("plain", attributes={sc.GEN_AI_OPERATION_NAME: "chat"}) as span:
            span.add_event(sc.EVENT_LOG, {sc.LOG_LEVEL: "INF", sc.EVENT_FIELD_PREFIX + "message_id": "msg_000001"})
        with tracer.start_as_current_span("secret") as span:
            span.add_event("transcript_entry", {sc.EVENT_FIELD_PREFIX + "content": f"my key is {key}"})
        with tracer.start_as_current_span("big", attributes={"blob": "b" * 100_000}):
            pass
        with tracer.start_as_current_span("private", attributes={sc.GEN_AI_INPUT_MESSAGES: "hello"}):
            pass

    spans = _finished(build)
    plain, secret, big, private = spans
    for export_content in (True, False):
        sent: list = []
        exporter = NetworkExportFilter(_Collecting(sent), export_content=export_content)
        assert exporter.export(spans) is SpanExportResult.SUCCESS
        out_plain, out_secret, out_big, out_private = sent
        assert out_plain is plain  # no copy of a span the network copy would equal
        assert out_secret is not secret and key not in str(dict(out_secret.events[0].attributes))
        assert out_big is not big and value_bytes(out_big.attributes["blob"]) <= ExportLimits().value_cap
        assert (out_private is private) is export_content
        for original, out in zip(spans, sent):
            assert encode_spans([out]) == encode_spans([filter_span(original, export_content=export_content)])
    assert key in secret.events[0].attributes[sc.EVENT_FIELD_PREFIX + "content"]  # the local span keeps it
    assert private.attributes[sc.GEN_AI_INPUT_MESSAGES] == "hello"


def test_a_text_repeated_across_a_batch_is_redacted_in_every_span_as_alone():
    key = "sk-" + "Z9y8X7w6" * 4
    said = f"the key {key} again"

    def build(tracer):
        for i in range(4):  # the same text on spans, events and the next batch's spans
            with tracer.start_as_current_span(f"s{i}", attributes={"said": said, "n": i}) as span:
                span.add_event("transcript_entry", {sc.EVENT_FIELD_PREFIX + "content": said})

    spans = _finished(build)
    sent: list = []
    exporter = NetworkExportFilter(_Collecting(sent))
    assert exporter.export(spans[:3]) is SpanExportResult.SUCCESS
    assert exporter.export(spans[3:]) is SpanExportResult.SUCCESS
    assert len(sent) == 4 and key not in repr([(dict(s.attributes), [dict(e.attributes) for e in s.events]) for s in sent])
    for original, out in zip(spans, sent):
        assert encode_spans([out]) == encode_spans([filter_span(original)])


def test_export_requests_stay_under_the_batch_budget_without_encoding_each_span_first():
    def build(tracer):
        for i in range(60):
            with tracer.start_as_current_span(f"s{i}", attributes={"n": i, "tags": ("a", "b")}) as span:
                span.set_attribute("blob", "é" * (20_000 + 500 * i))
                span.add_event(sc.EVENT_LOG, {sc.LOG_LEVEL: "INF", sc.LOG_MESSAGE: "x" * 1000})

    spans = _finished(build)
    requests: list[list] = []
    limits = ExportLimits(span_bytes=128 * 1024, batch_bytes=256 * 1024)
    exporter = NetworkExportFilter(_Collecting(requests, whole=True), limits=limits)
    assert exporter.export(spans) is SpanExportResult.SUCCESS
    assert len(requests) > 1
    for request in requests:
        assert encode_spans(request).ByteSize() <= limits.batch_bytes
    assert [s.name for r in requests for s in r] == [s.name for s in spans]
    # The bound is not wasteful: requests are at least half full (but the last).
    assert all(encode_spans(r).ByteSize() > limits.batch_bytes / 2 for r in requests[:-1])


class _Collecting(SpanExporter):
    def __init__(self, sent: list, whole: bool = False):
        self.sent = sent
        self.whole = whole

    def export(self, spans):
        if self.whole:
            self.sent.append(list(spans))
        else:
            self.sent.extend(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self):
        pass


# --- the exporter wrapper ---


class _Raising(SpanExporter):
    def export(self, spans):
        raise ConnectionError("socket exploded")

    def shutdown(self):
        pass


def _named(prefix: str, count: int = 3) -> list:
    return _finished(lambda tracer: [tracer.start_span(f"{prefix}{i}").end() for i in range(count)])


def _http_filter(receiver, now: list[float], warnings: list[str]) -> NetworkExportFilter:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter

    return NetworkExportFilter(
        HttpSpanExporter(endpoint=receiver.traces_url, timeout=2), warn=warnings.append, clock=lambda: now[0]
    )


# Changed by issue 19: a failure no longer drops the batches of the next seconds; they are
# held and sent with the next attempt, and nothing is said during the run (the exit report counts).
def test_a_failing_endpoint_holds_spans_pauses_and_never_raises():
    warnings: list[str] = []
    now = [100.0]
    with HttpTraceReceiver("refuse", refuse_status=403) as receiver:
        wrapper = _http_filter(receiver, now, warnings)
        assert wrapper.export(_named("a")) is SpanExportResult.FAILURE
        now[0] += wrapper.pause_after_failure_s / 2  # within the pause: held without asking again
        assert wrapper.export(_named("b")) is SpanExportResult.FAILURE
        assert len(receiver.calls) == 1 and wrapper.skipped_spans == 3 and wrapper.held == 6
        now[0] += wrapper.pause_after_failure_s  # after it: tried again, with what was held
        assert wrapper.export(_named("c")) is SpanExportResult.FAILURE
        assert len(receiver.calls) == 2 and wrapper.held == 9 and wrapper.delivered == 0
        receiver.set_mode("ok")
        now[0] += wrapper.pause_after_failure_s
        assert wrapper.export(_named("d")) is SpanExportResult.SUCCESS
        assert wrapper.export(_named("e")) is SpanExportResult.SUCCESS  # no pause after a success
        names = sorted(span.name for span in receiver.spans())
        assert names == sorted(f"{p}{i}" for p in "abcde" for i in range(3))  # each once, none lost
        assert wrapper.delivered == 15 and wrapper.held == 0
    raising = NetworkExportFilter(_Raising(), warn=warnings.append)
    assert raising.export(_named("f")) is SpanExportResult.FAILURE
    assert raising.failure == "ConnectionError: socket exploded" and raising.delivered == 0
    assert warnings == []  # said once at exit, by the processor's report, and only if spans were lost


def test_exit_gives_held_spans_one_more_attempt_and_only_one():
    warnings: list[str] = []
    now = [100.0]
    with HttpTraceReceiver("refuse", refuse_status=403) as receiver:
        wrapper = _http_filter(receiver, now, warnings)
        wrapper.export(_named("a"))
        wrapper.begin_exit()  # within the pause, but the final flush tries at once
        assert wrapper.export(_named("b")) is SpanExportResult.FAILURE and len(receiver.calls) == 2
        assert wrapper.export(_named("c")) is SpanExportResult.FAILURE and len(receiver.calls) == 2
        wrapper.shutdown()  # failed at exit already: not one more timeout
        assert len(receiver.calls) == 2 and wrapper.held == 9
    with HttpTraceReceiver("refuse", refuse_status=403) as receiver:
        wrapper = _http_filter(receiver, now, warnings)
        wrapper.export(_named("a"))
        receiver.set_mode("ok")  # the backend is back; nothing new is queued at exit
        wrapper.begin_exit()
        wrapper.shutdown()
        assert sorted(s.name for s in receiver.spans()) == ["a0", "a1", "a2"] and wrapper.delivered == 3


def test_held_spans_are_bounded_oldest_first():
    with HttpTraceReceiver("refuse", refuse_status=403) as receiver:
        wrapper = _http_filter(receiver, [0.0], [])
        wrapper.max_held_bytes = 4 * encoded_size(_named("x", 1))  # room for a few small spans, not ten
        wrapper.export(_named("a", 10))
        assert 1 <= wrapper.held < 10 and wrapper.discarded == 10 - wrapper.held
        receiver.set_mode("ok")
        wrapper.begin_exit()
        wrapper.shutdown()
        kept = [s.name for s in receiver.spans()]
        assert kept == [f"a{i}" for i in range(10 - len(kept), 10)]  # the newest were kept


def test_the_test_receiver_enforces_the_collector_default_message_limit():
    """Guards the end-to-end test below: an unfiltered giant span is really rejected."""
    spans = _finished(lambda tracer: tracer.start_span("huge", attributes={"blob": "x" * (5 * 1024 * 1024)}).end())
    with GrpcTraceReceiver() as receiver:
        exporter = GrpcSpanExporter(endpoint=receiver.endpoint, insecure=True, timeout=2)
        assert exporter.export(spans) is SpanExportResult.FAILURE
        exporter.shutdown()
        assert receiver.spans() == []


def chatter(ctx: ToolContext, replies: int = 80) -> None:
    """Replies many long texts, as a discussion does.

    replies: how many replies
    """
    for i in range(replies):
        ctx.reply(f"reply {i}: " + "w" * 60_000)


@pytest.fixture
def grpc_env(monkeypatch):
    for var in list(os.environ):
        if var.startswith("OTEL_"):
            monkeypatch.delenv(var)
    with GrpcTraceReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        yield receiver


def _local_spans(path: Path) -> list[dict]:
    return [
        span
        for line in path.read_bytes().splitlines()
        for rs in orjson.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]


def _event_strings(span_events) -> list[str]:
    return [v for _, attrs in span_events for v in attrs.values() if isinstance(v, str)]


def test_ten_megabytes_of_tool_output_reach_the_collector_capped_and_stay_whole_locally(grpc_env, tmp_path):
    receiver = grpc_env
    big = "".join(f"line {i:06d} " + "0123456789abcdef" * 40 + "\n" for i in range(16_000))
    assert len(big) > 10_000_000
    script = dict(BIG_TOOL_SCRIPT)
    script["agents"] = {
        "main": [
            {"tool_calls": [{"name": "dump", "arguments": {}}]},
            {"tool_calls": [{"name": "chatter", "arguments": {"replies": 80}}]},
            "I read it all.",
        ]
    }
    tools = make_user_tools(lambda: big) + [make_tool(chatter)]
    tracing = configure_tracing(TracingOptions(otlp_file=tmp_path / "spans.jsonl"))
    run, _ = run_session(write_script(tmp_path, "big", script), ["read it"], tools=tools, tracing=tracing)
    assert run.error is None and run.utterances == ["I read it all."]

    received = receiver.spans()
    assert [c.outcome for c in receiver.calls] == ["ok"] * len(receiver.calls)  # nothing rejected
    assert sorted(s.span_id for s in received) == sorted(format(s.context.span_id, "016x") for s in run.spans)
    for call in receiver.calls:
        assert call.request.ByteSize() < GRPC_DEFAULT_MAX_MESSAGE
    for span in received:
        assert len(span.attributes) <= MAX_ATTRIBUTES
        for value in list(span.attributes.values()) + _event_strings(span.events):
            assert value_bytes(value) <= ExportLimits().value_cap

    content = sc.EVENT_FIELD_PREFIX + "content"
    dump_span = next(s for s in received if s.name == "execute_tool dump")
    exported = next(a[content] for n, a in dump_span.events if n == "otel_agents.transcript_entry")
    assert exported.startswith("line 000000 ") and _dropped_in_marker(exported) == len(big) - len(
        exported.rsplit(MARKER_START, 1)[0]
    )
    chatter_span = next(s for s in received if s.name == "execute_tool chatter")
    assert len([n for n, _ in chatter_span.events if n == "otel_agents.transcript_entry"]) == 80

    local = {s["name"]: s for s in _local_spans(tmp_path / "spans.jsonl")}
    local_dump = next(e for e in local["execute_tool dump"]["events"] if e["name"] == "otel_agents.transcript_entry")
    local_value = next(a["value"]["stringValue"] for a in local_dump["attributes"] if a["key"] == content)
    assert local_value == big
    local_replies = [
        a["value"]["stringValue"]
        for e in local["execute_tool chatter"]["events"]
        for a in e["attributes"]
        if a["key"] == content
    ]
    assert len(local_replies) == 80 and all(len(r) > 60_000 for r in local_replies)


def test_oversized_values_in_memory_are_untouched_by_export(grpc_env, tmp_path):
    """The filter works on copies: the in-memory spans (what session files are built from) keep everything."""
    receiver = grpc_env
    tracing = configure_tracing(TracingOptions(batch=False))
    memory = InMemorySpanExporter()
    tracing.add_processor(SimpleSpanProcessor(memory))
    with tracing.telemetry.tracer.start_as_current_span("execute_tool t") as span:
        span.add_event("transcript_entry", {sc.EVENT_FIELD_PREFIX + "content": "q" * 200_000})
    tracing.shutdown()
    (local,) = memory.get_finished_spans()
    assert len(local.events[0].attributes[sc.EVENT_FIELD_PREFIX + "content"]) == 200_000
    (sent,) = receiver.spans()
    assert value_bytes(sent.events[0][1][sc.EVENT_FIELD_PREFIX + "content"]) <= ExportLimits().value_cap
