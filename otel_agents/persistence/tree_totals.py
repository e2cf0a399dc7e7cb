"""Totals of a session tree's accounting entries: folded as the runtime folds them, per session and per agent."""

from __future__ import annotations

from operator import itemgetter
from typing import Any, Iterable, Mapping

from otel_agents.persistence.tree_kinds import KIND_LLM, KIND_TOOL
from otel_agents.persistence.tree_walk import child_sessions, iter_ops, ops_of_session
from otel_agents.tracing import semconv as sc

COST_DECIMALS = 12  # as the runtime's accounting rounds (llm/pricing.py)


def empty_totals() -> dict[str, int | float]:
    totals: dict[str, int | float] = {key: 0 for key in sc.TOTAL_KEYS}
    totals["cost_usd"] = 0.0
    return totals


def session_entries(runs: Iterable[Mapping[str, Any]], ops: Iterable[Mapping[str, Any]]) -> list[dict]:
    """Every accounting entry of a session's runs and operations, sub-agents included (its inclusive totals)."""
    return entries_under([*runs, *ops], cross_sessions=True)


def fold_totals(
    entries: Iterable[Mapping[str, Any]], start: Mapping[str, int | float] | None = None
) -> dict[str, int | float]:
    """Totals as the runtime keeps them (llm/accounting.py), in completion order.

    ``start``: the totals of entries that all completed before these (folding on from
    them is the same fold as over all the entries at once).
    """
    totals = dict(start) if start is not None else empty_totals()
    ordered = sorted(entries, key=_completion)
    # Counts and token sums do not depend on the order (integers): summed in C. Only the
    # rounded cost is a fold, as the runtime's. (Deep trees fold long lists many times.)
    llm = [entry for entry in ordered if entry["type"] != KIND_TOOL]
    totals["tool_calls"] += len(ordered) - len(llm)
    tokens = [entry["tokens"] for entry in llm]
    for total_key, token_key in _TOKEN_TOTALS:
        totals[total_key] += sum([t[token_key] for t in tokens])
    totals["llm_calls"] += len(llm)
    totals["unpriced_calls"] += sum([1 for entry in llm if entry["cost_usd"] is None and entry["status"] == "ok"])
    cost = totals["cost_usd"]
    for entry in llm:
        if entry["cost_usd"] is not None:
            cost = round(cost + entry["cost_usd"], COST_DECIMALS)
    totals["cost_usd"] = cost
    return totals


def unfinished_llm_calls(tree: Mapping[str, Any]) -> int:
    """LLM attempts of the tree's runs that never completed (cancelled, interrupted): no accounting
    entry, so not in the totals, yet each was requested and the ledger bills it (ledger_records.py)."""
    return sum(1 for ref in iter_ops(tree)
               if ref.run is not None and ref.op["kind"] == KIND_LLM and not ref.op.get("accounting"))


def unfinished_llm_calls_by_agent(tree: Mapping[str, Any]) -> dict[str, int]:
    """Per agent id, the unfinished LLM attempts (as :func:`unfinished_llm_calls` counts them) of its
    invocations, its sub-agents' included: what each agent's limits count, as the inclusive totals do."""
    counts: dict[str, int] = {}
    work = [(run, frozenset()) for run in reversed(tree.get("runs", []))]
    while work:
        node, open_agents = work.pop()
        inner = open_agents | {node.get("agent_id") or "?"}
        ops = list(ops_of_session(node))
        cut = sum(1 for op in ops if op["kind"] == KIND_LLM and not op.get("accounting"))
        for agent in inner if cut else ():  # an agent nested in itself counts them once
            counts[agent] = counts.get(agent, 0) + cut
        work.extend((op["session"], inner) for op in reversed(ops) if op.get("session") is not None)
    return counts


