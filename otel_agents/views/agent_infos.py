"""Who the agents of a session are: names (shared ones shown with their id), parents, roles and paths."""

from __future__ import annotations

from collections import Counter

from otel_agents.views.index import SessionIndex
from otel_agents.views.model import AgentInfo


def agent_infos(index: SessionIndex) -> dict[str, AgentInfo]:
    """Each agent's id, names, parent, role, model and path, in order of appearance."""
    names = {a: (index.created.get(a) or {}).get("name") for a in index.agent_order}
    counts = Counter(n for n in names.values() if n)
    display = {
        a: (n if counts[n] == 1 else f"{n} ({a})") if n else a for a, n in names.items()
    }
    parents = {a: index.parent_agent(a) for a in index.agent_order}
    infos = {}
    for agent_id in index.agent_order:
        created = index.created.get(agent_id)
        path, seen, cursor = [], set(), agent_id
        while cursor is not None and cursor not in seen:  # a bad parent loop must not hang
            seen.add(cursor)
            path.append(names.get(cursor) or cursor)
            cursor = parents.get(cursor)
        if created is None:
            role = "unregistered"
        else:
            role = "subagent" if parents[agent_id] or created.get("cause") else "root"
        infos[agent_id] = AgentInfo(
            agent_id=agent_id,
            name=names[agent_id],
            display_name=display[agent_id],
            parent=parents[agent_id],
            model=(created or {}).get("language_model"),
            role=role,
            path="/".join(reversed(path)),
            created_by=created["message_id"] if created else None,
            cause=created.get("cause") if created and isinstance(created.get("cause"), str) else None,
            system_prompt=index.system_prompt.get(agent_id),
            entries=index.entry_count[agent_id],
        )
    return infos
