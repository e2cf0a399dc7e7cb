"""Ledger records for the ledger tests (and the writer processes they start)."""

from __future__ import annotations


def llm(n: int, *, session="s1", agent="main", model="openai/gpt-4o", cost=0.001, status="ok", ts=None,
        tokens=(100, 20, 10, 0, 5)):
    inp, out, cr, cw, reasoning = tokens
    return {
        "record_id": f"{n:032x}:{n:016x}", "ts": ts or "2025-03-04T10:00:00.000000001Z", "session_id": session,
        "trace_id": f"{n:032x}", "span_id": f"{n:016x}", "run": 1, "path": "1.1", "agent_id": "agent_001",
        "agent_name": agent, "call_path": agent, "type": "llm", "status": status, "latency_ms": 12.5,
        "error": None if status == "ok" else "RateLimitError: slow down", "provider": "openai", "model": model,
        "response_model": model, "attempt": 1,
        "tokens": {"input": inp, "output": out, "cache_read": cr, "cache_write": cw, "reasoning": reasoning, "total": inp + out},
        "cost_usd": cost, "price_source": "litellm" if cost is not None else "unpriced",
    }


def tool(n: int, *, session="s1", agent="main", status="ok", ts=None):
    return {
        "record_id": f"{n:032x}:{n:016x}", "ts": ts or "2025-03-04T10:00:01.000000001Z", "session_id": session,
        "trace_id": f"{n:032x}", "span_id": f"{n:016x}", "run": 1, "path": "1.2", "agent_id": "agent_001",
        "agent_name": agent, "call_path": agent, "type": "tool", "status": status, "latency_ms": 3.0,
        "error": None, "tool": "task", "chars_in": 40, "chars_out": 400,
    }


def sample():
    return [
        llm(1, session="s1", agent="main", cost=0.1, ts="2025-03-01T10:00:00Z"),
        llm(2, session="s1", agent="Jack", cost=0.2, ts="2025-03-01T11:00:00Z"),
        llm(3, session="s1", agent="Jack", cost=None, ts="2025-03-02T11:00:00Z"),  # unpriced
        llm(4, session="s2", agent="main", model="anthropic/claude", cost=None, status="failed",
            tokens=(0, 0, 0, 0, 0), ts="2025-03-02T12:00:00Z"),  # failed, no cost: not "unpriced"
        tool(5, session="s2", agent="main", status="failed", ts="2025-03-02T12:00:01Z"),
        tool(6, session="s1", agent="Jack", ts="2025-03-01T11:00:01Z"),
    ]
