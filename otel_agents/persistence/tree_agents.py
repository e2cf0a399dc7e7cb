"""The session's agents table: agents from their agent_created records, and those known only by their spans.

Another instrumentation's trace has no agent_created records, so ``agents_of_spans`` names its
agents from their spans. It skips our own, which carry ``otel_agents.agent.id`` and are listed
from their records (a resumed run's tree holds none: an earlier run created its agents).
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from otel_agents.persistence.tree_walk import iter_nodes, iter_sessions, ops_of_session
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import message_id_number


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


def agents_table(runs: list[dict], ops: list[dict]) -> dict[str, dict[str, Any]]:
    """The session's ``agents``: every agent that was created, from its agent_created record and its spans."""
    tree = {"runs": runs, "ops": ops}
    created = [
        event["record"]
        for _, node in iter_nodes(tree)
        for event in node.get("events", [])
        if event["record"].get("event_type") == sc.EVENT_AGENT_CREATED
    ]
    created.sort(key=lambda record: message_id_number(record["message_id"]))  # stable: as sorting every record
    agents: dict[str, dict[str, Any]] = {}
    for record in created:
        agents[record["agent_id"]] = {
            "name": record.get("name"),
            "model": record.get("language_model"),
            "parent": record.get("parent"),
            "cause": record.get("cause"),
            "created_message_id": record["message_id"],
            "call_path": None,
            "tools": None,
        }
    for key, agent in agents_of_spans(tree).items():
        agents.setdefault(key, agent)
    for node in iter_sessions(tree):
        agent = agents.get(node.get("agent_id"))
        if agent is not None:
            agent["call_path"] = node.get("call_path") or agent["call_path"]
            tools = node["attributes"].get(sc.AGENT_TOOLS)
            if tools is not None:
                agent["tools"] = list(tools)
    return agents
