"""Opt-in GenAI content: off by default, the registry's JSON schemas when on, and nothing leaves with
OTEL_AGENTS_EXPORT_CONTENT=false.

The runs are real ``python -m otel_agents run`` processes of the offline demo, exporting to a real
OTLP receiver on loopback; the schemas are the registry's (tests/data/semconv_genai.json).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import jsonschema
import pytest
from hypothesis import given, settings, strategies as st

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.content_capture import (
    CAPTURE_ENV,
    CAPTURE_ENV_ALIAS,
    CaptureSettingError,
    capture_content,
    message_parts,
    output_messages,
    request_content,
    tool_definitions,
)
from support.otlp_receivers import HttpTraceReceiver

SNAPSHOT = json.loads((Path(__file__).resolve().parents[1] / "data" / "semconv_genai.json").read_text(encoding="utf-8"))
SCHEMAS = SNAPSHOT["message_schemas"]
PROMPT = "Create Jack and Jill for a cafe discussion"
CONTENT_KEYS = sc.GEN_AI_CONTENT_ATTRIBUTES


@functools.cache
def _validator(attribute: str):
    """One checked validator per schema: ``jsonschema.validate`` checks the schema again at every call."""
    schema = SCHEMAS[attribute]
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def validate(attribute: str, value: Any) -> None:
    _validator(attribute).validate(value)


# --- the switch ---


@pytest.mark.parametrize(("environ", "expected"), [
    ({}, False),
    ({CAPTURE_ENV: "true"}, True),
    ({CAPTURE_ENV: "SPAN_ONLY"}, True),
    ({CAPTURE_ENV: "span_and_event"}, True),
    ({CAPTURE_ENV: "EVENT_ONLY"}, False),  # we emit no GenAI log events: nothing on spans
    ({CAPTURE_ENV: "NO_CONTENT"}, False),
    ({CAPTURE_ENV: " "}, False),
    ({CAPTURE_ENV_ALIAS: "true"}, True),  # the project's old switch, an alias
    ({CAPTURE_ENV: "false", CAPTURE_ENV_ALIAS: "true"}, False),  # the standard variable wins
])
def test_the_switch_reads_the_standard_variable_and_the_alias(environ, expected):
    assert capture_content(environ) is expected


def test_a_value_that_is_neither_on_nor_off_is_refused_naming_the_variable():
    with pytest.raises(CaptureSettingError, match=f"{CAPTURE_ENV} must be true, false, SPAN_ONLY"):
        capture_content({CAPTURE_ENV: "maybe"})


def test_a_bad_value_is_a_one_line_usage_error_of_the_cli(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update({CAPTURE_ENV: "sometimes", "OTEL_AGENTS_HOME": str(tmp_path / "home")})
    done = subprocess.run([sys.executable, "-m", "otel_agents", "run", PROMPT], env=env, capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    # click's usage error: the usage lines, then the one line naming the variable and the value.
    (error,) = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert CAPTURE_ENV in error and "'sometimes'" in error
    assert not (tmp_path / "home").exists() or not list((tmp_path / "home").rglob("events.jsonl"))


# --- the shape, for any message litellm could send ---

_text = st.text(max_size=40)
_call = st.fixed_dictionaries({
    "id": st.text(min_size=1, max_size=8),
    "type": st.just("function"),
    "function": st.fixed_dictionaries({"name": st.text(min_size=1, max_size=8),
                                       "arguments": st.one_of(_text, st.just('{"a": 1}'), st.just(""))}),
})
# Drawn directly, not filtered out of _message: three in four of those are other roles, and
# hypothesis's health check then fails the reply test at random.
_reply = st.fixed_dictionaries({"role": st.just("assistant"), "content": st.one_of(st.none(), _text)},
                               optional={"tool_calls": st.lists(_call, max_size=3), "reasoning_content": _text})
_message = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["system", "user"]), "content": _text}),
    _reply,
    st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": st.text(min_size=1, max_size=8),
                           "name": st.text(max_size=8), "content": _text}),
    st.fixed_dictionaries({"role": st.just("user"), "content": st.lists(
        st.one_of(st.fixed_dictionaries({"type": st.just("text"), "text": _text}),
                  st.fixed_dictionaries({"type": st.just("image_url"), "image_url": st.fixed_dictionaries(
                      {"url": st.just("https://example.com/a.png")})})), max_size=3)}),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_message, max_size=8))
def test_any_context_becomes_valid_instructions_and_input_messages_in_order(messages):
    instructions, history = request_content(messages)
    validate(sc.GEN_AI_SYSTEM_INSTRUCTIONS, instructions)
    validate(sc.GEN_AI_INPUT_MESSAGES, history)
    lead = next((i for i, m in enumerate(messages) if m["role"] != "system"), len(messages))
    assert [m["role"] for m in history] == [m["role"] for m in messages[lead:]]
    assert [p["content"] for p in instructions] == [m["content"] for m in messages[:lead] if m["content"]]


@settings(max_examples=100, deadline=None)
@given(_reply)
def test_any_reply_becomes_a_valid_output_message_keeping_its_calls(message):
    out = output_messages(message)
    validate(sc.GEN_AI_OUTPUT_MESSAGES, out)
    calls = [p for p in out[0]["parts"] if p["type"] == "tool_call"]
    assert [c["id"] for c in calls] == [c["id"] for c in message.get("tool_calls", [])]


def test_tool_results_and_json_arguments_keep_their_structure():
    (result,) = message_parts({"role": "tool", "tool_call_id": "c1", "name": "t", "content": '{"ok": true}'})["parts"]
    assert result == {"type": "tool_call_response", "id": "c1", "response": {"ok": True}}
    (call,) = message_parts({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c2", "type": "function", "function": {"name": "f", "arguments": '{"x": [1]}'}}]})["parts"]
    assert call == {"type": "tool_call", "id": "c2", "name": "f", "arguments": {"x": [1]}}


def test_tool_definitions_name_the_tools_and_describe_them_only_when_capturing():
    tools = [{"type": "function", "function": {"name": "task", "description": "Start an agent.",
                                               "parameters": {"type": "object", "properties": {}}}}]
    assert tool_definitions(tools, full=False) == [{"type": "function", "name": "task"}]
    full = tool_definitions(tools, full=True)
    validate(sc.GEN_AI_TOOL_DEFINITIONS, full)
    assert full[0]["description"] == "Start an agent." and full[0]["parameters"]["type"] == "object"


# --- real runs of the demo ---


def _file_spans(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(span name, attributes) from an --otlp-file (OTLP/JSON lines)."""
    for line in path.read_text(encoding="utf-8").splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    attrs = {a["key"]: next(iter(a["value"].values()), None) for a in span.get("attributes", [])}
                    yield span["name"], attrs


