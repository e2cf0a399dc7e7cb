"""Resume of an imported trace (issue 4 §3, §6).

A session exported as OTLP/JSON (``--otlp-file``) or as Jaeger JSON, imported into an
empty home and resumed there, must give the same events, transcripts and ledger records
as running every prompt in one process.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from otel_agents.tracing.otlp_decode import decode_otlp_json
from test_resume_cli import events, invoke, ledger, session_id_of, transcripts

PROMPTS = ["Create Jack and Jill for a cafe discussion", "What did Jill say?"]


def _jaeger_value(key: str, value) -> dict:
    if isinstance(value, bool):
        return {"key": key, "type": "bool", "value": value}
    if isinstance(value, int):
        return {"key": key, "type": "int64", "value": value}
    if isinstance(value, float):
        return {"key": key, "type": "float64", "value": value}
    if isinstance(value, (list, tuple)):  # Jaeger has no arrays: it stores them as JSON text
        return {"key": key, "type": "string", "value": json.dumps(list(value))}
    return {"key": key, "type": "string", "value": str(value)}


def otlp_to_jaeger(otlp_file: Path) -> dict:
    """What Jaeger's query API returns for these spans (``{"data": [trace, ...]}``)."""
    spans = [s for line in otlp_file.read_bytes().splitlines() for s in decode_otlp_json(orjson.loads(line), "x")]
    traces: dict[str, list] = {}
    for span in spans:
        references = [{"refType": "CHILD_OF", "traceID": span.trace_id, "spanID": span.parent_span_id}] if span.parent_span_id else []
        references += [{"refType": "FOLLOWS_FROM", "traceID": l.trace_id, "spanID": l.span_id} for l in span.links]
        tags = [_jaeger_value(k, v) for k, v in span.attributes.items()]
        tags.append({"key": "span.kind", "type": "string", "value": span.kind.lower()})
        if span.status != "UNSET":
            tags.append({"key": "otel.status_code", "type": "string", "value": span.status})
        if span.status_message:
            tags.append({"key": "otel.status_description", "type": "string", "value": span.status_message})
        logs = [
            {"timestamp": e.time_ns // 1000,
             "fields": [{"key": "event", "type": "string", "value": e.name}] + [_jaeger_value(k, v) for k, v in e.attributes.items()]}
            for e in span.events
        ]
        traces.setdefault(span.trace_id, []).append({
            "traceID": span.trace_id, "spanID": span.span_id, "operationName": span.name, "references": references,
            "startTime": span.start_ns // 1000, "duration": ((span.end_ns or span.start_ns) - span.start_ns) // 1000,
            "tags": tags, "logs": logs, "processID": "p1",
        })
    resource = spans[0].resource
    process = {"serviceName": resource.get("service.name", "otel-agents"),
               "tags": [_jaeger_value(k, v) for k, v in resource.items() if k != "service.name"]}
    return {"data": [{"traceID": t, "spans": s, "processes": {"p1": process}} for t, s in traces.items()]}


@pytest.mark.parametrize("form", ["otlp", "jaeger"])
def test_resuming_an_imported_session_equals_one_process(home, tmp_path, monkeypatch, form):
    whole = session_id_of(invoke(["run", *PROMPTS]))

    exported = tmp_path / "spans.jsonl"
    first = invoke(["run", "--otlp-file", str(exported), PROMPTS[0]])
    assert first.exit_code == 0, first.stderr
    sid = session_id_of(first)
    if form == "jaeger":
        jaeger = tmp_path / "trace.json"
        jaeger.write_text(json.dumps(otlp_to_jaeger(exported)))
        exported = jaeger

    other_home = tmp_path / "other-home"
    monkeypatch.setenv("OTEL_AGENTS_HOME", str(other_home))
    imported = invoke(["import", str(exported)])
    assert imported.exit_code == 0, imported.stderr
    first_run = events(other_home, sid)
    assert len(first_run) > 30 and first_run == events(home, sid)  # the import holds the whole first run
    assert len(ledger(other_home, sid)) == len(ledger(home, sid)) > 10
    resumed = invoke(["resume", sid, PROMPTS[1]])
    assert resumed.exit_code == 0, resumed.stderr
    assert resumed.stdout.strip() == "I have nothing further to add."

    assert events(other_home, sid) == events(home, whole)
    assert transcripts(other_home, sid) == transcripts(home, whole)
    assert ledger(other_home, sid) == ledger(home, whole)
    assert invoke(["sessions", "verify", sid]).exit_code == 0
