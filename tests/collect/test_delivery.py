"""Delivery semantics over loopback HTTP with the real spans of a scripted run: duplicates, any order,
a cut body, a malformed span, kill -9 and restart, backpressure."""

from __future__ import annotations

import base64
import json
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_agents.persistence.journal import read_journal
from support.collector import (
    Collector, assert_same_session, base_env, ledger, run_session, session_id_in, session_id_of,
)


def _local_run(tmp_path: Path) -> tuple[Path, str, list[dict]]:
    """A scripted run saved locally, and its spans as OTLP/JSON (resource, scope, span) triples."""
    home = tmp_path / "local"
    otlp = tmp_path / "spans.jsonl"
    session_id = session_id_of(run_session(home, None, "http/protobuf", "--otlp-file", str(otlp)))
    triples = []
    for line in otlp.read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                triples += [(rs.get("resource", {}), ss.get("scope", {}), span) for span in ss["spans"]]
    return home, session_id, triples


def _json_body(triples) -> bytes:
    return json.dumps({"resourceSpans": [{"resource": r, "scopeSpans": [{"scope": s, "spans": [span]}]}
                                         for r, s, span in triples]}).encode()


def _protobuf_body(triples) -> bytes:
    """The same request as protobuf: OTLP/JSON's hex ids are base64 in protobuf's JSON mapping."""
    def b64(hex_id):
        return base64.b64encode(bytes.fromhex(hex_id)).decode()
    doc = json.loads(_json_body(triples))
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = b64(span[key])
                for link in span.get("links", []):
                    link["traceId"], link["spanId"] = b64(link["traceId"]), b64(link["spanId"])
    return ParseDict(doc, ExportTraceServiceRequest()).SerializeToString()


