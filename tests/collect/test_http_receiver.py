"""The HTTP receiver over loopback: a body over the cap, as sent or decompressed, is 413 with a google.rpc.Status."""

from __future__ import annotations

import gzip
import http.client
import json
import zlib

from google.rpc.status_pb2 import Status

from otel_agents.collect.otlp_request import MAX_REQUEST_BYTES
from support.collector import Collector


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