def _utterances(home: Path) -> list[str]:
    """Every message text of the session (prompts, replies, tool results), from its events.jsonl."""
    (events,) = home.rglob("events.jsonl")
    texts = []
    for line in events.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("event_type") in (sc.EVENT_TRANSCRIPT_ENTRY, sc.EVENT_PIECE_OF_TEXT) and record.get("content"):
            texts.append(record["content"])
    return texts


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory):
    """Three demo runs at once: capture off, capture on, capture on with content export off."""
    tmp = tmp_path_factory.mktemp("capture")
    receivers = {tag: HttpTraceReceiver().start() for tag in ("off", "on", "on-no-export")}
    settings_by_tag = {"off": {}, "on": {CAPTURE_ENV: "SPAN_ONLY"},
                       "on-no-export": {CAPTURE_ENV: "true", "OTEL_AGENTS_EXPORT_CONTENT": "false"}}
    procs = {}
    try:
        for tag, extra in settings_by_tag.items():
            env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
            env.update(extra, OTEL_AGENTS_HOME=str(tmp / tag), OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
                       OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receivers[tag].traces_url)
            procs[tag] = subprocess.Popen(
                [sys.executable, "-m", "otel_agents", "run", "--otlp-file", str(tmp / f"{tag}.jsonl"), PROMPT],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp)
        runs = {}
        for tag, proc in procs.items():
            out, err = proc.communicate(timeout=180)
            assert proc.returncode == 0, err
            runs[tag] = {"file": tmp / f"{tag}.jsonl", "home": tmp / tag, "received": receivers[tag].spans(),
                         "wire": b"".join(r.SerializeToString() for r in receivers[tag].requests)}
        yield runs
    finally:
        for receiver in receivers.values():
            receiver.stop()


