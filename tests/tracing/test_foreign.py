"""Other instrumentations' GenAI traces put in the tree's shape: keys mapped, agents lifted, a root agent made."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_agents.persistence.tree import build_tree
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.foreign import ORIGINAL_PARENT_SPAN_ID, SYNTHETIC, mapped_attributes, understood
from otel_agents.tracing.spandata import SpanData
from otel_agents.tracing.trace_text import decode_trace_text

FOREIGN = Path(__file__).resolve().parents[1] / "data" / "foreign"
TRACE = "0123456789abcdef0123456789abcdef"


def decoded(name: str) -> list[SpanData]:
    path = FOREIGN / name
    return decode_trace_text(path.read_bytes(), str(path))


def span(span_id: str, parent: str | None, name: str, **attributes) -> SpanData:
    return SpanData(TRACE, span_id, parent, name, "INTERNAL", 1_000 + int(span_id, 16), 10_000_000, attributes,
                    resource={"service.name": "svc"})


def test_openinference_keys_gain_their_genai_names_and_keep_their_own():
    llm = next(s for s in decoded("openinference.json") if s.span_id == "c0ffee0000000002")
    attrs = mapped_attributes(llm)
    assert attrs[sc.GEN_AI_OPERATION_NAME] == "chat"
    assert attrs[sc.GEN_AI_REQUEST_MODEL] == "gpt-4o-mini"
    assert attrs[sc.GEN_AI_PROVIDER_NAME] == "openai"
    assert (attrs[sc.GEN_AI_USAGE_INPUT_TOKENS], attrs[sc.GEN_AI_USAGE_OUTPUT_TOKENS]) == (300, 45)
    assert attrs[sc.GEN_AI_USAGE_CACHE_READ] == 128
    assert attrs["llm.token_count.prompt"] == 300  # nothing of the original is removed


def test_openllmetry_deprecated_names_and_request_type_are_mapped():
    chat = next(s for s in decoded("openllmetry.json") if s.name == "openai.chat")
    attrs = mapped_attributes(chat)
    assert attrs[sc.GEN_AI_OPERATION_NAME] == "chat"
    assert attrs[sc.GEN_AI_PROVIDER_NAME] == "openai"  # from gen_ai.system
    assert (attrs[sc.GEN_AI_USAGE_INPUT_TOKENS], attrs[sc.GEN_AI_USAGE_OUTPUT_TOKENS]) == (120, 40)
    tool = next(s for s in decoded("openllmetry.json") if s.name == "translate.tool")
    assert mapped_attributes(tool)[sc.GEN_AI_TOOL_NAME] == "translate"


def test_an_existing_genai_key_wins_over_an_alias():
    s = span("00000000000000a1", None, "x", **{sc.GEN_AI_USAGE_INPUT_TOKENS: 7, "gen_ai.usage.prompt_tokens": 9})
    assert mapped_attributes(s)[sc.GEN_AI_USAGE_INPUT_TOKENS] == 7


def test_an_agent_under_an_http_span_becomes_the_run_and_remembers_its_parent():
    spans = understood(decoded("jaeger-http-agent.json"))
    agent = next(s for s in spans if s.name == "invoke_agent Support")
    assert agent.parent_span_id is None and agent.attributes[ORIGINAL_PARENT_SPAN_ID] == "a1b2c3d4e5f60001"
    tree = build_tree(spans, "s")
    (run,) = tree["runs"]
    assert run["agent_name"] == "Support"
    assert [op["kind"] for op in run["ops"]] == ["llm", "tool", "llm", "llm"]
    assert tree["totals"]["inclusive"]["input_tokens"] == 8280
    assert tree["totals"]["inclusive"]["output_tokens"] == 1180
    assert [op["name"] for op in tree["ops"]] == ["POST /v1/support"]  # the HTTP span is kept, outside the run
    assert tree["agents"]["asst_support_1"]["name"] == "Support"


def test_a_trace_without_agents_gets_a_root_agent_named_after_the_service():
    spans = understood(decoded("openllmetry.json"))
    (root,) = [s for s in spans if s.attributes.get(SYNTHETIC)]
    assert root.name == "invoke_agent joke-service" and root.parent_span_id is None
    tree = build_tree(spans, "s")
    (run,) = tree["runs"]
    assert run["agent_name"] == "joke-service"
    assert sorted(op["kind"] for op in run["ops"]) == ["llm", "llm", "tool"]
    assert run["started_ns"] == min(s.start_ns for s in spans if s.parent_span_id == root.span_id)


def test_an_agent_span_with_usage_and_no_model_call_gets_one_synthetic_chat():
    spans = understood(decoded("openai-agents.json"))
    tree = build_tree(spans, "s")
    (run,) = tree["runs"]
    assert run["agent_name"] == "Weather agent"
    llms = [op for op in run["ops"] if op["kind"] == "llm"]
    assert len(llms) == 1 and llms[0]["attributes"][SYNTHETIC] is True
    assert tree["totals"]["inclusive"]["input_tokens"] == 412  # counted once, not on the agent too
    assert tree["totals"]["inclusive"]["tool_calls"] == 1


def test_a_nested_agent_stays_under_its_parent_agent():
    spans = understood([
        span("00000000000000a1", None, "GET /"),
        span("00000000000000a2", "00000000000000a1", "invoke_agent Outer"),
        span("00000000000000a3", "00000000000000a2", "execute_tool ask"),
        span("00000000000000a4", "00000000000000a3", "invoke_agent Inner"),
    ])
    parents = {s.span_id: s.parent_span_id for s in spans}
    assert parents["00000000000000a2"] is None and parents["00000000000000a4"] == "00000000000000a3"
    tree = build_tree(spans, "s")
    assert tree["agents"]["Inner"]["parent"] == "Outer"


def test_a_trace_with_neither_agents_nor_model_calls_is_left_as_it_is():
    spans = [span("00000000000000a1", None, "GET /"), span("00000000000000a2", "00000000000000a1", "SELECT")]
    assert understood(spans) == spans


_NAMES = st.sampled_from(["GET /", "invoke_agent A", "chat m", "execute_tool t", "openai.chat", "task"])


@st.composite
def traces(draw):
    n = draw(st.integers(1, 8))
    spans = []
    for i in range(n):
        parent = draw(st.one_of(st.none(), st.integers(0, i - 1))) if i else None
        attrs = {"llm.request.type": "chat", "gen_ai.usage.prompt_tokens": 3} if draw(st.booleans()) else {}
        spans.append(span(f"{i + 1:016x}", None if parent is None else f"{parent + 1:016x}", draw(_NAMES), **attrs))
    return spans


@settings(max_examples=150, deadline=None)
@given(traces())
def test_understood_keeps_every_span_and_is_stable(spans):
    once = understood(spans)
    assert [s.span_id for s in once[: len(spans)]] == [s.span_id for s in spans]
    assert understood(once) == once  # importing its own output again changes nothing
    tree = build_tree(once, "s")
    if any(s.attributes.get(sc.GEN_AI_OPERATION_NAME) == "chat" or s.name.startswith(("chat", "execute_tool", "invoke_agent"))
           for s in once):
        assert tree["runs"]  # GenAI work always ends up in a run


def test_alias_values_the_checks_would_refuse_are_not_mapped():
    s = span("00000000000000a1", None, "x", **{"llm.token_count.prompt": -3, "llm.token_count.completion": 2.5,
                                               "llm.model_name": 7, "gen_ai.usage.prompt_tokens": True})
    attrs = mapped_attributes(s)
    assert not ({sc.GEN_AI_USAGE_INPUT_TOKENS, sc.GEN_AI_USAGE_OUTPUT_TOKENS, sc.GEN_AI_REQUEST_MODEL} & set(attrs))


def test_a_deep_chain_is_shaped_in_linear_time():
    import time

    n = 20_000
    chain = [span(f"{i + 1:016x}", f"{i:016x}" if i else None, "chat m" if i % 2 else "step") for i in range(n)]
    started = time.perf_counter()
    spans = understood(chain)
    assert time.perf_counter() - started < 5  # quadratic would be 200 million steps
    lifted = [s for s in spans if s.attributes.get(ORIGINAL_PARENT_SPAN_ID)]
    assert [s.span_id for s in lifted] == [f"{2:016x}"]  # only the outermost chat: the rest sit under it


def test_a_bad_token_count_is_not_passed_over_for_a_later_alias():
    """The first alias present is the count (import_checks.py refuses a bad one): taking the next would bill
    a number the trace did not mean."""
    s = span("00000000000000a1", None, "x", **{"gen_ai.usage.prompt_tokens": -1, "llm.token_count.prompt": 300})
    assert sc.GEN_AI_USAGE_INPUT_TOKENS not in mapped_attributes(s)
