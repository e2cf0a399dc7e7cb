"""What a chat span carries once per trace (llm/once_per_trace.py)."""

from __future__ import annotations

from otel_agents.llm.once_per_trace import OncePerTrace


def test_a_key_is_first_once_per_trace_and_the_oldest_trace_is_forgotten():
    seen = OncePerTrace()
    assert seen.first(1, "tools_a") and not seen.first(1, "tools_a")
    assert seen.first(1, "tools_b") and seen.first(2, "tools_a")  # each trace holds its own copy
    for trace_id in range(3, 18):  # 16 traces remembered: trace 1 is forgotten, trace 2 not yet
        seen.first(trace_id, "tools_a")
    assert seen.first(1, "tools_a") and not seen.first(17, "tools_a")