def test_off_by_default_no_content_attribute_on_any_span(demo_runs):
    run = demo_runs["off"]
    local = list(_file_spans(run["file"]))
    assert len(local) > 30 and len(run["received"]) == len(local)
    for name, attrs in local:
        assert not CONTENT_KEYS & set(attrs), name
    assert not any(CONTENT_KEYS & set(span.attributes) for span in run["received"])
    # The tools are still named, without their descriptions.
    definitions = [json.loads(a[sc.GEN_AI_TOOL_DEFINITIONS]) for _, a in local if sc.GEN_AI_TOOL_DEFINITIONS in a]
    assert definitions and all(set(d) == {"type", "name"} for ds in definitions for d in ds)


def test_on_every_message_validates_against_the_registry_schemas(demo_runs):
    local = list(_file_spans(demo_runs["on"]["file"]))
    seen: dict[str, int] = {}
    for name, attrs in local:
        for key in (sc.GEN_AI_INPUT_MESSAGES, sc.GEN_AI_OUTPUT_MESSAGES, sc.GEN_AI_SYSTEM_INSTRUCTIONS,
                    sc.GEN_AI_TOOL_DEFINITIONS):
            if key in attrs:
                validate(key, json.loads(attrs[key]))
                seen[key] = seen.get(key, 0) + 1
        for key in (sc.GEN_AI_TOOL_CALL_ARGUMENTS, sc.GEN_AI_TOOL_CALL_RESULT):
            if key in attrs:
                json.loads(attrs[key])
                seen[key] = seen.get(key, 0) + 1
    chats = [a for name, a in local if name.startswith("chat ")]
    successful = [a for a in chats if sc.RESPONSE_MESSAGE_ID in a]
    assert seen[sc.GEN_AI_INPUT_MESSAGES] == seen[sc.GEN_AI_SYSTEM_INSTRUCTIONS] == len(chats)
    assert seen[sc.GEN_AI_OUTPUT_MESSAGES] == len(successful) < len(chats)  # the scripted 429 has no reply
    assert seen[sc.GEN_AI_TOOL_CALL_ARGUMENTS] > seen[sc.GEN_AI_TOOL_CALL_RESULT] > 0  # the denied call has no result
    # What a backend shows is what the model was sent: the prompt is the root's first input message.
    first = json.loads(chats[0][sc.GEN_AI_INPUT_MESSAGES])
    assert first[0] == {"role": "user", "parts": [{"type": "text", "content": PROMPT}]}
    # The network copy carries the same content.
    received = [s for s in demo_runs["on"]["received"] if sc.GEN_AI_INPUT_MESSAGES in s.attributes]
    assert len(received) == len(chats)


def test_with_content_export_off_no_utterance_reaches_the_receiver(demo_runs):
    run = demo_runs["on-no-export"]
    utterances = [t for t in _utterances(run["home"]) if len(t) >= 8]
    assert PROMPT in utterances and len(utterances) > 10
    assert len(run["received"]) > 30
    leaked = [t for t in utterances if t.encode("utf-8") in run["wire"]]
    assert leaked == []
    assert not any(CONTENT_KEYS & set(span.attributes) for span in run["received"])
    # The local artifacts keep everything (docs/spans.md): content stays on the machine.
    local = list(_file_spans(run["file"]))
    assert any(sc.GEN_AI_INPUT_MESSAGES in attrs for _, attrs in local)
