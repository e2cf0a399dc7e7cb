"""``/api/sessions`` and ``/api/sessions/{id}``: the listing (as ``sessions list`` sees it) and one session's summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from otel_agents.persistence.ownership import owner_of
from otel_agents.persistence.listed import listed_sessions
from otel_agents.persistence.session_meta import effective_status
from otel_agents.persistence.timestamps import iso_ts
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import is_message_id
from otel_agents.ui.loaded import SessionCache, UiSession
from otel_agents.ui.security import ApiError, paging

STATUSES = ("new", "running", "ok", "failed", "interrupted")
SORTS = ("updated", "created", "cost", "tokens", "title")
# The store's statuses (session_meta.effective_status, tree_kinds) as the UI's four.
_UI_STATUS = {"new": "new", "ok": "ok", "running": "running", "in_progress": "running", "error": "failed",
              "interrupted": "interrupted", "cancelled": "interrupted", "incomplete": "interrupted"}


def ui_status(meta: Mapping[str, Any] | None, directory: Path) -> str:
    """``sessions list``'s status (a run left open without a writer is interrupted) in the UI's words."""
    if meta is None:
        return "failed"
    return _UI_STATUS.get(effective_status(meta, directory), "failed")


def _tokens(totals: Any) -> int | None:
    """None when unknown (no readable meta.json or tree): sorted last, not as the fewest."""
    if not isinstance(totals, Mapping):
        return None
    return sum(v for k in ("input_tokens", "output_tokens") if isinstance(v := totals.get(k), int))


def _cost(totals: Any) -> float | None:
    cost = totals.get("cost_usd") if isinstance(totals, Mapping) else None
    return cost if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def summary(session_id: str, directory: Path, meta: Mapping[str, Any] | None, problem: str | None) -> dict[str, Any]:
    meta = meta or {}
    status = ui_status(meta or None, directory)
    return {
        "id": session_id,
        "title": meta.get("title") if isinstance(meta.get("title"), str) else None,
        "status": status,
        "live": owner_of(directory) is not None,
        "created": meta.get("created") if isinstance(meta.get("created"), str) else None,
        "updated": meta.get("updated") if isinstance(meta.get("updated"), str) else None,
        "runs": _int(meta.get("runs")),
        "agents": _int(meta.get("agents")),
        "tokens": _tokens(meta.get("totals")),
        "cost_usd": _cost(meta.get("totals")),
        "problem": problem,
    }


def list_api(sessions_dir: Path, query: Mapping[str, str], cache: SessionCache | None = None) -> dict[str, Any]:
    """Each session as ``sessions list`` lists it (``listed.listed_sessions``); ``cache``: where the summary of
    one whose meta.json lags (killed, running, new) is read from, once per change of its files."""
    offset, limit = paging(query, 100)
    status = query.get("status") or None
    if status is not None and status not in STATUSES:
        raise ApiError(400, f"bad status {status[:40]!r}: one of {', '.join(STATUSES)}")
    sort = query.get("sort") or "updated"
    if sort not in SORTS:
        raise ApiError(400, f"bad sort {sort[:40]!r}: one of {', '.join(SORTS)}")
    order = query.get("order") or ("asc" if sort == "title" else "desc")
    if order not in ("asc", "desc"):
        raise ApiError(400, f"bad order {order[:40]!r}: asc or desc")
    text = (query.get("q") or "").casefold()
    rows = [summary(s.session_id, s.directory, s.meta, s.problem)
            for s in listed_sessions(sessions_dir, cache.listed_meta if cache else None)]
    if text:
        rows = [r for r in rows if text in r["id"].casefold() or text in (r["title"] or "").casefold()]
    if status is not None:
        rows = [r for r in rows if r["status"] == status]
    field = {"cost": "cost_usd"}.get(sort, sort)
    # Missing values sort last either way; ties keep the id order.
    present = sorted((r for r in rows if r[field] is not None), key=lambda r: r["id"])
    present.sort(key=lambda r: r[field], reverse=order == "desc")
    rows = present + sorted((r for r in rows if r[field] is None), key=lambda r: r["id"])
    return {"total": len(rows), "offset": offset, "sessions": rows[offset:offset + limit]}


def jaeger_link(jaeger_url: str | None, trace_id: Any) -> str | None:
    if not jaeger_url or not isinstance(trace_id, str):
        return None
    return f"{jaeger_url.rstrip('/')}/trace/{trace_id}"


def _message_number(value: Any) -> int | None:
    return int(value[4:]) if isinstance(value, str) and is_message_id(value) else None


def _prompt(run: Mapping[str, Any]) -> str | None:
    """The run's first user message of its own: what started it.

    A fork's first run records the source's records up to the fork message again, with their original
    ids (docs/fork.md): those, numbered up to ``otel_agents.run.fork.message``, are not its prompt.
    """
    attributes = run.get("attributes") if isinstance(run.get("attributes"), Mapping) else {}
    inherited_up_to = _message_number(attributes.get(sc.RUN_FORK_MESSAGE))
    for event in run.get("events") or ():
        record = event.get("record") if isinstance(event, Mapping) else None
        if not (isinstance(record, Mapping) and record.get("role") == "user" and isinstance(record.get("content"), str)):
            continue
        number = _message_number(record.get("message_id"))
        if inherited_up_to is not None and number is not None and number <= inherited_up_to:
            continue
        return record["content"]
    return None


def _forked_from(meta: Mapping[str, Any] | None) -> dict[str, str] | None:
    """meta.json's ``forked_from`` (``{"session", "message"}``), as ``sessions list`` shows it; None if not a fork."""
    source = (meta or {}).get("forked_from")
    if not isinstance(source, Mapping) or not isinstance(source.get("session"), str):
        return None
    message = source.get("message")
    return {"session": source["session"], "message": message if isinstance(message, str) else None}


