"""Checks of agents' transcripts that several test files share."""

from __future__ import annotations


def assert_provider_valid(transcript: list[dict]) -> None:
    """Every assistant message that calls tools is followed at once by one result per call."""
    for i, message in enumerate(transcript):
        calls = [c["id"] for c in message.get("tool_calls") or []]
        if calls:
            following = transcript[i + 1: i + 1 + len(calls)]
            assert [m.get("role") for m in following] == ["tool"] * len(calls), transcript
            assert sorted(m["tool_call_id"] for m in following) == sorted(calls), transcript
