"""``sessions show``'s text: a session's runs, turns and operations as lines, with their status, tokens and cost."""

from __future__ import annotations

import shlex
from typing import Any, Mapping

from otel_agents.terminal_text import shown
from otel_agents.tracing import semconv as sc



def _money(cost: float | None) -> str:
    if cost is None:
        return "unpriced"
    if isinstance(cost, bool) or not isinstance(cost, (int, float)):
        return "?"  # a hand-edited meta.json: the listing still lists
    from otel_agents.cli.console import dollars

    return dollars(cost)


def _total_cost(totals: Mapping[str, Any]) -> str:
    from otel_agents.cli.console import total_cost

    return total_cost(totals.get("cost_usd"), totals.get("unpriced_calls"), totals.get("llm_calls"))


def count_text(value: Any) -> str:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else "?"


def _duration(node: Mapping[str, Any]) -> str:
    start, end = node.get("started_ns"), node.get("ended_ns")
    if start is None or end is None:
        return "…"
    ms = (end - start) / 1e6
    return f"{ms:.0f}ms" if ms < 1000 else f"{ms / 1000:.2f}s"


def _tokens(totals: Mapping[str, Any]) -> str:
    parts = [f"in {totals['input_tokens']}", f"out {totals['output_tokens']}"]
    if totals.get("cache_read_tokens"):
        parts.append(f"cache {totals['cache_read_tokens']}")
    if totals.get("reasoning_tokens"):
        parts.append(f"reasoning {totals['reasoning_tokens']}")
    cost = totals["cost_usd"]
    money = _money(cost) if totals["llm_calls"] else ""
    if totals.get("unpriced_calls"):
        money += f" (+{totals['unpriced_calls']} unpriced)"
    return " ".join(parts) + (f"  {money}" if money else "")


def _op_detail(op: Mapping[str, Any]) -> str:
    kind = op["kind"]
    if kind == "session":
        child = op["session"]
        inclusive = child["totals"]["inclusive"]
        return f"session {child.get('agent_name')} ({child.get('agent_id')}) {child.get('call_path') or ''}  ".rstrip() + (
            f"  inclusive {_tokens(inclusive)}" if inclusive["llm_calls"] else ""
        )
    if kind == "llm":
        entry = op["accounting"][0] if op["accounting"] else None
        model = op["attributes"].get("otel_agents.llm.model") or op["attributes"].get("gen_ai.request.model") or op["name"]
        attempt = op["attributes"].get("otel_agents.llm.attempt")
        text = f"llm {model}" + (f" attempt {attempt}" if attempt else "")
        # A failed attempt shows what it was billed (a reply without choices reports its usage), if anything.
        if entry is not None and (entry["status"] == "ok" or entry["tokens"]["total"] or entry["cost_usd"]):
            tokens = entry["tokens"]
            text += f"  in {tokens['input']} out {tokens['output']}  {_money(entry['cost_usd'])}"
        return text
    if kind == "tool":
        entry = op["accounting"][0] if op["accounting"] else None
        tool = op["attributes"].get("gen_ai.tool.name") or op["name"]
        text = f"tool {tool}"
        if entry is not None:
            text += f"  chars in {entry['chars_in']} out {entry['chars_out']}"
        return text
    return op["name"] if kind == "create_agent" else f"{kind} {op['name']}"


def _status(node: Mapping[str, Any]) -> str:
    return str(node.get("status") or "?")


# Past this many levels lines stop moving right (the path label still says where a line is):
# a chain of a thousand sub-agents would otherwise print megabytes of spaces.
MAX_INDENT = 40


def _span_id(node: Mapping[str, Any], ids: bool) -> str:
    return f"  span {node.get('span_id')}" if ids else ""


def _budget_mark(turn: Mapping[str, Any]) -> str:
    """Where a budget stopped the run: the turn whose LLM attempt was not made (docs/budgets.md)."""
    for event in turn.get("span_events") or ():
        if event.get("name") == sc.EVENT_BUDGET_EXHAUSTED:
            attrs = event.get("attributes") or {}
            return f"  BUDGET EXHAUSTED for {attrs.get(sc.BUDGET_OWNER)}: {attrs.get(sc.BUDGET_DETAIL)}"
    return ""


def _rejection_mark(turn: Mapping[str, Any]) -> str:
    """A turn whose answer a review hook rejected, marked as a denied tool call is by its error."""
    from otel_agents.cli.console import one_line

    marks = [f"  — answer rejected by hook {attrs.get(sc.HOOK_NAME)!r}: {one_line(str(attrs.get(sc.HOOK_REASON) or ''))}"
             for log in turn.get("logs") or () if log.get("event") == sc.EVENT_HOOK
             for attrs in [log.get("attributes") or {}] if attrs.get(sc.HOOK_DECISION) == "reject"]
    return "".join(marks)