def _iso(ns: Any) -> str | None:
    return iso_ts(ns) if isinstance(ns, int) and not isinstance(ns, bool) else None


def detail_api(session: UiSession, jaeger_url: str | None) -> dict[str, Any]:
    tree = session.tree or {}
    base = summary(session.session_id, session.directory, session.meta, None)
    agents = tree.get("agents") if isinstance(tree.get("agents"), Mapping) else {}
    runs = []
    for run in tree.get("runs") or ():
        runs.append({
            "index": run.get("index"),
            "trace_id": run.get("trace_id"),
            "span_id": run.get("span_id"),
            "prompt": _prompt(run),
            "status": session.index.row(run["span_id"])["status"] if run.get("span_id") in session.index.entries
            else None,
            "started": _iso(run.get("started_ns")),
            "ended": _iso(run.get("ended_ns")),
            "jaeger_url": jaeger_link(jaeger_url, run.get("trace_id")),
        })
    # The row's totals (meta.json as listed): a tree read from damaged streams lacks what was billed (its notes say so).
    inclusive = (tree.get("totals") or {}).get("inclusive") if isinstance(tree.get("totals"), Mapping) else None
    listed = (session.meta or {}).get("totals")
    totals = listed if isinstance(listed, Mapping) else inclusive
    return {
        "id": session.session_id,
        "title": base["title"],
        "status": base["status"],
        "live": base["live"],
        "created": base["created"],
        "updated": base["updated"],
        "start_ms_epoch": session.index.start_ns // 1_000_000,
        "runs": runs,
        "agents": [
            {"id": agent_id, "name": info.get("name"), "path": info.get("call_path"),
             "color": session.index.colors.get(agent_id, 0)}
            for agent_id, info in agents.items() if isinstance(info, Mapping)
        ],
        "agent_count": base["agents"] if base["agents"] is not None else len(agents),
        "totals": {"tokens": _tokens(totals), "cost_usd": _cost(totals)},
        "node_count": len(session.index.entries),
        "forked_from": _forked_from(session.meta),
        # Where /live may start (?cursor=) to miss nothing written after this load began.
        "cursor": session.cursor,
        "notes": list(session.notes),
    }


