"""Every OTLP endpoint the deploy files and docs tell users to use agrees with the protocol they set."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

REPO = Path(__file__).resolve().parent.parent
# The files a user copies settings from; CHANGELOG.md is history, not instructions.
SOURCES = sorted(
    [REPO / "README.md", REPO / "docker-compose.yml", *(REPO / "docs").glob("*.md"), *(REPO / "collector").iterdir()]
)
SOURCES = [p for p in SOURCES if p.is_file() and p.suffix in {".md", ".yml", ".yaml", ".Dockerfile"}]

ENDPOINT = re.compile(r"(?:OTEL_EXPORTER_OTLP_(?:TRACES_|METRICS_)?ENDPOINT=|--endpoint[ =])[\"']?(https?://[^\s`\"']+)")
PROTOCOL = re.compile(r"OTEL_EXPORTER_OTLP_(?:TRACES_|METRICS_)?PROTOCOL=[\"']?([\w/]+)")
SETTING = re.compile(r"OTEL_EXPORTER_OTLP_\w+=|--endpoint[ =]")
GRPC_PORT, HTTP_PORT = 4317, 4318


def endpoint_problems(text: str, name: str) -> list[str]:
    """Endpoints on port 4317 without grpc, or on 4318 with grpc, in `text`.

    The protocol an endpoint goes with is the one set in the same run of
    consecutive lines that set OTEL_EXPORTER_OTLP_* (or pass --endpoint): a
    blank line or an "or, for gRPC:" line starts another setting.
    """
    problems: list[str] = []
    lines = text.splitlines()
    runs: list[list[tuple[int, str]]] = []
    previous = -2
    for number, line in enumerate(lines, 1):
        if not SETTING.search(line):
            continue
        if number == previous + 1:
            runs[-1].append((number, line))
        else:
            runs.append([(number, line)])
        previous = number
    for run in runs:
        protocols = {m.group(1) for _, line in run for m in PROTOCOL.finditer(line)}
        grpc = "grpc" in protocols
        for number, line in run:
            for match in ENDPOINT.finditer(line):
                port = urlsplit(match.group(1)).port
                if port == GRPC_PORT and not grpc:
                    problems.append(f"{name}:{number}: {match.group(1)} is the gRPC port, but no OTEL_EXPORTER_OTLP_PROTOCOL=grpc goes with it")
                if port == HTTP_PORT and grpc:
                    problems.append(f"{name}:{number}: {match.group(1)} is the HTTP port, but the protocol set with it is grpc")
    return problems


def test_sources_are_found():
    names = {p.relative_to(REPO).as_posix() for p in SOURCES}
    assert {"README.md", "docker-compose.yml", "collector/README.md", "docs/jaeger.md"} <= names


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_endpoint_users_are_told_to_use_matches_its_protocol(path):
    assert endpoint_problems(path.read_text(encoding="utf-8"), path.relative_to(REPO).as_posix()) == []


@pytest.mark.parametrize(
    "text, expected",
    [
        ("export OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4317  # here", 1),
        ("#   export OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4317", 1),
        ("export OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4317\nexport OTEL_EXPORTER_OTLP_PROTOCOL=grpc", 0),
        ("OTEL_EXPORTER_OTLP_PROTOCOL=grpc OTEL_EXPORTER_OTLP_ENDPOINT=http://h:4317 otel-agents run hi", 0),
        ("export OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318\nexport OTEL_EXPORTER_OTLP_PROTOCOL=grpc", 1),
        # a protocol set in another snippet does not carry over
        ("export OTEL_EXPORTER_OTLP_PROTOCOL=grpc\n\nexport OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4317", 1),
        ("otel-agents export ID --endpoint http://host:4317", 1),
        ("`OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318`", 0),
    ],
)
def test_endpoint_problems_catches_a_mismatch(text, expected):
    assert len(endpoint_problems(text, "x")) == expected