def _session_lines(node: Mapping[str, Any], indent: int, ids: bool = False) -> list[str]:
    """The lines of a session's turns and operations, sub-agents' sessions nested, with a
    stack instead of recursion (a chain of sub-agents can be thousands deep)."""
    from otel_agents.cli.console import one_line

    lines: list[str] = []
    # ("op", op, indent) or ("session", node, indent), in the order they are printed
    work: list[tuple[str, Mapping[str, Any], int]] = [("session", node, indent)]
    while work:
        what, item, level = work.pop()
        pad = "  " * min(level, MAX_INDENT)
        if what == "op":
            label = item.get("path") or "?"
            line = f"{pad}{label:<14} {_status(item):<11} {_duration(item):>8}  {_op_detail(item)}"
            if item.get("error") and item["status"] != "ok":
                line += f"  — {one_line(item['error'])}"  # a traceback's lines would pose as tree rows
            lines.append(line + _span_id(item, ids))
            if item.get("session") is not None:
                work.append(("session", item["session"], level + 1))
            work.extend(("op", child, level + 1) for child in reversed(item.get("ops", [])))
            continue
        if what == "turn":
            lines.append(
                f"{pad}{item.get('path') or '?':<14} {_status(item):<11} {_duration(item):>8}  "
                f"turn {item.get('index')}  {_tokens(item['totals']['inclusive'])}" + _budget_mark(item)
                + _rejection_mark(item)
                + _span_id(item, ids)
            )
            continue
        pending: list[tuple[str, Mapping[str, Any], int]] = [("op", op, level) for op in item.get("ops", [])]
        for turn in item.get("turns", []):
            pending.append(("turn", turn, level))
            pending.extend(("op", op, level + 1) for op in turn.get("ops", []))
        work.extend(reversed(pending))
    return lines


def _ingress_lines(attributes: Mapping[str, Any]) -> list[str]:
    """Where a run came from (seed 002 ingress), from its root span; nothing for runs that carry none."""
    from otel_agents.tracing.ingress import ingress_of

    ingress = ingress_of(attributes)
    source = attributes.get(sc.RUN_SOURCE)
    if not ingress:  # Session.send without a source: an outside event all the same, as CLI send's
        return [f"  from {source}"] if source == "external" else []
    head = f"  from {source or '?'}" + (f" (sender {ingress['sender']})" if "sender" in ingress else "")
    if set(ingress) == {"sender"}:  # Session.send: a program's run says who sent the event, no process facts
        return [head]
    who = f"{ingress.get('user', '?')}@{ingress.get('host', '?')} pid {ingress.get('pid', '?')}"
    lines = [f"{head}: {who}, otel-agents {ingress.get('version', '?')}"]
    if "cwd" in ingress:
        lines.append(f"  cwd {shown(str(ingress['cwd']), lines=False)}")
    argv = ingress.get("argv")
    if isinstance(argv, (list, tuple)):  # one line, whatever line breaks a prompt in it holds
        lines.append("  argv " + shown(shlex.join(str(arg) for arg in argv), lines=False))
    return lines


def render_session(tree: Mapping[str, Any], meta: Mapping[str, Any] | None, ids: bool = False) -> list[str]:
    """``meta``: with its status as the reader sees it (``session_meta.effective_status``); ``ids``: span ids on every line."""
    from otel_agents.cli.console import one_line, saved_txn
    from otel_agents.persistence.tree_totals import agent_totals

    # No meta.json (killed before its first run wrote one): a tree of nothing is a new session, as listed.
    status = meta.get("status") if meta else (tree.get("status") if tree.get("runs") or tree.get("ops") else "new")
    title = (meta or {}).get("title")
    lines = [f"session {tree.get('id')}  {status}" + (f"  {title!r}" if title else "")]
    if meta:
        lines.append(f"  created {meta.get('created')}  updated {meta.get('updated')}")
    lines.append(f"  {len(tree.get('runs', []))} run(s), {len(tree.get('agents', {}))} agent(s)  {_tokens(tree['totals']['inclusive'])}")
    txn = saved_txn(tree.get("runs") or [])
    if txn:
        lines.append(f"  console txn:{txn} (every run's stderr lines)")
    if tree.get("error") and status != "ok":  # a tree saved before it held the last run's only: no old run's error
        lines.append(f"  error: {one_line(tree['error'])}")
    for run in tree.get("runs", []):
        lines.append("")
        lines.append(
            f"run {run['index']}  {_status(run)}  {_duration(run)}  {run.get('agent_name')} ({run.get('agent_id')})  "
            f"{_tokens(run['totals']['inclusive'])}" + _span_id(run, ids)
        )
        if run.get("error"):
            lines.append(f"  error: {one_line(run['error'])}")
        lines.extend(_ingress_lines(run.get("attributes") or {}))
        api_base = (run.get("attributes") or {}).get(sc.RUN_API_BASE)
        if api_base:  # where its LLM calls went, and where a resume sends the next ones
            lines.append(f"  api base {api_base}")
        lines.extend(_session_lines(run, 1, ids))
    if tree.get("ops"):
        lines.append("")
        lines.append("outside any run")
        lines.extend(_session_lines({"ops": tree["ops"], "turns": []}, 1, ids))
    per_agent = agent_totals(tree)
    if per_agent:
        lines.append("")
        lines.append(f"{'AGENT':<11} {'NAME':<18} {'CALL PATH':<28} {'LLM':>4} {'TOOLS':>5} {'SELF':>11} {'INCLUSIVE':>11}")
        agents = tree.get("agents", {})
        for agent_id, totals in per_agent.items():
            info = agents.get(agent_id, {})
            own, inclusive = totals["self"], totals["inclusive"]
            lines.append(
                f"{agent_id:<11} {str(info.get('name') or '?'):<18} {str(info.get('call_path') or '?'):<28} "
                f"{own['llm_calls']:>4} {own['tool_calls']:>5} {_total_cost(own):>11} {_total_cost(inclusive):>11}"
            )
    return lines
