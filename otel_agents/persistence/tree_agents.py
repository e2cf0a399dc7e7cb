"""Agents known only by their spans (another instrumentation's trace, which has no agent_created records).

Our own agents carry ``otel_agents.agent.id`` and are listed from their agent_created records
(a resumed run's tree holds none: its agents were created by an earlier run), so they are skipped.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from otel_agents.persistence.tree_walk import ops_of_session
from otel_agents.tracing import semconv as sc


def agent_key(session: Mapping[str, Any]) -> str | None:
    """How a span-only agent is named in the agents table: its id, else its name."""
    return session.get("agent_id") or session.get("agent_name")


def agents_of_spans(tree: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One entry per agent met in the tree's sessions, first met first; parent is the enclosing agent's key."""
    agents: dict[str, dict[str, Any]] = {}
    for node, parent in _sessions_with_parent(tree):
        key = agent_key(node)
        if key is None or key in agents or sc.AGENT_ID in node["attributes"]:
            continue
        agents[key] = {
            "name": node.get("agent_name"),
            "model": node["attributes"].get(sc.GEN_AI_REQUEST_MODEL),
            "parent": parent,
            "cause": None,
            "created_message_id": None,
            "call_path": None,
            "tools": None,
        }
    return agents


def _sessions_with_parent(tree: Mapping[str, Any]) -> Iterator[tuple[dict[str, Any], str | None]]:
    """(session node, the key of the agent it sits in, None for a run), depth first, no recursion."""
    work = [(run, None) for run in reversed(tree.get("runs", []))]
    while work:
        session, outer = work.pop()
        yield session, outer
        inner = [op["session"] for op in ops_of_session(session) if op.get("session") is not None]
        work.extend((child, agent_key(session)) for child in reversed(inner))
