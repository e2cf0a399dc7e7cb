"""Hook events matched to the entries they concern (views/hook_marks.py)."""

from __future__ import annotations

from otel_agents.persistence.timestamps import iso_ts
from otel_agents.tracing import semconv as sc
from otel_agents.views.hook_marks import _HookEvent, hook_events, hook_marks
from otel_agents.views.model import HookMark


def entry(message_id: str, agent_id: str, span_id: str, ts_ns: int, **fields) -> dict:
    return {"message_id": message_id, "event_type": "transcript_entry", "agent_id": agent_id,
            "span_id": span_id, "ts": iso_ts(ts_ns), **fields}


def test_each_event_marks_the_first_entry_of_its_span_at_or_after_it():
    records = [
        entry("m1", "jack", "chat", 10, role="assistant", content="HELLO!!!"),
        entry("m2", "jack", "turn", 21, role="user", source="system", content="Your answer was rejected"),
        entry("m3", "jack", "chat2", 30, role="assistant", content="pin 1234"),
        entry("m4", "main", "tool", 40, role="tool", content="pin [X]"),  # a result told to the caller
        entry("m5", "bob", "tool", 50, role="user", substance="m3", content="[Jack]: pin 1234"),
        entry("m6", "jill", "tool", 61, role="user", substance="m3", content="[Jack]: pin [X]"),
    ]
    events = [
        _HookEvent("turn", 20, "review", "NoShouting", "reject"),
        _HookEvent("tool", 39, "transform", "Redact", "rewrite"),  # the caller's result: not a delivery
        _HookEvent("tool", 60, "transform", "Redact", "rewrite"),  # Jill's, not Bob's (before it)
        _HookEvent("nowhere", 5, "transform", "Lost", "rewrite"),
    ]
    previous = {"m2": "m1"}.get
    assert hook_marks(events, records, previous) == {
        "m1": [HookMark("rejected", "NoShouting", "m1", "jack")],
        "m6": [HookMark("rewritten", "Redact", "m6", "jill")],
    }
    assert hook_marks([], records, previous) == {}


def test_events_come_from_the_tree_when_there_is_no_journal(tmp_path):
    attrs = {sc.HOOK_KIND: "review", sc.HOOK_NAME: "R", sc.HOOK_DECISION: "reject", sc.HOOK_REASON: "no"}
    accepted = {**attrs, sc.HOOK_DECISION: "accept"}
    tree = {"id": "s", "runs": [{"span_id": "aaaaaaaaaaaaaaaa", "attributes": {}, "turns": [], "ops": [], "logs": [
        {"ts": 5, "event": sc.EVENT_HOOK, "level": "VRB", "message": "", "attributes": attrs},
        {"ts": 6, "event": sc.EVENT_HOOK, "level": "VRB", "message": "", "attributes": accepted},
    ]}]}
    assert hook_events(tree, None) == [_HookEvent("aaaaaaaaaaaaaaaa", 5, "review", "R", "reject")]
    assert hook_events(None, tmp_path / "tree.json.gz") == []  # neither journal nor tree: no marks
    assert hook_events(None, None) == []


def test_a_rejection_that_names_its_utterance_marks_that_one():
    # The transcript's order would point at m2; the event's cause says m1 was judged.
    records = [
        entry("m1", "jack", "chat", 10, role="assistant", content="HELLO!!!"),
        entry("m2", "jack", "turn", 15, role="user", source="external", content="meanwhile"),
        entry("m3", "jack", "turn", 21, role="user", source="system", content="Your answer was rejected"),
    ]
    event = _HookEvent("turn", 20, "review", "NoShouting", "reject", cause="m1")
    assert hook_marks([event], records, {"m3": "m2"}.get) == {"m1": [HookMark("rejected", "NoShouting", "m1", "jack")]}
    attrs = {sc.HOOK_KIND: "review", sc.HOOK_NAME: "R", sc.HOOK_DECISION: "reject", sc.HOOK_CAUSE: "m1"}
    tree = {"id": "s", "runs": [{"span_id": "aaaaaaaaaaaaaaaa", "attributes": {}, "turns": [], "ops": [], "logs": [
        {"ts": 5, "event": sc.EVENT_HOOK, "level": "VRB", "message": "", "attributes": attrs}]}]}
    assert hook_events(tree, None) == [_HookEvent("aaaaaaaaaaaaaaaa", 5, "review", "R", "reject", "m1")]


def test_an_utterance_a_failing_review_hook_could_not_judge_is_marked_not_delivered():
    records = [
        entry("m1", "jack", "chat", 10, role="assistant", content="HELLO"),
        entry("m2", "jack", "turn", 21, role="user", source="system", content="Your answer was not delivered: …"),
    ]
    failed = _HookEvent("turn", 20, "review", "Critic", "error", cause="m1")
    assert hook_marks([failed], records, {"m2": "m1"}.get) == {"m1": [HookMark("undelivered", "Critic", "m1", "jack")]}
    # Saved before the event named the utterance (and before the agent was told): nothing sure to mark.
    assert hook_marks([_HookEvent("turn", 20, "review", "Critic", "error")], records[:1], {}.get) == {}
    attrs = {sc.HOOK_KIND: "review", sc.HOOK_NAME: "Critic", sc.HOOK_DECISION: "error", sc.HOOK_CAUSE: "m1"}
    tree = {"id": "s", "runs": [{"span_id": "aaaaaaaaaaaaaaaa", "attributes": {}, "turns": [], "ops": [], "logs": [
        {"ts": 5, "event": sc.EVENT_HOOK, "level": "VRB", "message": "", "attributes": attrs}]}]}
    assert hook_events(tree, None) == [_HookEvent("aaaaaaaaaaaaaaaa", 5, "review", "Critic", "error", "m1")]