def _post(collector: Collector, body: bytes, content_type: str = "application/x-protobuf"):
    request = urllib.request.Request(collector.http_endpoint + "/v1/traces", data=body,
                                     headers={"Content-Type": content_type}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def _chunks(triples, n: int, seed: int):
    shuffled = list(triples)
    random.Random(seed).shuffle(shuffled)  # parents after children, across requests
    return [shuffled[i::n] for i in range(n)]


def test_duplicates_any_order_a_cut_body_and_a_bad_span(tmp_path):
    home, session_id, triples = _local_run(tmp_path)
    chunks = _chunks(triples, 5, seed=20)
    with Collector(tmp_path / "central") as collector:
        cut = _protobuf_body(chunks[0])
        status, _, _ = _post(collector, cut[: len(cut) // 2])
        assert status == 400  # refused whole
        status, _, _ = _post(collector, _json_body(chunks[1])[:-7], "application/json")
        assert status == 400
        status, _, body = _post(collector, _json_body(chunks[1]), "text/plain")
        assert status == 415 and b"unsupported Content-Type 'text/plain'" in body  # as OTLP/HTTP says
        for number, chunk in enumerate(chunks):
            for _ in range(2):  # each request delivered twice
                if number % 2:
                    status, _, _ = _post(collector, _json_body(chunk), "application/json")
                else:
                    status, _, _ = _post(collector, _protobuf_body(chunk))
                assert status == 200
        # One malformed span beside a good one: partial success, the good one kept.
        bad = dict(chunks[2][0][2], spanId="zz")
        status, _, body = _post(collector, _json_body([(chunks[2][0][0], chunks[2][0][1], bad), chunks[2][1]]),
                                "application/json")
        assert status == 200
        answer = json.loads(body)
        assert int(answer["partialSuccess"]["rejectedSpans"]) == 1 and "zz" in answer["partialSuccess"]["errorMessage"]
        assert collector.stop() == 0
    assert_same_session(home, tmp_path / "central", session_id)
    journal = read_journal(tmp_path / "central" / "sessions" / session_id / "spans.jsonl")
    assert sorted(line["end"] for line in journal if "end" in line) == sorted(t[2]["spanId"] for t in triples)


def test_kill_9_mid_stream_keeps_what_was_acknowledged_and_the_retry_delivers_the_rest(tmp_path):
    home, session_id, triples = _local_run(tmp_path)
    chunks = _chunks(triples, 8, seed=9)
    central = tmp_path / "central"
    collector = Collector(central).start()
    try:
        for chunk in chunks[:4]:
            assert _post(collector, _protobuf_body(chunk))[0] == 200
        def send_unanswered():
            try:
                _post(collector, _protobuf_body(chunks[4]))
            except OSError:
                pass  # the receiver died under it: the sender retries it below

        in_flight = threading.Thread(target=send_unanswered, daemon=True)
        in_flight.start()
        collector.proc.send_signal(signal.SIGKILL)
        collector.proc.wait(30)
        journal = read_journal(central / "sessions" / session_id / "spans.jsonl")
        ended = {line["end"] for line in journal if "end" in line}
        assert {t[2]["spanId"] for chunk in chunks[:4] for t in chunk} <= ended  # acknowledged = durable
        collector.start()  # the same home: the sender retries what was not acknowledged
        for chunk in chunks[4:]:
            assert _post(collector, _protobuf_body(chunk))[0] == 200
        assert collector.stop() == 0
    finally:
        if collector.proc.poll() is None:
            collector.proc.kill()
    assert_same_session(home, central, session_id)


class _Fillers:
    """Threads that post ``body`` again and again while told to fill, counting the 429s they get."""

    def __init__(self, collector: Collector, body: bytes, n: int):
        self.collector, self.body = collector, body
        self.refused = 0
        self._filling, self._closed = threading.Event(), threading.Event()
        self._lock = threading.Lock()
        self._posting = 0
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(n)]
        for thread in self._threads:
            thread.start()

    def _run(self) -> None:
        while not self._closed.is_set():
            if not self._filling.wait(0.05):
                continue
            with self._lock:
                if not self._filling.is_set():
                    continue
                self._posting += 1
            status = _post(self.collector, self.body)[0]
            with self._lock:
                self._posting -= 1
                self.refused += status == 429
            if status == 429:
                time.sleep(0.01)

    def fill(self) -> None:
        self._filling.set()

    def pause(self) -> None:
        """No filler posts after this returns, and every answer to one has come back."""
        with self._lock:
            self._filling.clear()
        while True:
            with self._lock:
                if self._posting == 0:
                    return
            time.sleep(0.01)

    def close(self) -> None:
        self.pause()
        self._closed.set()
        for thread in self._threads:
            thread.join(30)


def test_a_slow_writer_answers_429_with_retry_after_and_the_exporters_retry_delivers_everything(tmp_path):
    home, _, triples = _local_run(tmp_path)
    args = ("--max-queued", "1", "--write-delay", "0.1", "--json-log", "--log-every", "0.5")
    with Collector(tmp_path / "central", *args) as collector:
        with ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(lambda chunk: _post(collector, _protobuf_body(chunk)), _chunks(triples, 6, 1)))
        busy = [headers for status, headers, _ in answers if status == 429]
        assert busy and all(headers["Retry-After"] == "1" for headers in busy)
        # Real exporters while the writer stays behind: the test's fillers keep its one-slot queue
        # full (one request written, one queued, the rest refused) until the exporters themselves
        # have been refused, then let it catch up: the exporters' retries after Retry-After must
        # deliver everything. The fillers redeliver one span of the local session: it changes nothing.
        named = next(t for t in triples if any(a["key"] in SESSION_KEYS for a in t[2].get("attributes", [])))
        fillers = _Fillers(collector, _protobuf_body([named]), 3)

        def exporters_refused() -> int:
            """At least how many 429s the exporters met: counted while the fillers are paused, once
            two log lines have come since (a line counts refusals up to just before it is written)."""
            seen = len(collector.lines)
            wait = time.monotonic() + 30
            while sum('"busy"' in line for line in collector.lines[seen:]) < 2 and collector.proc.poll() is None:
                assert time.monotonic() < wait, "the collector stopped logging"
                time.sleep(0.05)
            logged = sum(json.loads(line).get("busy", 0) for line in list(collector.lines))
            return logged - len(busy) - fillers.refused

        env = {"OTEL_BSP_SCHEDULE_DELAY": "20", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "8"}
        homes = [tmp_path / f"worker{i}" for i in range(2)]
        fillers.fill()
        procs = [run_session(h, collector.http_endpoint, "http/protobuf", env=env) for h in homes]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and any(p.poll() is None for p in procs):
            time.sleep(1.0)
            fillers.pause()
            if exporters_refused() >= 1:
                break
            fillers.fill()
        fillers.close()
        outcomes = [proc.communicate(timeout=300) for proc in procs]
        assert collector.stop() == 0
    # Exact now: the fillers have stopped and the line at exit counts the rest.
    exporters = sum(json.loads(line).get("busy", 0) for line in collector.lines) - len(busy) - fillers.refused
    assert exporters >= 1, "the runs ended before their exporters met a 429"
    for h, proc, (_, err) in zip(homes, procs, outcomes):
        assert proc.returncode == 0 and "not delivered" not in err, err
        assert_same_session(h, tmp_path / "central", session_id_in(err))


def test_a_slow_writer_answers_grpc_resource_exhausted_with_retry_info(tmp_path):
    import grpc
    from google.rpc.error_details_pb2 import RetryInfo
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub

    home, session_id, triples = _local_run(tmp_path)
    chunks = _chunks(triples, 6, seed=3)
    args = ("--http", "off", "--max-queued", "1", "--write-delay", "0.3")
    with Collector(tmp_path / "central", *args, grpc=True) as collector:
        with grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}") as channel:
            stub = TraceServiceStub(channel)

            def export(chunk):
                request = ExportTraceServiceRequest.FromString(_protobuf_body(chunk))
                for _ in range(60):  # the sender's retry, after the delay the receiver asks for
                    try:
                        stub.Export(request, timeout=30)
                        return None
                    except grpc.RpcError as error:
                        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                        retry = RetryInfo.FromString(dict(error.trailing_metadata())["google.rpc.retryinfo-bin"])
                        delays.append(retry.retry_delay.seconds)
                        time.sleep(0.2)
                raise AssertionError("never accepted")

            delays: list[int] = []
            with ThreadPoolExecutor(6) as pool:
                list(pool.map(export, chunks))
        assert delays and set(delays) == {1}
        assert collector.stop() == 0
    assert_same_session(home, tmp_path / "central", session_id)


