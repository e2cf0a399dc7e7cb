"""The built-in jack-and-jill script as a trace: shape, kinds, attempts, totals, hook denial."""

from __future__ import annotations

import json

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from otel_agents.llm.client import LLMClient
from otel_agents.llm.retry import RetryPolicy
from otel_agents.llm.scripts import load_script
from otel_agents.runtime.scenario import build_session
from otel_agents.runtime.session import RunContext
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import message_id_number

PROMPT = "Create Jack and Jill for a cafe discussion"
DENIAL = "Error: Action blocked by hook 'ResourceMonitor': Maximum subagents (3) already reached."


@pytest.fixture
async def run(memory_tracing, no_sleep, span_tree):
    """One run of the built-in script, built the way ``otel-agents run`` builds it."""
    script = load_script("jack-and-jill")
    llm = LLMClient(memory_tracing.telemetry, retry=RetryPolicy(max_attempts=4), sleep=no_sleep)
    session = build_session(script, telemetry=memory_tracing.telemetry, llm=llm)
    answer = await session.run(PROMPT, context=RunContext(source="cli", script=script.source))

    class Run:
        pass

    r = Run()
    r.session, r.answer, r.tree, r.delays = session, answer, span_tree(), no_sleep.delays
    r.records = memory_tracing.recorder.records
    return r


def attr(span, key):
    return span.attributes.get(key)


def totals(span, scope):
    return {key: attr(span, sc.total_attr(scope, key)) for key in sc.TOTAL_KEYS}


def test_one_trace_rooted_at_the_run(run):
    tree = run.tree
    assert [s.name for s in tree.roots] == ["invoke_agent main"]
    root = tree.roots[0]
    assert {s.context.trace_id for s in tree.spans} == {root.context.trace_id}
    assert attr(root, sc.RUN_INDEX) == 1
    assert attr(root, sc.GEN_AI_CONVERSATION_ID) == run.session.id
    assert attr(root, sc.GEN_AI_OPERATION_NAME) == "invoke_agent"
    assert attr(root, sc.RUN_SOURCE) == "cli" and attr(root, sc.RUN_SCRIPT) == "jack-and-jill"
    assert run.answer == "Jack and Jill met in the cafe and introduced themselves; a fourth helper was not allowed."


def test_span_kinds_and_names(run):
    for span in run.tree.spans:
        if span.name.startswith("chat "):
            assert span.kind == SpanKind.CLIENT
            assert span.name == "chat jack-and-jill"  # gen_ai.request.model: the litellm prefix removed
            assert attr(span, sc.GEN_AI_OPERATION_NAME) == "chat"
            assert isinstance(attr(span, sc.LLM_ATTEMPT), int)
        else:
            assert span.kind == SpanKind.INTERNAL, span.name
        op = span.name.split(" ")[0]
        assert op in {"invoke_agent", "create_agent", "turn", "chat", "execute_tool"}
        for deprecated in sc.DEPRECATED_ATTRIBUTES:
            assert deprecated not in span.attributes


def test_nesting_of_agents_tools_and_turns(run):
    tree = run.tree
    root = tree.roots[0]
    turns = tree.children(root, "turn")
    assert [attr(t, sc.TURN_INDEX) for t in turns] == [1, 2, 3, 4, 5, 6]
    assert [c.name for c in tree.children(root)] == ["create_agent main"] + ["turn"] * 6

    # Root's turns 1-3 each create one sub-agent inside an execute_tool task span.
    for turn, name in zip(turns[:3], ["Jack", "Jill", "ResourceMonitor"]):
        (tool,) = tree.children(turn, "execute_tool task")
        (created,) = tree.children(tool)
        assert created.name == f"create_agent {name}"
        assert attr(created, sc.AGENT_PARENT_ID) == run.session.root.agent_id

    # The discussion: Jack's and Jill's invocations nest under the discuss tool span.
    (discuss,) = tree.children(turns[3], "execute_tool discuss")
    assert [c.name for c in tree.children(discuss)] == ["invoke_agent Jack", "invoke_agent Jill"]
    jill = tree.children(discuss, "invoke_agent Jill")[0]
    assert attr(jill, sc.CALL_PATH) == "main/Jill"
    jill_turns = tree.children(jill, "turn")
    assert len(jill_turns) == 3
    (inner_task,) = tree.children(jill_turns[0], "execute_tool task")
    assert [c.name for c in tree.children(inner_task)] == ["create_agent Inner"]
    (inner_discuss,) = tree.children(jill_turns[1], "execute_tool discuss")
    (inner,) = tree.children(inner_discuss)
    assert inner.name == "invoke_agent Inner" and attr(inner, sc.CALL_PATH) == "main/Jill/Inner"

    # The approval hook is an agent: its invocation nests under the tool it judges.
    (denied,) = tree.children(turns[4], "execute_tool task")
    assert [c.name for c in tree.children(denied)] == ["invoke_agent ResourceMonitor"]

    # Every sub-agent invocation sits directly under an execute_tool span.
    for span in tree.spans:
        if span.name.startswith("invoke_agent ") and span is not root:
            assert tree.parent(span).name.startswith("execute_tool "), span.name


