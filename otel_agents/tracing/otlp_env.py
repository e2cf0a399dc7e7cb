"""The OTLP exporter variables every sender reads, checked: protocol, endpoint and compression."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlparse

PROTOCOLS = ("grpc", "http/protobuf")
COMPRESSIONS = ("gzip", "deflate", "none")  # the HTTP exporter takes all three; the gRPC one, see grpc_compression


class ConfigError(ValueError):
    """Bad tracing configuration (reported as a usage error)."""


def check_compression(signal: str = "TRACES") -> None:
    """OTEL_EXPORTER_OTLP_{signal}_COMPRESSION, else the general one: the exporters would send uncompressed silently."""
    for name in (f"OTEL_EXPORTER_OTLP_{signal}_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"):
        value = os.environ.get(name)
        if value is None or not value.strip():
            continue
        if value.strip().lower() not in COMPRESSIONS:
            raise ConfigError(f"unsupported {name} {value!r} (use gzip, deflate or none)")
        return


def grpc_compression(signal: str = "TRACES") -> Any:
    """The compression variable as grpc.Compression (None: unset), given to the gRPC exporter: read by
    itself, it takes only gzip, and raised (a traceback) for deflate and none, which check_compression passes."""
    import grpc

    check_compression(signal)
    for name in (f"OTEL_EXPORTER_OTLP_{signal}_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"):
        value = (os.environ.get(name) or "").strip().lower()
        if value:
            return {"gzip": grpc.Compression.Gzip, "deflate": grpc.Compression.Deflate,
                    "none": grpc.Compression.NoCompression}[value]
    return None


def otlp_protocol(signal: str = "TRACES") -> str:
    """The signal's protocol variable (TRACES or METRICS), else the general one; http/protobuf by default."""
    name = f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL"
    value = os.environ.get(name)
    if not value:
        name, value = "OTEL_EXPORTER_OTLP_PROTOCOL", os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    protocol = (value or "http/protobuf").strip().lower()
    if protocol not in PROTOCOLS:
        raise ConfigError(f"unsupported {name} {value!r} (use grpc or http/protobuf)")
    return protocol


def endpoint_variable(signal: str) -> str | None:
    """The variable an exporter of ``signal`` (TRACES, METRICS) takes its endpoint from, if either is set."""
    for name in (f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        if os.environ.get(name):
            return name
    return None


def check_endpoint(endpoint: str, protocol: str, variable: str | None = None) -> None:
    """Catch a malformed endpoint at start-up rather than as an export failure; ``variable`` names where it
    was read, so the message points at what to fix."""
    try:
        # urlparse itself raises ValueError on an unbalanced IPv6 bracket ("http://[::1").
        parsed = urlparse(endpoint if "://" in endpoint else f"//{endpoint}")
        # gRPC takes host:port without a scheme; a bare word ("notaurl") is no address for either.
        scheme_ok = parsed.scheme in {"http", "https"} or (protocol == "grpc" and parsed.scheme == ""
                                                            and parsed.port is not None)
        port_ok = parsed.port is None or parsed.port > 0
        host_ok = bool(parsed.hostname)
    except ValueError:
        scheme_ok = port_ok = host_ok = False
    if not (scheme_ok and host_ok and port_ok):
        hint = "http://host:4317" if protocol == "grpc" else "http://host:4318"
        from otel_agents.tracing.redaction import redact_secrets

        origin = f" in {variable}" if variable else ""
        raise ConfigError(f"invalid OTLP endpoint {redact_secrets(endpoint)!r}{origin} for {protocol} "
                          f"(expected e.g. {hint})")
