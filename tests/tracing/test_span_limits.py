"""The standard OTEL_*_LIMIT variables: read with spec semantics, applied to what is sent, never to the session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.span_limits import LimitError, export_limits_from_env
from support.otlp_receivers import HttpTraceReceiver


def test_the_specific_variable_wins_and_the_general_one_covers_the_rest():
    assert export_limits_from_env({}) == {}
    assert export_limits_from_env({"OTEL_ATTRIBUTE_COUNT_LIMIT": "5", "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT": "2",
                                   "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "40",
                                   "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "30"}) == {
        "max_attributes": 5, "max_event_attributes": 2, "max_link_attributes": 5,
        "span_value_length": 30, "value_length": 40,
    }
    assert export_limits_from_env({"OTEL_SPAN_EVENT_COUNT_LIMIT": " 0 ", "OTEL_SPAN_LINK_COUNT_LIMIT": "unset",
                                   "OTEL_LINK_ATTRIBUTE_COUNT_LIMIT": ""}) == {"max_events": 0}


@pytest.mark.parametrize("value", ["abc", "-1", "1.5"])
def test_a_bad_value_names_its_variable(value):
    with pytest.raises(LimitError, match=f"OTEL_SPAN_LINK_COUNT_LIMIT must be a whole number of at least 0, not '{value}'"):
        export_limits_from_env({"OTEL_SPAN_LINK_COUNT_LIMIT": value})


def _run(tmp_path: Path, **variables: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_AGENTS_HOME=str(tmp_path / "home"), HOME=str(tmp_path), **variables)
    return subprocess.run([sys.executable, "-m", "otel_agents", "run", "hi"], env=env, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)


@pytest.mark.parametrize("variable", ["OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT",
                                      "OTEL_SPAN_LINK_COUNT_LIMIT"])
def test_a_bad_value_is_a_usage_error_in_one_line(tmp_path, variable):
    # OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT is read by the SDK at import, the link count by its provider: tracebacks both.
    result = _run(tmp_path, **{variable: "abc"})
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert errors == [f"Error: {variable} must be a whole number of at least 0, not 'abc'"]  # as every OTEL_* value's
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "home" / "sessions").exists() or not any((tmp_path / "home" / "sessions").iterdir())


def _sent_and_saved(tmp_path: Path, **variables: str):
    tmp_path.mkdir(exist_ok=True)
    with HttpTraceReceiver() as receiver:
        result = _run(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint, **variables)
        assert result.returncode == 0, result.stderr
        requests = receiver.requests
    sent = [span for request in requests for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]
    (spans_file,) = (tmp_path / "home" / "sessions").glob("*/spans.jsonl")
    return sent, spans_file.read_text()


def _strings(attributes) -> list[str]:
    out = []
    for attribute in attributes:
        value = attribute.value
        if value.HasField("string_value"):
            out.append(value.string_value)
        elif value.HasField("array_value"):
            out += [v.string_value for v in value.array_value.values if v.HasField("string_value")]
    return out


def test_a_real_receiver_gets_the_limits_and_the_session_keeps_everything(tmp_path):
    whole, saved_whole = _sent_and_saved(tmp_path / "whole")  # as long a name as "limit": the cwd is recorded
    assert max(len(s) for span in whole for s in _strings(span.attributes)) > 100  # what the limits must cut
    assert max(len(span.attributes) for span in whole) > 3 and max(len(span.events) for span in whole) > 1

    sent, saved = _sent_and_saved(tmp_path / "limit", OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT="10",
                                  OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT="3", OTEL_SPAN_EVENT_COUNT_LIMIT="1")
    assert len(sent) == len(whole)
    placing = {sc.SESSION_ID, sc.GEN_AI_CONVERSATION_ID}  # never cut: a receiver places the span by them
    for span in sent:
        assert len(span.attributes) <= 3 and len(span.events) <= 1
        assert all(len(s) <= 10 for s in _strings([a for a in span.attributes if a.key not in placing]))
        assert all(len(a.value.string_value) > 10 for a in span.attributes if a.key in placing)
        assert all(len(s) <= 10 for event in span.events for s in _strings(event.attributes))
    assert sum(span.dropped_attributes_count for span in sent) > 0
    assert sum(span.dropped_events_count for span in sent) > 0
    # Values cut by a limit are counted on their span, so collect knows the session it builds holds cut values.
    marks = [a.value.int_value for span in sent for a in span.attributes if a.key == sc.EXPORT_TRUNCATED]
    assert marks and all(mark > 0 for mark in marks)
    # The session's own journal is as whole as without limits: every line the same shape, long texts whole.
    assert sorted(map(_shape, saved.splitlines())) == sorted(map(_shape, saved_whole.splitlines()))
    assert sc.EXPORT_TRUNCATED not in saved


def _shape(line: str) -> str:
    """A journal line less its ids and times: the size of each map and list, and the long texts' lengths."""
    def walk(value):
        if isinstance(value, dict):
            return [len(value), sorted((k, walk(v)) for k, v in value.items() if walk(v) is not None)]
        if isinstance(value, list):
            return [len(value), [walk(v) for v in value]]
        return len(value) if isinstance(value, str) and len(value) > 40 else None

    return json.dumps(walk(json.loads(line)))

def test_the_span_specific_length_wins_for_span_attributes(tmp_path):
    sent, _ = _sent_and_saved(tmp_path, OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT="10",
                              OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT="50")
    span_strings = [s for span in sent for s in _strings(span.attributes)]
    assert max(map(len, span_strings)) == 50
    assert max(len(s) for span in sent for event in span.events for s in _strings(event.attributes)) == 10