def test_the_rate_limited_attempt_is_retried_in_its_own_span(run):
    tree = run.tree
    turn = tree.children(tree.roots[0], "turn")[3]
    chats = [c for c in tree.children(turn) if c.name.startswith("chat ")]
    assert [attr(c, sc.LLM_ATTEMPT) for c in chats] == [1, 2]
    first, second = chats
    assert first.status.status_code == StatusCode.ERROR
    assert attr(first, sc.ERROR_TYPE) == "RateLimitError"
    assert attr(first, sc.LLM_RETRYABLE) is True
    assert attr(first, sc.LLM_RETRY_AFTER) == 0.05  # the script's Retry-After: a replay asks for it again
    assert sc.GEN_AI_USAGE_COST not in first.attributes
    assert second.status.status_code != StatusCode.ERROR
    assert sc.ERROR_TYPE not in second.attributes
    # The failed attempt produced nothing; the successful one recorded the reply.
    assert [e.name for e in first.events if e.name == "otel_agents.transcript_entry"] == []
    assert [e.name for e in second.events if e.name == "otel_agents.transcript_entry"] == ["otel_agents.transcript_entry"]
    assert run.delays == [0.05]  # the script's Retry-After, honoured
    # Exactly one 429 in the whole run.
    failed = [s for s in tree.spans if s.status.status_code == StatusCode.ERROR and s.name.startswith("chat ")]
    assert failed == [first]
    # Retry notices are host-only: they never enter a transcript.
    for agent in run.session.agents.values():
        assert all("retrying" not in (m.get("content") or "") for m in agent.transcript)


def test_chat_spans_refer_to_the_transcript_they_sent(run):
    tree = run.tree
    records = {r["message_id"]: r for r in run.records}
    for chat in tree.spans:
        if not chat.name.startswith("chat "):
            continue
        agent_id = attr(chat, sc.CONTEXT_AGENT_ID)
        last_id = attr(chat, sc.CONTEXT_LAST_MESSAGE_ID)
        last = records[last_id]
        assert last["agent_id"] == agent_id
        # (agent, last id, count) pins the request down: the agent's entries up to that id.
        sent = [r for r in run.records if r["event_type"] == "transcript_entry" and r["agent_id"] == agent_id
                and message_id_number(r["message_id"]) <= message_id_number(last_id)]
        assert attr(chat, sc.CONTEXT_MESSAGE_COUNT) == len(sent)
        assert sc.GEN_AI_INPUT_MESSAGES not in chat.attributes  # opt-in only
        if attr(chat, sc.RESPONSE_MESSAGE_ID):
            reply = records[attr(chat, sc.RESPONSE_MESSAGE_ID)]
            assert reply["role"] == "assistant" and reply["agent_id"] == agent_id
    # The count is the agent's transcript length at the time: main's last call saw
    # everything but the final utterance it produced.
    main_chats = [c for c in tree.spans if c.name.startswith("chat ") and attr(c, sc.AGENT_ID) == run.session.root.agent_id]
    last_chat = main_chats[-1]
    root_transcript = run.session.root.transcript
    assert attr(last_chat, sc.CONTEXT_MESSAGE_COUNT) == len(root_transcript) - 1


def test_usage_and_cost_on_every_successful_attempt(run):
    for chat in run.tree.spans:
        if not chat.name.startswith("chat ") or chat.status.status_code == StatusCode.ERROR:
            continue
        assert attr(chat, sc.GEN_AI_USAGE_INPUT_TOKENS) > 0
        assert attr(chat, sc.GEN_AI_USAGE_OUTPUT_TOKENS) > 0
        assert attr(chat, sc.GEN_AI_USAGE_COST) > 0
        assert attr(chat, sc.LLM_PRICE_SOURCE) == "litellm"
        assert attr(chat, sc.GEN_AI_PROVIDER_NAME) == "scripted"
        assert attr(chat, sc.GEN_AI_RESPONSE_ID).startswith("scripted-")


