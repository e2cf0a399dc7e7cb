"""The replay book: which replayed requests match their recorded call, and what is a divergence in each mode."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from otel_agents.llm.replay_book import RecordedCall, ReplayBook, Stopped

TOOLS = [{"type": "function", "function": {"name": "task", "parameters": {"type": "object"}}}]
texts = st.text(max_size=30)
messages_strategy = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant", "tool"]), "content": texts}),
    min_size=1, max_size=6,
)


def book(*calls: RecordedCall, strict: bool = False) -> ReplayBook:
    return ReplayBook({(c.agent, c.turn, c.attempt): c for c in calls}, strict=strict)


def call(messages, turn=1, attempt=1, agent="main", **kw) -> RecordedCall:
    return RecordedCall(agent, turn, attempt, messages, message={"role": "assistant", "content": "ok"}, **kw)


@given(messages_strategy)
def test_the_recorded_request_is_answered_whatever_empty_fields_it_carries(messages):
    recorded = call(messages)
    sent = [{**m, "tool_calls": None, "name": None} for m in messages]  # None and absent say the same
    replay = book(recorded)
    assert replay.answer("main", 1, sent, {}) is recorded
    assert replay.divergence is None and replay.unused() == []


@given(messages_strategy, st.data())
def test_any_changed_content_is_a_divergence_naming_agent_turn_and_both_texts(messages, data):
    index = data.draw(st.integers(0, len(messages) - 1))
    changed = data.draw(texts.filter(lambda t: t != messages[index]["content"]))
    sent = [dict(m) for m in messages]
    sent[index]["content"] = changed
    replay = book(call(messages))
    with pytest.raises(Stopped, match="agent main, turn 1, attempt 1: messages differ"):
        replay.answer("main", 1, sent, {})
    assert replay.divergence.what == "messages"
    assert replay.divergence.diff.startswith("--- recorded\n+++ replayed")


def test_turns_count_each_agents_calls_and_a_retry_keeps_its_turn():
    first = [{"role": "user", "content": "a"}]
    second = first + [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "b"}]
    failed = RecordedCall("main", 2, 1, second, error_type="RateLimitError")
    replay = book(call(first), failed, call(second, turn=2, attempt=2), call(first, agent="Jack"))
    assert replay.answer("main", 1, first, {}).turn == 1
    assert replay.answer("Jack", 1, first, {}).agent == "Jack"  # another agent's turns are its own
    assert replay.answer("main", 1, second, {}) is failed
    assert replay.answer("main", 2, second, {}).attempt == 2
    assert replay.unused() == []


def test_a_call_never_recorded_stops_the_replay_and_every_later_request():
    replay = book(call([{"role": "user", "content": "a"}]))
    replay.answer("main", 1, [{"role": "user", "content": "a"}], {})
    with pytest.raises(Stopped, match="agent main, turn 2, attempt 1: no recorded call"):
        replay.answer("main", 1, [{"role": "user", "content": "b"}], {})
    with pytest.raises(Stopped):  # stopped there: nothing later is answered
        replay.answer("Jack", 1, [{"role": "user", "content": "a"}], {})


def test_unused_calls_are_those_never_requested():
    recorded = [call([{"role": "user", "content": "a"}], turn=n) for n in (1, 2)]
    replay = book(*recorded)
    replay.answer("main", 1, [{"role": "user", "content": "a"}], {})
    assert replay.unused() == [recorded[1]]


@pytest.mark.parametrize("what, recorded_kw, sent_params", [
    ("tools", {"tools": TOOLS}, {"tools": [{**TOOLS[0], "function": {"name": "task2"}}]}),
    ("parameters", {"parameters": {"temperature": 0.5}}, {"tools": None, "temperature": 0.7}),
    ("parameters", {"parameters": {"stop": ["END"]}}, {"stop": "FIN"}),
])
def test_tools_and_parameters_are_noted_by_default_and_stop_a_strict_replay(what, recorded_kw, sent_params):
    messages = [{"role": "user", "content": "a"}]
    lenient = book(call(messages, **recorded_kw))
    assert lenient.answer("main", 1, messages, sent_params).message == {"role": "assistant", "content": "ok"}
    assert [n.what for n in lenient.notes] == [what] and lenient.divergence is None
    strict = book(call(messages, **recorded_kw), strict=True)
    with pytest.raises(Stopped, match=f"{what} differ"):
        strict.answer("main", 1, messages, sent_params)


def test_equal_parameters_and_tools_are_no_difference_even_strict():
    messages = [{"role": "user", "content": "a"}]
    strict = book(call(messages, tools=TOOLS, parameters={"stop": ["END"], "seed": 3}), strict=True)
    strict.answer("main", 1, messages, {"tools": TOOLS, "stop": ["END"], "seed": 3, "max_retries": 0})
    assert strict.notes == [] and strict.divergence is None


def test_calls_of_runs_before_from_run_are_answered_unchecked():
    replay = book(call([{"role": "user", "content": "a"}], compare=False), strict=True)
    assert replay.answer("main", 1, [{"role": "user", "content": "changed"}], {}).turn == 1
    assert replay.divergence is None


def test_a_book_from_run_n_holds_only_the_calls_compared_and_counts_turns_from_the_sessions_start():
    hello = [{"role": "user", "content": "hi"}]
    earlier = [call(hello, turn=1), call(hello, turn=2), call(hello, turn=1, agent="Jill")]
    later = [call(hello, turn=3), call(hello, turn=2, agent="Jill"), call(hello, turn=1, agent="Jack")]
    for recorded in earlier:
        recorded.compare = False
    replay = ReplayBook.of(earlier + later)
    assert set(replay.calls) == {("main", 3, 1), ("Jill", 2, 1), ("Jack", 1, 1)}  # run 1's are not made again
    assert replay.answer("main", 1, hello, {}) is later[0]  # main's first request of the replay is its turn 3
    assert replay.answer("Jack", 1, hello, {}) is later[2]
    assert replay.unused() == [later[1]]
    replay.answer("Jill", 1, hello, {})
    assert replay.unused() == [] and replay.divergence is None
    with pytest.raises(Stopped, match="agent main, turn 4, attempt 1: no recorded call"):
        replay.answer("main", 1, hello, {})


@given(st.lists(st.one_of(st.none(), st.floats(0, 1)), min_size=1, max_size=5))
def test_the_recorded_cost_is_that_of_the_call_last_answered_to_the_agents_attempt(costs):
    calls = [call([{"role": "user", "content": str(n)}], turn=n, cost_usd=cost) for n, cost in enumerate(costs, 1)]
    replay = book(*calls)
    assert replay.recorded_cost("main", 1) is None  # nothing answered yet
    for recorded in calls:
        replay.answer("main", 1, recorded.messages, {})
        assert replay.recorded_cost("main", 1) == recorded.cost_usd
        assert replay.recorded_cost("main", 2) is None and replay.recorded_cost("other", 1) is None