def spent_by_agent(tree: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each agent's inclusive totals with its unfinished LLM attempts in ``llm_calls``: what its limits count
    (resume, and a replay from a later run), as the ledger bills those attempts."""
    spent = {agent: dict(totals["inclusive"]) for agent, totals in agent_totals(tree).items()}
    for agent, unfinished in unfinished_llm_calls_by_agent(tree).items():
        spent.setdefault(agent, empty_totals())["llm_calls"] += unfinished
    return spent


_TOKEN_TOTALS = (
    ("input_tokens", "input"), ("output_tokens", "output"), ("cache_read_tokens", "cache_read"),
    ("cache_write_tokens", "cache_write"), ("reasoning_tokens", "reasoning"),
)


def _completion(entry: Mapping[str, Any]) -> int:
    return entry.get("ts") or 0


def entries_under(nodes: Iterable[Mapping[str, Any]], cross_sessions: bool) -> list[dict]:
    """Accounting entries of these nodes and of every node under them, in tree order
    (a node's own, its ops', its turns', then its sub-agent's session's if ``cross_sessions``)."""
    out: list[dict] = []
    stack = list(nodes)
    stack.reverse()
    while stack:
        node = stack.pop()
        out += node.get("accounting") or ()
        if cross_sessions and node.get("session") is not None:
            stack.append(node["session"])
        stack.extend(reversed(node.get("turns", [])))
        stack.extend(reversed(node.get("ops", [])))
    return out


class Sums:
    """What a subtree's accounting entries fold to, kept so that a parent adds up its children's
    instead of folding every entry below it again (at depth thousands that was quadratic):
    the counts, which do not depend on the order, and the priced LLM entries' (completion
    time, cost) in tree order, whose rounded cost is folded in completion order as
    :func:`fold_totals` folds it, so the totals are exactly that function's."""

    __slots__ = ("counts", "priced")

    def __init__(self, entries: Iterable[Mapping[str, Any]] = ()):
        self.counts = [0] * len(_COUNT_KEYS)
        self.priced: list[tuple[int, float]] = []
        for entry in entries:
            if entry["type"] == KIND_TOOL:
                self.counts[_TOOL_CALLS] += 1
                continue
            tokens = entry["tokens"]
            for position, token_key in _TOKEN_POSITIONS:
                self.counts[position] += tokens[token_key]
            self.counts[_LLM_CALLS] += 1
            if entry["cost_usd"] is None:
                self.counts[_UNPRICED] += entry["status"] == "ok"
            else:
                self.priced.append((_completion(entry), entry["cost_usd"]))

    def add(self, other: "Sums") -> None:
        self.counts = [a + b for a, b in zip(self.counts, other.counts)]
        self.priced += other.priced

    def totals(self) -> dict[str, int | float]:
        totals = empty_totals()
        totals.update(zip(_COUNT_KEYS, self.counts))
        cost = 0.0
        for _, value in sorted(self.priced, key=_first):  # stable: ties stay in tree order, as fold_totals
            cost = round(cost + value, COST_DECIMALS)
        totals["cost_usd"] = cost
        return totals


_COUNT_KEYS = tuple(key for key in sc.TOTAL_KEYS if key != "cost_usd")
_TOOL_CALLS = _COUNT_KEYS.index("tool_calls")
_LLM_CALLS = _COUNT_KEYS.index("llm_calls")
_UNPRICED = _COUNT_KEYS.index("unpriced_calls")
_TOKEN_POSITIONS = tuple((_COUNT_KEYS.index(total_key), token_key) for total_key, token_key in _TOKEN_TOTALS)
_first = itemgetter(0)


def _session_entry_lists(tree: Mapping[str, Any]) -> dict[int, tuple[list[dict], list[dict]]]:
    """id(session-like node) -> (its own level's entries, all entries under it), in tree order,
    for every run and sub-agent session. Sessions are done innermost first, so each takes its
    sub-agents' lists whole instead of walking them again (no recursion, and no rewalk per level)."""
    sessions = [node for run in tree.get("runs", []) for node in (run, *child_sessions(run))]
    out: dict[int, tuple[list[dict], list[dict]]] = {}
    for node in reversed(sessions):  # every sub-agent session comes after its caller's
        own: list[dict] = []
        every: list[dict] = []
        stack: list[Any] = list(node.get("ops", []))
        for turn in node.get("turns", []):
            stack.extend(turn.get("ops", []))
        stack.reverse()
        while stack:
            op = stack.pop()
            if type(op) is tuple:  # (sub-agent session,): its entries, once its caller's nested ops are in
                every += out[id(op[0])][1]
                continue
            accounting = op.get("accounting") or ()
            own += accounting
            every += accounting
            if op.get("session") is not None:
                stack.append((op["session"],))
            stack.extend(reversed(op.get("ops", [])))
        out[id(node)] = (own, every)
    return out


def agent_totals(tree: Mapping[str, Any]) -> dict[str, dict[str, dict[str, int | float]]]:
    """Per agent id: ``self`` (its own LLM attempts and tool calls) and ``inclusive``
    (plus everything its invocations caused), each attempt counted once per agent."""
    per_self: dict[str, list] = {}
    per_all: dict[str, list] = {}

    lists = _session_entry_lists(tree)
    # (session node, the agents whose invocations enclose it), depth first in tree order
    work = [(run, frozenset()) for run in reversed(tree.get("runs", []))]
    while work:
        node, open_agents = work.pop()
        agent = node.get("agent_id") or "?"
        own, every = lists[id(node)]
        per_self.setdefault(agent, []).extend(own)
        if agent not in open_agents:  # an agent nested in itself is not counted twice
            per_all.setdefault(agent, []).extend(every)
        inner = open_agents if agent in open_agents else open_agents | {agent}
        work.extend((op["session"], inner) for op in reversed(list(ops_of_session(node))) if op.get("session") is not None)
    return {
        agent: {"self": fold_totals(per_self.get(agent, [])), "inclusive": fold_totals(per_all.get(agent, []))}
        for agent in per_self
    }