SESSION_KEYS = {"gen_ai.conversation.id", "otel_agents.session.id"}


def _unnamed(triples, trace_id: str | None = None):
    """The spans with their session's name taken off (another service's spans, say), maybe in another trace."""
    out = []
    for resource, scope, span in triples:
        span = dict(span, attributes=[a for a in span.get("attributes", []) if a["key"] not in SESSION_KEYS])
        if trace_id is not None:
            span["traceId"] = trace_id
            span["links"] = []
        out.append((resource, scope, span))
    return out


def _pending_spans(home: Path) -> int:
    path = home / "sessions" / ".collect" / "pending.jsonl"
    return sum(len(ss["spans"]) for line in path.read_text().splitlines() if line.strip()
               for rs in json.loads(line).get("resourceSpans", []) for ss in rs["scopeSpans"])  # not released lines


def test_traces_that_never_name_a_session_are_dropped_after_hold_seconds_and_counted_ignored(tmp_path):
    _, _, triples = _local_run(tmp_path)
    copies = 1 + 1100 // len(triples)  # more spans than pending.jsonl keeps before compacting (HoldPolicy)
    foreign = [t for k in range(copies) for t in _unnamed(triples, f"{k + 1:032x}")]
    central = tmp_path / "central"
    with Collector(central, "--hold-seconds", "2", "--json-log", "--log-every", "0.3") as collector:
        assert _post(collector, _protobuf_body(foreign))[0] == 200
        assert _pending_spans(central) == len(foreign)  # acknowledged: held durably
        deadline = time.monotonic() + 60
        def minutes():
            return [json.loads(line) for line in list(collector.lines) if '"spans_per_s"' in line]
        while sum(m["ignored"] for m in minutes()) < len(foreign):
            assert time.monotonic() < deadline, "".join(collector.lines)
            time.sleep(0.1)
        assert sum(m["ignored"] for m in minutes()) == len(foreign) and minutes()[-1]["held"] == 0
        assert _pending_spans(central) == 0  # dropped from the file while running, not only at stop
        assert collector.stop() == 0
    assert [p.name for p in (central / "sessions").iterdir()] == [".collect"]


