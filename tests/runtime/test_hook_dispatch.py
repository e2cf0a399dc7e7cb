"""SessionHooks when a hook fails: approval denies, review and transform stop the response (HookFailed)."""

from __future__ import annotations

import gc
import warnings

import pytest

from otel_agents.runtime.hooks import ApprovalHook, HookFailed, ReviewHook, TransformHook
from otel_agents.tracing import semconv as sc


def task_call(name: str, prompt: str) -> dict:
    return {"tool_calls": [{"name": "task", "arguments": {"name": name, "system_prompt": "x", "user_prompt": prompt}}]}


def hook_events(span_tree) -> list[dict]:
    return [dict(e.attributes) for s in span_tree().spans for e in s.events if e.name == sc.EVENT_HOOK]


def tool_result(agent) -> str:
    (result,) = [m["content"] for m in agent.transcript if m["role"] == "tool"]
    return result


def raising(*args):
    raise ValueError("reviewer offline")


async def test_a_failing_review_hook_stops_the_root_response_after_one_call(scripted, span_tree):
    # Two answers scripted: a rejection would have asked the model again and taken the second.
    session = scripted({"agents": {"main": ["first answer", "second answer"]}})
    session.hooks.reviewers.append(ReviewHook("Critic", raising))
    with pytest.raises(HookFailed, match=r"^review hook 'Critic' failed: ValueError: reviewer offline$"):
        await session.run("go")
    # Not asked again; but the agent (and whoever resumes it) is told its answer was never given.
    assert [(m["role"], m["content"]) for m in session.root.transcript[1:]] == [
        ("assistant", "first answer"),
        ("user", "Your answer was not delivered: review hook 'Critic' failed: ValueError: reviewer offline"),
    ]
    assert len([s for s in span_tree().spans if s.name.startswith(sc.OP_CHAT + " ")]) == 1
    (event,) = hook_events(span_tree)
    assert (event[sc.HOOK_KIND], event[sc.HOOK_DECISION], event[sc.HOOK_REASON], event[sc.HOOK_CAUSE]) == (
        "review", "error", "ValueError: reviewer offline", session.root.transcript_ids[1]
    )


async def test_a_failing_review_hook_on_a_sub_agent_is_its_callers_tool_error(scripted):
    data = {"agents": {"main": [task_call("Kid", "hello"), "carried on"], "Kid": ["hi", "hi again"]}}
    session = scripted(data)
    session.hooks.reviewers.append(ReviewHook("Critic", raising, frozenset({"Kid"})))
    assert await session.run("go") == "carried on"
    assert tool_result(session.root) == (
        "Error: tool 'task' failed: HookFailed: review hook 'Critic' failed: ValueError: reviewer offline"
    )
    kid = session.find_agent("Kid")
    assert [m["content"] for m in kid.transcript[-2:]] == [
        "hi", "Your answer was not delivered: review hook 'Critic' failed: ValueError: reviewer offline"]


async def test_a_review_hook_returning_none_fails_rather_than_rejects(scripted):
    session = scripted({"agents": {"main": ["answer", "answer again"]}})
    session.hooks.reviewers.append(ReviewHook("Forgetful", lambda agent, utterance: None))
    with pytest.raises(HookFailed, match=r"TypeError: review hook 'Forgetful' returned None; return a Decision or a bool"):
        await session.run("go")


async def test_false_and_true_answers_are_decisions(scripted, span_tree):
    answers = iter([False, True])
    session = scripted({"agents": {"main": ["one", "two"]}})
    session.hooks.reviewers.append(ReviewHook("Terse", lambda agent, utterance: next(answers)))
    assert await session.run("go") == "two"
    assert [e[sc.HOOK_DECISION] for e in hook_events(span_tree)] == ["reject", "accept"]
    # Each decision names the utterance it judged: the first ("one") rejected, the second accepted.
    said = [i for i, m in zip(session.root.transcript_ids, session.root.transcript) if m["role"] == "assistant"]
    assert [e[sc.HOOK_CAUSE] for e in hook_events(span_tree)] == said


@pytest.mark.parametrize("answer", ["DENY", "no", 0, 1, [], "APPROVE"])
async def test_an_approval_hook_answering_other_than_a_bool_or_decision_denies(scripted, answer):
    # Read as true or false, "DENY" and "no" would have let the call through.
    add_call = {"tool_calls": [{"name": "task", "arguments": {"name": "Kid"}}]}
    session = scripted({"agents": {"main": [add_call, "carried on"]}})
    session.hooks.approvers.append(ApprovalHook("Loose", lambda request: answer))
    assert await session.run("go") == "carried on"
    assert tool_result(session.root) == (
        "Error: Action blocked by hook 'Loose': hook failed: "
        f"TypeError: approval hook 'Loose' returned {type(answer).__name__}; return a Decision or a bool"
    )
    assert session.find_agent("Kid") is None


async def test_a_review_hook_answering_a_string_fails(scripted):
    session = scripted({"agents": {"main": ["answer", "answer again"]}})
    session.hooks.reviewers.append(ReviewHook("Wordy", lambda agent, utterance: "REJECT"))
    with pytest.raises(HookFailed, match=r"TypeError: review hook 'Wordy' returned str; return a Decision or a bool"):
        await session.run("go")


async def test_an_approval_hook_returning_none_denies_and_says_why(scripted):
    add_call = {"tool_calls": [{"name": "task", "arguments": {"name": "Kid"}}]}
    session = scripted({"agents": {"main": [add_call, "carried on"]}})
    session.hooks.approvers.append(ApprovalHook("Forgetful", lambda request: None))
    assert await session.run("go") == "carried on"
    assert tool_result(session.root) == (
        "Error: Action blocked by hook 'Forgetful': hook failed: "
        "TypeError: approval hook 'Forgetful' returned None; return a Decision or a bool"
    )
    assert session.find_agent("Kid") is None


@pytest.mark.parametrize(
    "rewrite, reason",
    [
        (raising, "ValueError: reviewer offline"),
        (lambda sender, recipient, text: None, "TypeError: transform hook 'Redact' returned NoneType, not text"),
    ],
)
async def test_a_failing_transform_hook_delivers_nothing(scripted, span_tree, rewrite, reason):
    data = {"agents": {"main": [task_call("Kid", "my password is hunter2"), "carried on"], "Kid": ["heard it"]}}
    session = scripted(data)
    session.hooks.transformers.append(TransformHook("Redact", rewrite))
    assert await session.run("go") == "carried on"
    assert tool_result(session.root) == f"Error: tool 'task' failed: HookFailed: transform hook 'Redact' failed: {reason}"
    kid = session.find_agent("Kid")
    assert not any("hunter2" in str(m.get("content")) for m in kid.transcript)  # the text did not get through
    assert [m["role"] for m in kid.transcript] == ["system"]  # and Kid was never asked
    (event,) = hook_events(span_tree)
    assert (event[sc.HOOK_KIND], event[sc.HOOK_DECISION], event[sc.HOOK_REASON]) == ("transform", "error", reason)


async def test_an_async_transform_hook_is_refused_without_a_never_awaited_warning(scripted):
    async def rewrite(sender, recipient, text):
        return text.upper()

    data = {"agents": {"main": [task_call("Kid", "hello"), "carried on"], "Kid": ["hi"]}}
    session = scripted(data)
    session.hooks.transformers.append(TransformHook("Shout", rewrite))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert await session.run("go") == "carried on"
        gc.collect()
    assert "transform hook 'Shout' is async; a transform returns its text at once" in tool_result(session.root)
    assert not [w for w in caught if "never awaited" in str(w.message)]
