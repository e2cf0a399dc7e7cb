"""Agent.response(): the loop, tool errors as results, hooks, limits, verbatim transcripts."""

from __future__ import annotations

import json

import pytest
from opentelemetry.trace import StatusCode

from otel_agents.runtime.agent import MaxTurnsExceeded
from otel_agents.runtime.hooks import ApprovalHook, Decision, ReviewHook, TransformHook
from otel_agents.runtime.logged_string import LoggedString
from otel_agents.runtime.tools import ToolContext, make_tool, tool
from otel_agents.tracing import semconv as sc


def calls(*pairs):
    return {"tool_calls": [{"name": n, "arguments": a} for n, a in pairs]}


def tool_results(agent):
    return [m for m in agent.transcript if m["role"] == "tool"]


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"kaboom: {reason}")


async def test_loop_runs_tools_until_an_utterance(scripted, memory_tracing):
    session = scripted({"agents": {"main": [calls(("add", {"a": 2, "b": 3})), "The sum is 5."]}}, tools=[add])
    answer = await session.run("add 2 and 3")
    root = session.root
    assert isinstance(answer, LoggedString) and answer == "The sum is 5."
    assert answer.message_id == root.transcript_ids[-1]
    roles = [m["role"] for m in root.transcript]
    assert roles == ["user", "assistant", "tool", "assistant"]
    # A non-string result travels as JSON text.
    assert tool_results(root) == [{"role": "tool", "content": "5", "tool_call_id": "call_main_1_1", "name": "add"}]
    # The assistant's tool-call turn is kept exactly as the model produced it.
    assert root.transcript[1]["tool_calls"] == [
        {"id": "call_main_1_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}
    ]
    assert len(root.transcript) == len(root.transcript_ids)


async def test_max_turns_gives_a_clear_error(scripted, span_tree):
    loop = [calls(("add", {"a": 1, "b": 1}))] * 5
    session = scripted({"agents": {"main": loop}}, tools=[add], max_turns=3)
    with pytest.raises(MaxTurnsExceeded, match=r"'main' \(agent_001\) reached the limit of 3 LLM turns"):
        await session.run("loop forever")
    tree = span_tree()
    root = tree.roots[0]
    assert len(tree.children(root, "turn")) == 3
    assert root.status.status_code == StatusCode.ERROR
    # A per-agent limit overrides the session's.
    session2 = scripted({"agents": {"main": loop}}, tools=[add], max_turns=10)
    session2.root_spec.max_turns = 2
    with pytest.raises(MaxTurnsExceeded, match="limit of 2"):
        await session2.run("again")


async def test_tool_errors_become_results_and_the_agent_goes_on(scripted, span_tree):
    turn = {
        "tool_calls": [
            {"name": "no_such_tool", "arguments": {}},
            {"name": "explode", "arguments": {"reason": "test"}},
            {"name": "add", "arguments": {"a": 1}},  # missing argument
        ]
    }
    session = scripted({"agents": {"main": [turn, "Recovered."]}}, tools=[add, explode])
    answer = await session.run("try things")
    assert answer == "Recovered."
    results = {m["name"]: m["content"] for m in tool_results(session.root)}
    assert results["no_such_tool"] == "Error: unknown tool 'no_such_tool'"
    assert results["explode"] == "Error: tool 'explode' failed: RuntimeError: kaboom: test"
    # Issue 16: a missing argument is caught by validation and never reaches the function.
    assert results["add"] == "Error: invalid arguments for add: b is required"
    tools = [s for s in span_tree().spans if s.name.startswith("execute_tool ")]
    assert {s.attributes[sc.TOOL_STATUS] for s in tools} == {"failed"}
    assert all(s.status.status_code == StatusCode.ERROR for s in tools)
    assert all(s.attributes[sc.ERROR_TYPE] == "tool_failed" for s in tools)


async def test_a_tool_returns_text_as_it_is_json_as_json_and_anything_else_as_an_error(scripted, span_tree):
    """An object or bytes became its repr quoted as a JSON string ("\\"<object object at 0x…>\\""), which told
    the model nothing and the program no mistake; now the call fails saying what the tool returned."""
    returns = {"text": "plain \"text\"", "data": {"a": [1, 2.5, None, True], "é": "ü"}, "number": 7, "nothing": None,
               "thing": object(), "raw": b"\xff\xfe", "nested": {"when": {1, 2}}}
    made = [make_tool(returning(value), name=key, description=key) for key, value in returns.items()]
    turn = calls(*((key, {}) for key in returns))
    session = scripted({"agents": {"main": [turn, "done"]}}, tools=made)
    assert await session.run("go") == "done"
    results = {m["name"]: m["content"] for m in tool_results(session.root)}
    assert results == {
        "text": 'plain "text"',
        "data": '{"a": [1, 2.5, null, true], "é": "ü"}',
        "number": "7",
        "nothing": "",
        "thing": "Error: tool 'thing' returned an object, not text or JSON",
        "raw": "Error: tool 'raw' returned a bytes, not text or JSON",
        "nested": "Error: tool 'nested' returned a dict that is not JSON (Object of type set is not JSON serializable)",
    }
    status = {s.name.removeprefix("execute_tool "): s.attributes[sc.TOOL_STATUS]
              for s in span_tree().spans if s.name.startswith("execute_tool ")}
    assert status == {"text": "ok", "data": "ok", "number": "ok", "nothing": "ok",
                      "thing": "failed", "raw": "failed", "nested": "failed"}


async def test_a_tool_returning_a_pydantic_model_or_a_dataclass_gives_its_json_and_nan_fails(scripted):
    """Tools take pydantic arguments: a model (or a dataclass) returned is the JSON it stands for, not
    a failed call; a NaN, which json writes as no JSON a provider takes, fails the call."""
    import dataclasses

    import pydantic

    class City(pydantic.BaseModel):
        name: str
        people: int

    @dataclasses.dataclass
    class Place:
        name: str
        tags: list

    returns = {"model": City(name="Paris", people=2), "record": Place("Rome", ["old"]), "nan": float("nan")}
    made = [make_tool(returning(value), name=key, description=key) for key, value in returns.items()]
    session = scripted({"agents": {"main": [calls(*((key, {}) for key in returns)), "done"]}}, tools=made)
    assert await session.run("go") == "done"
    results = {m["name"]: m["content"] for m in tool_results(session.root)}
    assert results == {"model": '{"name": "Paris", "people": 2}', "record": '{"name": "Rome", "tags": ["old"]}',
                       "nan": "Error: tool 'nan' returned a float, not text or JSON"}


def returning(value):
    return lambda: value


async def test_review_hook_rejects_and_the_agent_tries_again(scripted, span_tree):
    session = scripted({"agents": {"main": ["I am certain, 100% guaranteed.", "I think so, but check."]}})

    def no_guarantees(agent, utterance):
        if "guaranteed" in utterance:
            return Decision(False, "do not promise outcomes")
        return Decision(True)

    session.hooks.reviewers.append(ReviewHook("Careful", no_guarantees))
    answer = await session.run("will it work?")
    assert answer == "I think so, but check."
    transcript = session.root.transcript
    assert [m["role"] for m in transcript] == ["user", "assistant", "user", "assistant"]
    # The reason reaches the model as a turn it sees; the record says it came from the system.
    assert transcript[2]["content"] == "Your answer was rejected by hook 'Careful': do not promise outcomes"
    feedback = [r for r in session.telemetry.listeners[0].records if r.get("content") == transcript[2]["content"]]
    assert feedback[0]["source"] == "system"
    hooks = [dict(e.attributes) for s in span_tree().spans for e in s.events if e.name == sc.EVENT_HOOK]
    assert [h[sc.HOOK_DECISION] for h in hooks] == ["reject", "accept"]
    assert answer.message_id == session.root.transcript_ids[-1]


async def test_transform_hook_rewrites_delivery_but_keeps_substance(scripted, memory_tracing):
    data = {
        "agents": {
            "main": [
                calls(("task", {"name": "Jack", "system_prompt": "HR"})),
                calls(("task", {"name": "Jill", "system_prompt": "author"})),
                calls(("discuss", {"speakers": ["Jack"], "listeners": ["Jill"]})),
                "done",
            ],
            "Jack": ["The wifi password: 1234"],
        },
    }
    session = scripted(data)
    session.hooks.transformers.append(
        TransformHook("Redactor", lambda sender, recipient, text: text.replace("1234", "[REDACTED]"))
    )
    await session.run("go")
    records = memory_tracing.recorder.records
    original = next(r for r in records if r.get("content") == "The wifi password: 1234")
    heard = next(r for r in records if r["agent_id"] == session.find_agent("Jill").agent_id and r.get("role") == "user")
    assert heard["content"] == "[Jack]: The wifi password: [REDACTED]"
    assert heard["substance"] == original["message_id"]
    # The parent hears it as a tool result: a delivery like any other, redacted too (it was not).
    assert tool_results(session.root)[-1]["content"] == "The wifi password: [REDACTED]"
    assert original["content"] == "The wifi password: 1234"  # what Jack said is recorded as said


async def test_a_task_answer_reaches_the_caller_through_the_transform_hooks(scripted, span_tree):
    ask = calls(("task", {"name": "Kid", "system_prompt": "x", "user_prompt": "your PIN?"}))
    session = scripted({"agents": {"main": [ask, "done"], "Kid": ["PIN 1234"]}})
    seen = []

    def redact(sender, recipient, text):
        seen.append((sender.name, recipient.name))
        return text.replace("1234", "[REDACTED]")

    session.hooks.transformers.append(TransformHook("Redactor", redact))
    await session.run("go")
    assert tool_results(session.root)[-1]["content"] == "PIN [REDACTED]"
    assert seen == [("main", "Kid"), ("Kid", "main")]
    (task_span,) = [s for s in span_tree().spans if s.name == "execute_tool task"]
    assert [e.attributes[sc.HOOK_NAME] for e in task_span.events if e.name == sc.EVENT_HOOK] == ["Redactor"]


async def test_approval_hook_denial_text_and_custom_function_hook(scripted, span_tree):
    session = scripted({"agents": {"main": [calls(("add", {"a": 1, "b": 2})), "ok"]}}, tools=[add])
    session.hooks.approvers.append(ApprovalHook("NoMath", lambda req: Decision(False, "math is off today"), frozenset({"add"})))
    await session.run("add")
    assert tool_results(session.root)[0]["content"] == "Error: Action blocked by hook 'NoMath': math is off today"
    (span,) = span_tree().named("execute_tool add")
    assert span.attributes[sc.TOOL_STATUS] == "denied"


async def test_hook_that_returns_a_bool_and_one_that_does_not_apply(scripted):
    session = scripted({"agents": {"main": [calls(("add", {"a": 1, "b": 2})), "ok"]}}, tools=[add])
    session.hooks.approvers.append(ApprovalHook("Other", lambda req: False, frozenset({"task"})))
    session.hooks.approvers.append(ApprovalHook("Yes", lambda req: True))
    await session.run("add")
    assert tool_results(session.root)[0]["content"] == "3"


async def test_task_with_user_prompt_answers_at_once(scripted, memory_tracing):
    data = {
        "agents": {
            "main": [calls(("task", {"name": "Helper", "system_prompt": "help", "user_prompt": "What is 2+2?"})), "ok"],
            "Helper": ["4"],
        },
    }
    session = scripted(data)
    await session.run("ask the helper")
    helper = session.find_agent("Helper")
    assert session.root.subagents == {"Helper": helper}
    assert helper.parent is session.root
    assert [m["role"] for m in helper.transcript] == ["system", "user", "assistant"]
    records = memory_tracing.recorder.records
    call_msg = next(r for r in records if r.get("tool_calls"))
    created = next(r for r in records if r["event_type"] == "agent_created" and r["name"] == "Helper")
    piece = next(r for r in records if r["event_type"] == "piece_of_text")
    asked = next(r for r in records if r["agent_id"] == helper.agent_id and r.get("role") == "user")
    assert created["cause"] == call_msg["message_id"] == piece["cause"]
    assert asked["substance"] == piece["message_id"] and asked["content"] == "What is 2+2?"
    assert tool_results(session.root)[0]["content"] == "4"


async def test_builtin_argument_errors_are_results(scripted):
    data = {
        "agents": {
            "main": [
                calls(("task", {"name": "A", "system_prompt": "x"})),
                calls(("task", {"name": "A", "system_prompt": "again"})),
                calls(("discuss", {"speakers": ["A", "Ghost"]})),
                calls(("discuss", {"speakers": []})),
                "fine",
            ]
        }
    }
    session = scripted(data)
    await session.run("go")
    contents = [m["content"] for m in tool_results(session.root)]
    assert contents == [
        "Created subagent: A",
        "Error: subagent 'A' already exists",
        "Error: unknown subagent(s): Ghost",
        "Error: a discussion needs at least one speaker",
    ]


async def test_task_refuses_a_sub_agent_name_a_call_path_could_not_hold(scripted):
    # "/" joins names in call paths (main/a/b would read as three agents); a control character breaks lines.
    data = {"agents": {"main": [calls(("task", {"name": "a/b"})), calls(("task", {"name": "x\ny"})),
                                calls(("task", {"name": "  "})), calls(("task", {"name": "Ok"})), "fine"]}}
    session = scripted(data)
    assert await session.run("go") == "fine"
    assert [m["content"] for m in tool_results(session.root)] == [
        "Error: invalid arguments for task: name: may not contain '/' (it joins agent names in call paths)",
        "Error: invalid arguments for task: name: may not contain '\\n' (a name is one line of printable characters)",
        "Error: invalid arguments for task: name: must not be empty",
        "Created subagent: Ok",
    ]
    assert [a.name for a in session.agents.values()] == ["main", "Ok"]


async def test_fallback_utterance_when_the_script_runs_out(scripted):
    session = scripted({"agents": {"main": ["first"]}, "fallback": "Nothing more."})
    assert await session.run("one") == "first"
    assert await session.run("two") == "Nothing more."
    assert session.runs == 2


async def test_inform_and_harken_carry_substance(scripted, memory_tracing):
    session = scripted({"agents": {}})
    a = session.create_agent("A", "scripted/x")
    b = session.create_agent("B", "scripted/x")
    original = a.harken("plain")
    assert memory_tracing.recorder.records[-1].get("substance") is None
    b_id = a.inform(b, LoggedString("[A]: plain", original))
    assert memory_tracing.recorder.records[-1] == {
        "message_id": b_id, "event_type": "transcript_entry", "agent_id": b.agent_id, "role": "user",
        "content": "[A]: plain", "substance": original,
    }
    a.inform(b, "no id")  # a plain str is new content
    assert "substance" not in memory_tracing.recorder.records[-1]


async def test_user_tools_are_inherited_by_subagents(scripted):
    @tool
    async def whoami(ctx: ToolContext) -> str:
        """Name of the calling agent."""
        return ctx.agent.name

    data = {
        "agents": {
            "main": [calls(("task", {"name": "Kid", "system_prompt": "x", "user_prompt": "who are you?"})), "ok"],
            "Kid": [calls(("whoami", {})), "I am Kid"],
        }
    }
    session = scripted(data, tools=[whoami])
    await session.run("go")
    kid = session.find_agent("Kid")
    assert set(kid.tools) == {"task", "discuss", "whoami"}
    assert tool_results(kid)[0]["content"] == "Kid"
    schema_names = [s["function"]["name"] for s in kid.tool_schemas()]
    assert sorted(schema_names) == ["discuss", "task", "whoami"]
    assert json.dumps(kid.tool_schemas())  # plain JSON, sent to the model


async def test_a_failing_approval_hook_fails_closed_and_the_agent_goes_on(scripted, span_tree):
    def broken(request):
        raise RuntimeError("monitor offline")

    session = scripted({"agents": {"main": [calls(("add", {"a": 1, "b": 2})), "carried on"]}}, tools=[add])
    session.hooks.approvers.append(ApprovalHook("Monitor", broken))
    assert await session.run("add") == "carried on"
    assert tool_results(session.root)[0]["content"] == (
        "Error: Action blocked by hook 'Monitor': hook failed: RuntimeError: monitor offline"
    )
    (span,) = span_tree().named("execute_tool add")
    assert span.attributes[sc.TOOL_STATUS] == "denied"


async def test_a_hook_without_a_reason_leaves_no_colon_hanging(scripted):
    session = scripted({"agents": {"main": [calls(("add", {"a": 1, "b": 2})), "first", "second"]}}, tools=[add])
    session.hooks.approvers.append(ApprovalHook("Gate", lambda request: False))
    verdicts = iter([False, True])
    session.hooks.reviewers.append(ReviewHook("Critic", lambda agent, utterance: next(verdicts)))
    assert await session.run("go") == "second"
    said = [m["content"] for m in session.root.transcript]
    assert "Error: Action blocked by hook 'Gate'." in said
    assert "Your answer was rejected by hook 'Critic'." in said
    notices = [r["content"] for r in session.telemetry.listeners[0].records if r.get("notice") == "denial"]
    assert notices == ["main may not run add: hook 'Gate' denied it."]