def test_held_spans_survive_kill_9_and_a_naming_span_within_hold_seconds_gives_the_session(tmp_path):
    home, session_id, triples = _local_run(tmp_path)
    turns = [t for t in triples if t[2]["name"] == "turn"]
    held, rest = _unnamed(turns), [t for t in triples if t[2]["name"] != "turn"]
    central = tmp_path / "central"
    collector = Collector(central, "--hold-seconds", "120").start()
    try:
        assert _post(collector, _protobuf_body(held))[0] == 200
        collector.proc.send_signal(signal.SIGKILL)
        collector.proc.wait(30)
        assert _pending_spans(central) == len(held)
        collector.start()  # reloads the held spans, their age kept
        for chunk in _chunks(rest, 3, seed=20):
            assert _post(collector, _protobuf_body(chunk))[0] == 200
        assert collector.stop() == 0
    finally:
        if collector.proc.poll() is None:
            collector.proc.kill()
    journal = read_journal(central / "sessions" / session_id / "spans.jsonl")
    assert {line["end"] for line in journal if "end" in line} == {t[2]["spanId"] for t in triples}
    local_events = (home / "sessions" / session_id / "events.jsonl").read_bytes()
    assert (central / "sessions" / session_id / "events.jsonl").read_bytes() == local_events
    assert ledger(central, session_id) == ledger(home, session_id) != set()
    assert _pending_spans(central) == 0
    verify = subprocess.run([sys.executable, "-m", "otel_agents", "sessions", "verify", session_id],
                            env=base_env(central), capture_output=True, text=True, timeout=120)
    assert verify.returncode == 0, verify.stdout + verify.stderr


def _genai_span(span_id: str, parent: str | None, name: str, operation: str, **attributes) -> tuple:
    attributes = {"gen_ai.operation.name": operation, **attributes}
    span = {"traceId": "f2" * 16, "spanId": span_id, "name": name, "kind": 1,
            "startTimeUnixNano": str(1_700_000_000_000_000_000 + int(span_id, 16)),
            "endTimeUnixNano": str(1_700_000_001_000_000_000),
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()]}
    if parent:
        span["parentSpanId"] = parent
    return {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]}, {"name": "x"}, span


def test_spans_written_to_their_session_after_being_held_are_not_ignored_after_kill_9(tmp_path):
    """A held span written once its trace is named is not taken from pending.jsonl again at the restart:
    neither held again nor counted ignored, though the file is not compacted before the kill."""
    chat = _genai_span("00000000000000c2", "00000000000000c1", "chat m", "chat", **{"gen_ai.request.model": "m"})
    root = _genai_span("00000000000000c1", None, "invoke_agent a", "invoke_agent",
                       **{"gen_ai.conversation.id": "f2", "gen_ai.agent.name": "a"})
    central = tmp_path / "central"
    collector = Collector(central, "--hold-seconds", "3", "--json-log", "--log-every", "3600").start()
    try:
        assert _post(collector, _json_body([chat]), "application/json")[0] == 200
        assert _pending_spans(central) == 1  # held: no session named yet
        assert _post(collector, _json_body([root]), "application/json")[0] == 200
        journal = read_journal(central / "sessions" / "f2" / "spans.jsonl")
        assert {line["end"] for line in journal if "end" in line} == {"00000000000000c1", "00000000000000c2"}
        collector.proc.send_signal(signal.SIGKILL)
        collector.proc.wait(30)
        time.sleep(1)  # not --hold-seconds: within it the chat span would be held again
        collector.start()
        time.sleep(3.5)  # past --hold-seconds: held again, it would now be dropped and counted ignored
        assert _post(collector, _json_body([]), "application/json")[0] == 200  # a batch: expiry is looked at
        assert collector.stop() == 0
    finally:
        if collector.proc.poll() is None:
            collector.proc.kill()
    minutes = [json.loads(line) for line in collector.lines if '"spans_per_s"' in line]
    assert minutes and sum(m["ignored"] for m in minutes) == 0 and minutes[-1]["held"] == 0, collector.lines
    assert _pending_spans(central) == 0
