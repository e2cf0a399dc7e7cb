"""Totals: folding on from earlier totals, the builder's running sums and per-agent totals agree with one fold."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from otel_agents.persistence.tree_totals import (
    Sums, agent_totals, empty_totals, entries_under, fold_totals, session_entries, unfinished_llm_calls,
    unfinished_llm_calls_by_agent,
)
from otel_agents.tracing import semconv as sc

tokens = st.fixed_dictionaries(
    {key: st.integers(0, 10_000) for key in ("input", "output", "cache_read", "cache_write", "reasoning")}
)
llm_entries = st.fixed_dictionaries(
    {
        "type": st.just("llm"),
        "status": st.sampled_from(["ok", "failed"]),
        "ts": st.integers(0, 50),
        "tokens": tokens,
        "cost_usd": st.one_of(st.none(), st.floats(0, 2, allow_nan=False, allow_infinity=False)),
    }
)
tool_entries = st.fixed_dictionaries(
    {"type": st.just("tool"), "status": st.sampled_from(["ok", "failed"]), "ts": st.integers(0, 50)}
)
entry_lists = st.lists(st.one_of(llm_entries, tool_entries), max_size=30)


@given(entry_lists, st.integers(0, 30))
def test_folding_on_from_earlier_totals_is_one_fold_over_all(entries, cut):
    ordered = sorted(entries, key=lambda e: e["ts"])
    earlier, later = ordered[:cut], ordered[cut:]
    assert fold_totals(later, start=fold_totals(earlier)) == fold_totals(ordered)


@given(entry_lists, entry_lists)
def test_running_sums_total_exactly_as_fold_totals(first, second):
    sums = Sums(first)
    sums.add(Sums(second))
    assert sums.totals() == fold_totals(first + second)
    assert Sums().totals() == empty_totals()


def _llm(ts, cost, status="ok", n=1):
    return {"type": "llm", "status": status, "ts": ts, "cost_usd": cost,
            "tokens": dict.fromkeys(("input", "output", "cache_read", "cache_write", "reasoning"), n)}


def test_fold_counts_calls_tokens_and_unpriced_attempts():
    entries = [_llm(2, None), _llm(1, None, status="failed", n=2), {"type": "tool", "status": "ok", "ts": 3}]
    totals = fold_totals(entries)
    assert (totals["llm_calls"], totals["tool_calls"], totals["unpriced_calls"]) == (2, 1, 1)
    assert totals["input_tokens"] == 3 and totals["reasoning_tokens"] == 3 and totals["cost_usd"] == 0.0


def _op(*entries, session=None):
    return {"accounting": list(entries), "ops": [], "session": session}


def _session(agent_id, *ops):
    return {"agent_id": agent_id, "ops": list(ops), "turns": []}


def test_session_entries_cross_into_sub_agents_and_own_level_entries_do_not():
    inner = _session("B", _op(_llm(2, 0.5)))
    run = _session("A", _op(_llm(1, 0.25)), _op(session=inner))
    assert [e["ts"] for e in session_entries([run], [])] == [1, 2]
    assert [e["ts"] for e in entries_under([run], cross_sessions=False)] == [1]


def test_an_agent_nested_in_itself_is_counted_once_inclusively():
    # A calls B, B calls A again: A's inclusive totals hold each attempt once.
    again = _session("A", _op(_llm(3, 0.125)))
    middle = _session("B", _op(_llm(2, 0.5)), _op(session=again))
    run = _session("A", _op(_llm(1, 0.25)), _op(session=middle))
    totals = agent_totals({"runs": [run]})
    assert totals["A"]["self"]["llm_calls"] == 2 and totals["A"]["inclusive"]["llm_calls"] == 3
    assert totals["A"]["inclusive"]["cost_usd"] == 0.875
    assert totals["B"]["self"]["llm_calls"] == 1 and totals["B"]["inclusive"]["llm_calls"] == 2


def test_unfinished_attempts_count_for_the_agent_and_every_agent_whose_invocation_encloses_them():
    # A calls B (one attempt cut off), B calls A again (one cut off): each counts once per agent, as the totals do.
    cut = {"kind": "llm", "accounting": [], "ops": [], "session": None}
    done = {"kind": "llm", "accounting": [_llm(1, 0.25)], "ops": [], "session": None}
    again = _session("A", dict(cut))
    middle = _session("B", dict(cut), {"kind": "tool", "accounting": [], "ops": [], "session": again})
    run = {**_session("A", dict(done), {"kind": "tool", "accounting": [], "ops": [], "session": middle}),
           "trace_id": "t"}
    tree = {"runs": [run]}
    assert unfinished_llm_calls_by_agent(tree) == {"A": 2, "B": 2}
    assert unfinished_llm_calls_by_agent(tree)["A"] == unfinished_llm_calls(tree)  # the root's are the session's


def test_the_root_agents_totals_are_its_runs_totals(record):
    tree = record().recorder.tree()
    (run,) = tree["runs"]
    per_agent = agent_totals(tree)
    assert set(per_agent) == set(tree["agents"])
    assert per_agent[run["agent_id"]]["inclusive"] == run["totals"]["inclusive"]
    assert per_agent[run["agent_id"]]["self"] == run["totals"]["self"]
    assert sum(t["self"]["llm_calls"] for t in per_agent.values()) == tree["totals"]["inclusive"]["llm_calls"]
    assert set(tree["totals"]["inclusive"]) == set(sc.TOTAL_KEYS)


def test_what_each_agent_spent_counts_its_cut_off_attempts_in_its_llm_calls():
    from otel_agents.persistence.tree_totals import spent_by_agent

    cut = {"kind": "llm", "accounting": [], "ops": [], "session": None}
    done = {"kind": "llm", "accounting": [_llm(1, 0.25)], "ops": [], "session": None}
    inner = _session("B", dict(cut))
    run = {**_session("A", dict(done), {"kind": "tool", "accounting": [], "ops": [], "session": inner}), "trace_id": "t"}
    tree = {"runs": [run]}
    spent = spent_by_agent(tree)
    totals = agent_totals(tree)
    assert spent["A"]["llm_calls"] == totals["A"]["inclusive"]["llm_calls"] + 1
    assert spent["B"]["llm_calls"] == totals.get("B", {"inclusive": {"llm_calls": 0}})["inclusive"]["llm_calls"] + 1
    assert spent["A"]["cost_usd"] == totals["A"]["inclusive"]["cost_usd"]  # an unfinished attempt's cost is unknown
