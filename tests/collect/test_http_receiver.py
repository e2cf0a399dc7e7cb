"""The HTTP receiver over loopback: a body over the cap, as sent or decompressed, is 413 with a google.rpc.Status."""

from __future__ import annotations

import gzip
import http.client
import json
import zlib

from google.rpc.status_pb2 import Status

from otel_agents.collect.otlp_request import MAX_REQUEST_BYTES
from support.collector import Collector, assert_same_session, run_session, session_id_in


def _post(port: int, body, headers: dict[str, str]):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("POST", "/v1/traces", body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _bomb(size: int) -> bytes:
    """gzip of ``size`` zero bytes, made a MiB at a time (a few KiB per 16 MiB)."""
    squeeze = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1 << 20)
    parts = [squeeze.compress(zeros) for _ in range(size >> 20)]
    return b"".join(parts) + squeeze.flush()


def _streamed(body: bytes):
    """Chunked transfer (no Content-Length), so the receiver learns the size only by reading."""
    for start in range(0, len(body), 1 << 20):
        yield body[start:start + (1 << 20)]


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def test_bodies_over_the_cap_sent_or_decompressed_are_413_and_the_receiver_stays_small(tmp_path):
    big_json = b'{"resourceSpans": [], "pad": "' + b"x" * MAX_REQUEST_BYTES + b'"}'
    with Collector(tmp_path / "central", "--json-log", "--log-every", "3600") as collector:
        port = collector.http_port
        before = _rss_kib(collector.proc.pid)
        bomb = _bomb(256 << 20)
        assert len(bomb) < 2 << 20
        cases = [
            (bomb, {"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"}, "decompressed"),
            (big_json, {"Content-Type": "application/json"}, ""),
            (_streamed(big_json), {"Content-Type": "application/json"}, ""),  # chunked: no Content-Length
        ]
        for body, headers, how in cases:
            status, answer = _post(port, body, headers)
            assert status == 413, (status, answer[:200])
            if "json" in headers["Content-Type"]:
                message = json.loads(answer)["message"]
            else:
                message = Status.FromString(answer).message
            assert message == f"the request body is over 16 MiB {how}".strip()
        assert _rss_kib(collector.proc.pid) - before < 100 << 10  # the 256 MiB never held at once
        # Under the cap, gzip or not, is read as before.
        empty = b'{"resourceSpans": []}'
        assert _post(port, gzip.compress(empty) + gzip.compress(b""),
                     {"Content-Type": "application/json", "Content-Encoding": "gzip"})[0] == 200
        assert _post(port, gzip.compress(empty)[:-4],
                     {"Content-Type": "application/json", "Content-Encoding": "gzip"})[0] == 400
        assert collector.stop() == 0
    minutes = [json.loads(line) for line in collector.lines if '"spans_per_s"' in line]
    assert sum(m["rejected"] for m in minutes) == 4


def _deflate_bomb(size: int, wbits: int = zlib.MAX_WBITS) -> bytes:
    """deflate (zlib format, or raw with negative ``wbits``) of ``size`` zero bytes, a MiB at a time."""
    squeeze = zlib.compressobj(1, zlib.DEFLATED, wbits)
    zeros = bytes(1 << 20)
    return b"".join(squeeze.compress(zeros) for _ in range(size >> 20)) + squeeze.flush()


def test_deflate_is_read_as_gzip_is_a_bomb_413_and_a_cut_body_400(tmp_path):
    empty = b'{"resourceSpans": []}'
    deflate = {"Content-Type": "application/json", "Content-Encoding": "deflate"}
    with Collector(tmp_path / "central") as collector:
        port = collector.http_port
        assert _post(port, zlib.compress(empty), deflate)[0] == 200  # zlib, as the OTLP exporter sends
        raw = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        assert _post(port, raw.compress(empty) + raw.flush(), deflate)[0] == 200  # raw deflate, no header
        assert _post(port, zlib.compress(empty)[:-4], deflate)[0] == 400
        assert _post(port, zlib.compress(empty) + b"junk", deflate)[0] == 400
        for bomb in (_deflate_bomb(64 << 20), _deflate_bomb(64 << 20, -zlib.MAX_WBITS)):
            status, answer = _post(port, bomb, {**deflate, "Content-Type": "application/x-protobuf"})
            assert status == 413, (status, answer[:200])
            assert Status.FromString(answer).message == "the request body is over 16 MiB decompressed"
        status, answer = _post(port, zlib.compress(empty), {**deflate, "Content-Encoding": "br"})
        assert status == 400
        assert json.loads(answer)["message"] == (
            "unsupported Content-Encoding 'br': send gzip, deflate or an uncompressed body")


def test_a_run_exporting_with_deflate_compression_is_collected_whole(tmp_path):
    """The real OTLP/HTTP exporter with OTEL_EXPORTER_OTLP_COMPRESSION=deflate, as the sender accepts it."""
    local = tmp_path / "local"
    with Collector(tmp_path / "central") as collector:
        proc = run_session(local, collector.http_endpoint, "http/protobuf",
                           env={"OTEL_EXPORTER_OTLP_COMPRESSION": "deflate"})
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0 and "could not send spans" not in err, err
        assert collector.stop() == 0
    assert_same_session(local, tmp_path / "central", session_id_in(err))
