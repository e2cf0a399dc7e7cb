"""The GenAI semantic conventions this project claims, checked on every span it emits,
and docs/spans.md checked against what is really emitted.

The sessions are real (tracing_scenarios.run_every_scenario): the demo, the
failure paths and an OpenAI-compatible HTTP model. The GenAI attribute registry
is the one shipped in the ``opentelemetry-semantic-conventions`` package.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes
from opentelemetry.trace import SpanKind

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import RECORD_FIELDS

from tracing_scenarios import SPAN_PATTERNS, event_rows, run_every_scenario, set_at, span_pattern, span_rows, type_name

DOCS = Path(__file__).resolve().parents[2] / "docs" / "spans.md"

# Emitted gen_ai.* names that the registry does not define (documented in docs/spans.md).
# When semconv.py moves to the registry's names, drop them from here.
KNOWN_DEVIATIONS = {
    "gen_ai.usage.cache_write.input_tokens": "registry name: gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.usage.cost": "project extension, no registry attribute",
}
# Registry value types (model/gen-ai/registry.yaml) of the gen_ai.* and general attributes emitted.
REGISTRY_TYPES = {
    "gen_ai.operation.name": "string",
    "gen_ai.provider.name": "string",
    "gen_ai.request.model": "string",
    "gen_ai.response.model": "string",
    "gen_ai.response.id": "string",
    "gen_ai.response.finish_reasons": "string[]",
    "gen_ai.usage.input_tokens": "int",
    "gen_ai.usage.output_tokens": "int",
    "gen_ai.usage.cache_read.input_tokens": "int",
    "gen_ai.usage.cache_creation.input_tokens": "int",
    "gen_ai.usage.reasoning.output_tokens": "int",
    "gen_ai.conversation.id": "string",
    "gen_ai.agent.id": "string",
    "gen_ai.agent.name": "string",
    "gen_ai.tool.name": "string",
    "gen_ai.tool.call.id": "string",
    "gen_ai.tool.type": "string",
    "gen_ai.input.messages": "string",  # "any", recorded as JSON text on spans
    "gen_ai.request.temperature": "double",
    "gen_ai.request.max_tokens": "int",
    "gen_ai.request.top_p": "double",
    "gen_ai.request.stop_sequences": "string[]",
    "gen_ai.request.seed": "int",
    "gen_ai.request.stream": "boolean",
    "gen_ai.response.time_to_first_chunk": "double",
    "error.type": "string",
    "server.address": "string",
    "server.port": "int",
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return run_every_scenario(tmp_path_factory.mktemp("semconv"))


@pytest.fixture(scope="module")
def spans(runs):
    return [(run, span) for run in runs for span in run.spans]


def registry() -> dict[str, str]:
    """gen_ai.* name -> its deprecation note ('' when current), from the package source."""
    tree = ast.parse(Path(gen_ai_attributes.__file__).read_text(encoding="utf-8"))
    names: dict[str, str] = {}
    body = tree.body
    for node, following in zip(body, body[1:] + [None]):
        if isinstance(node, ast.AnnAssign) and isinstance(getattr(node, "value", None), ast.Constant):
            name = node.value.value
            doc = following.value.value if isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant) else ""
            deprecated = "Replaced by" in doc or "Removed" in doc
            names[name] = doc.strip() if deprecated else ""
    return names


def all_attribute_keys(spans) -> set[str]:
    keys = set()
    for _, span in spans:
        keys |= set(span.attributes)
        for event in span.events:
            keys |= set(event.attributes)
    return keys


def test_the_scenarios_reach_every_span_kind_and_the_failure_paths(runs, spans):
    names = {span_pattern(span.name) for _, span in spans}
    assert names == set(SPAN_PATTERNS.values())
    statuses = {span.attributes.get(sc.TOOL_STATUS) for _, span in spans}
    assert {"ok", "failed", "denied"} <= statuses
    assert any(run.error is not None for run in runs)
    assert any(span.attributes.get(sc.SERVER_PORT) for _, span in spans)


def test_span_names_are_operation_and_subject(spans):
    subjects = {
        sc.OP_CHAT: sc.GEN_AI_REQUEST_MODEL,
        sc.OP_INVOKE_AGENT: sc.GEN_AI_AGENT_NAME,
        sc.OP_CREATE_AGENT: sc.GEN_AI_AGENT_NAME,
        sc.OP_EXECUTE_TOOL: sc.GEN_AI_TOOL_NAME,
    }
    for _, span in spans:
        operation = span.attributes.get(sc.GEN_AI_OPERATION_NAME)
        if operation is None:  # the project's own spans: a turn, an outside event
            assert span.name == sc.OP_TURN or span.name == f"{sc.OP_EXTERNAL_INPUT} {span.attributes[sc.GEN_AI_AGENT_NAME]}"
            continue
        assert span.name == f"{operation} {span.attributes[subjects[operation]]}"


def test_span_kinds(spans):
    for _, span in spans:
        expected = SpanKind.CLIENT if span.name.startswith("chat ") else SpanKind.INTERNAL
        assert span.kind is expected, span.name


def test_required_attributes_are_there_when_the_span_starts(spans):
    required = {
        sc.OP_CHAT: (sc.GEN_AI_OPERATION_NAME, sc.GEN_AI_PROVIDER_NAME, sc.GEN_AI_REQUEST_MODEL),
        sc.OP_EXECUTE_TOOL: (sc.GEN_AI_OPERATION_NAME, sc.GEN_AI_TOOL_NAME),
        sc.OP_INVOKE_AGENT: (sc.GEN_AI_OPERATION_NAME, sc.GEN_AI_AGENT_NAME),
        sc.OP_CREATE_AGENT: (sc.GEN_AI_OPERATION_NAME, sc.GEN_AI_AGENT_NAME),
    }
    checked = 0
    for run, span in spans:
        at_start = run.at_start[span.context.span_id]
        for key in required.get(span.name.split(" ", 1)[0], ()):
            assert key in at_start, (span.name, key, sorted(at_start))
            assert at_start[key] == span.attributes[key]
            checked += 1
        if span.name.startswith("chat "):
            assert at_start[sc.GEN_AI_OPERATION_NAME] == sc.OP_CHAT
    assert checked > 100


def test_provider_names_use_the_registry_values_for_known_providers(spans):
    well_known = {member.value for member in gen_ai_attributes.GenAiProviderNameValues}
    providers = {span.attributes[sc.GEN_AI_PROVIDER_NAME] for _, span in spans if span.name.startswith("chat ")}
    assert "openai" in providers and "openai" in well_known  # the HTTP model
    assert providers - well_known == {"scripted"}  # the offline model is this project's own


def test_value_types_match_the_registry(spans):
    checked = set()
    for _, span in spans:
        for key, value in span.attributes.items():
            if key in REGISTRY_TYPES:
                assert type_name(value) == REGISTRY_TYPES[key], (span.name, key, value)
                checked.add(key)
    assert len(checked) >= 15


def test_no_deprecated_or_unknown_gen_ai_names(spans):
    keys = all_attribute_keys(spans)
    assert not keys & sc.DEPRECATED_ATTRIBUTES
    names = registry()
    assert {"gen_ai.system", "gen_ai.usage.prompt_tokens", "gen_ai.usage.completion_tokens"} <= {
        n for n, note in names.items() if note
    }  # the package still marks them deprecated: the check below is meaningful
    gen_ai = {k for k in keys if k.startswith("gen_ai.")}
    deprecated = {k: names[k] for k in gen_ai if names.get(k)}
    assert deprecated == {}
    unknown = gen_ai - set(names)
    assert unknown <= set(KNOWN_DEVIATIONS), sorted(unknown - set(KNOWN_DEVIATIONS))


# --- docs/spans.md ---


def parse_docs(text: str):
    """Rows of the span and event tables: {(where, key): (type, set_at)}."""
    span_table: dict[tuple[str, str], tuple[str, str]] = {}
    event_table: dict[tuple[str, str], str] = {}
    section = where = None
    for line in text.splitlines():
        if line.startswith("## "):
            section, where = line[3:].strip(), None
        elif line.startswith("### "):
            match = re.match(r"### `([^`]+)`", line)
            where = match.group(1) if match else None
        elif line.startswith("| `") and where:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            key = cells[0].strip("`")
            if section == "Spans":
                span_table[(where, key)] = (cells[1], cells[2])
            elif section == "Span events":
                event_table[(where, key)] = cells[1]
    reserved_section = text.split("## Reserved names", 1)[1] if "## Reserved names" in text else ""
    reserved = set(re.findall(r"^- `([^`]+)`", reserved_section, re.M))
    return span_table, event_table, reserved


def _one(types: set[str], where) -> str:
    assert len(types) == 1, f"{where} is emitted with several types: {sorted(types)}"
    return next(iter(types))


def test_docs_list_exactly_the_span_attributes_emitted(runs):
    documented, _, _ = parse_docs(DOCS.read_text(encoding="utf-8"))
    when = set_at(runs)
    emitted = {row: (_one(types, row), when[row]) for row, types in span_rows(runs).items()}
    missing = sorted(set(emitted) - set(documented))
    stale = sorted(set(documented) - set(emitted))
    assert not missing, f"emitted but not in docs/spans.md: {missing}"
    assert not stale, f"in docs/spans.md but not emitted: {stale}"
    wrong = {row: (documented[row], emitted[row]) for row in emitted if documented[row] != emitted[row]}
    assert not wrong, f"(type, set) differ, documented vs emitted: {wrong}"


def test_docs_list_exactly_the_span_event_attributes_emitted(runs):
    _, documented, _ = parse_docs(DOCS.read_text(encoding="utf-8"))
    emitted = {row: _one(types, row) for row, types in event_rows(runs).items()}
    # Record fields no scenario can produce (thinking_blocks needs a provider that
    # returns them) are still part of the seed-001 contract and documented.
    for event_type, fields in RECORD_FIELDS.items():
        for name in ("message_id", *fields):
            emitted.setdefault((sc.record_event_name(event_type), sc.EVENT_FIELD_PREFIX + name), "string")
    assert documented == emitted, {
        "missing": sorted(set(emitted) - set(documented)),
        "stale": sorted(set(documented) - set(emitted)),
        "type": {r: (documented[r], emitted[r]) for r in set(documented) & set(emitted) if documented[r] != emitted[r]},
    }


def semconv_attribute_keys() -> set[str]:
    keys = {
        value
        for name, value in vars(sc).items()
        if name.isupper() and isinstance(value, str) and "." in value and not name.startswith(("OP_", "EVENT_"))
    }
    keys |= {sc.total_attr(scope, key) for scope in ("self", "inclusive") for key in sc.TOTAL_KEYS}
    return keys


def test_every_semconv_name_is_documented_and_the_reserved_list_is_exact(runs):
    spans_doc, events_doc, reserved = parse_docs(DOCS.read_text(encoding="utf-8"))
    documented_keys = {key for _, key in spans_doc} | {key for _, key in events_doc}
    constants = semconv_attribute_keys()
    assert constants - documented_keys - reserved == set()
    emitted = {key for _, key in span_rows(runs)} | {key for _, key in event_rows(runs)}
    assert reserved == constants - emitted
    event_names = {value for name, value in vars(sc).items() if name.startswith("EVENT_") and name != "EVENT_FIELD_PREFIX"}
    # Record types travel as span events in our namespace (otel_agents.transcript_entry).
    event_names = {sc.record_event_name(n) if n in sc.SESSION_EVENT_TYPES else n for n in event_names}
    assert event_names <= {where for where, _ in events_doc}


def test_the_documented_host_notice_kinds_are_the_ones_the_runtime_takes():
    (row,) = [line for line in DOCS.read_text(encoding="utf-8").splitlines()
              if line.startswith("| `otel_agents.event.notice`")]
    assert re.findall(r"`([a-z_]+)`", row.split("|")[3]) == list(sc.HOST_NOTICE_KINDS)
    from otel_agents.runtime.session import Session

    session = Session()
    with pytest.raises(ValueError, match="unknown host notice kind 'warning'"):
        session.host_notice("agent_1", "warning", "spent")
    assert session.host_notice("agent_1", "budget_warning", "80 % spent")  # a message id