def test_totals_are_consistent_and_never_double_counted(run):
    tree = run.tree
    root = tree.roots[0]
    chats = [s for s in tree.spans if tree.is_chat(s)]
    tools = [s for s in tree.spans if s.name.startswith("execute_tool ")]
    cost = lambda spans: sum(attr(s, sc.GEN_AI_USAGE_COST) or 0.0 for s in spans)  # noqa: E731
    tokens = lambda spans, key: sum(attr(s, key) or 0 for s in spans)  # noqa: E731

    inclusive = totals(root, "inclusive")
    assert inclusive["cost_usd"] == pytest.approx(cost(chats), abs=1e-12)
    assert inclusive["cost_usd"] > 0
    assert inclusive["llm_calls"] == len(chats) == 13  # main 6, Jack 1, Jill 3, Inner 1, monitor 1, one 429
    assert inclusive["tool_calls"] == len(tools)
    assert inclusive["input_tokens"] == tokens(chats, sc.GEN_AI_USAGE_INPUT_TOKENS)
    assert inclusive["output_tokens"] == tokens(chats, sc.GEN_AI_USAGE_OUTPUT_TOKENS)
    assert inclusive["reasoning_tokens"] == tokens(chats, sc.GEN_AI_USAGE_REASONING) > 0
    assert inclusive["unpriced_calls"] == 0

    scopes = [s for s in tree.spans if tree.is_scope(s)]
    assert len(scopes) > 10
    for span in scopes:
        below = tree.descendants(span)
        # Inclusive: every attempt anywhere below, once.
        assert totals(span, "inclusive")["cost_usd"] == pytest.approx(cost(c for c in below if tree.is_chat(c)), abs=1e-12)
        assert totals(span, "inclusive")["llm_calls"] == sum(1 for c in below if tree.is_chat(c))
        # Self: the attempts whose nearest scope of the same kind is this span.
        same_kind = (lambda s: s.name == "turn") if span.name == "turn" else (lambda s: s.name.startswith("invoke_agent "))
        own = [c for c in below if tree.is_chat(c) and tree.nearest(c, same_kind) is span]
        assert totals(span, "self")["cost_usd"] == pytest.approx(cost(own), abs=1e-12), span.name
        assert totals(span, "self")["llm_calls"] == len(own)
        own_tools = [t for t in below if t.name.startswith("execute_tool ") and tree.nearest(t, same_kind) is span]
        assert totals(span, "self")["tool_calls"] == len(own_tools)
        # Self + the inclusive totals of the nearest nested scopes of the same kind = inclusive.
        nested = [d for d in below if same_kind(d) and tree.nearest(d, same_kind) is span]
        assert totals(span, "self")["cost_usd"] + sum(totals(n, "inclusive")["cost_usd"] for n in nested) == pytest.approx(
            totals(span, "inclusive")["cost_usd"], abs=1e-12
        )


def test_hook_denial_result(run):
    tree = run.tree
    (denied,) = [s for s in tree.spans if attr(s, sc.TOOL_STATUS) == "denied"]
    assert denied.name == "execute_tool task"
    assert denied.status.status_code == StatusCode.ERROR
    assert attr(denied, sc.ERROR_TYPE) == "tool_denied"
    result = [r for r in run.records if r["message_id"] == attr(denied, sc.TOOL_RESULT_MESSAGE_ID)]
    assert result[0]["content"] == DENIAL and result[0]["role"] == "tool"
    hooks = [dict(e.attributes) for e in denied.events if e.name == sc.EVENT_HOOK]
    monitor = run.session.find_agent("ResourceMonitor")
    (answer,) = [r["message_id"] for r in run.records
                 if r["agent_id"] == monitor.agent_id and r.get("role") == "assistant"]
    assert hooks == [{sc.HOOK_KIND: "approval", sc.HOOK_NAME: "ResourceMonitor", sc.HOOK_DECISION: "deny",
                      sc.HOOK_REASON: "Maximum subagents (3) already reached.", sc.HOOK_MESSAGE_ID: answer}]
    # The denial's notice names what caused it: the monitor's answer, then the call it denied.
    (notice,) = [r for r in run.records if r.get("notice") == "denial"]
    assert notice["cause"] == [answer, attr(denied, sc.TOOL_CALL_MESSAGE_ID)]
    assert run.session.find_agent("Searcher4") is None
    # The model's next request carries the denial verbatim.
    assert run.session.root.transcript[-2] == {
        "role": "tool", "content": DENIAL, "tool_call_id": "call_main_5_1", "name": "task",
    }


def test_every_record_is_a_span_event(run):
    assert run.tree.records() == run.records
    kinds = {r["event_type"] for r in run.records}
    # issue 23: the demo's retry (429) and its denial are host notices too, recorded for the user
    assert kinds == {"agent_created", "transcript_entry", "piece_of_text", "host_notice"}
    for record in run.records:
        assert not ("substance" in record and "cause" in record)


def test_reasoning_is_kept_verbatim_and_logged(run, memory_tracing):
    final = run.session.root.transcript[-1]
    assert final["reasoning_content"].startswith("The discussion is done")
    assert ("THK", final["reasoning_content"]) in memory_tracing.recorder.logs
    assert json.loads(json.dumps(final)) == final  # plain JSON: it can be sent again as is
