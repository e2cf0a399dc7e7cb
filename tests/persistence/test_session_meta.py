"""meta.json's contents: the title, and a summary plus one run equal to the summary of both."""

from __future__ import annotations

from otel_agents.persistence.session_meta import make_meta, meta_after_run, title_of
from otel_agents.persistence.tree import assemble_session


def test_title_is_the_first_user_prompt_shortened():
    run = {"events": [{"ts": 1, "record": {"event_type": "transcript_entry", "role": "system", "content": "sys"}},
                      {"ts": 2, "record": {"event_type": "transcript_entry", "role": "user",
                                           "content": "word " * 40}}]}
    title = title_of({"runs": [run]})
    assert title.startswith("word word") and len(title) == 80 and title.endswith("…")
    assert title_of({"runs": []}) is None


def test_a_summary_plus_one_run_is_the_summary_of_both(record):
    recorded = record(prompts=["Create Jack and Jill for a cafe discussion", "And then?"])
    tree = recorded.store.load_tree()
    first, second = tree["runs"]

    def summary(runs):
        return make_meta(assemble_session(tree["id"], runs, []), created_ns=1, updated_ns=2)

    settled = summary([first])
    assert meta_after_run(settled, assemble_session(tree["id"], [second], [])) == summary([first, second])
    assert summary([first, second])["totals"] == tree["totals"]["inclusive"]
    # What it cannot be sure of is left to a summary of the whole tree:
    both = assemble_session(tree["id"], [first, second], [])
    assert meta_after_run(settled, both) is None  # not one run
    with_op = dict(assemble_session(tree["id"], [second], []), ops=[{"span_id": "x"}])
    assert meta_after_run(settled, with_op) is None  # an operation outside runs
    assert meta_after_run(dict(settled, runs=3), assemble_session(tree["id"], [second], [])) is None  # index
    partial = dict(settled, totals={k: v for k, v in settled["totals"].items() if k != "cost_usd"})
    assert meta_after_run(partial, assemble_session(tree["id"], [second], [])) is None


def test_llm_attempts_that_never_completed_are_counted_apart_from_the_totals(record):
    """A cancelled or interrupted attempt has no accounting, so the totals leave it out; meta.json counts
    it as ``unfinished_llm_calls`` for a resume's call limit, and only when there is one."""
    import copy

    from otel_agents.persistence.tree_totals import unfinished_llm_calls
    from otel_agents.persistence.tree_walk import iter_ops

    recorded = record(prompts=["Create Jack and Jill for a cafe discussion", "And then?"])
    tree = recorded.store.load_tree()
    first, second = tree["runs"]
    assert "unfinished_llm_calls" not in make_meta(tree, created_ns=1, updated_ns=2)
    second = copy.deepcopy(second)
    cut = next(ref.op for ref in iter_ops({"runs": [second]}) if ref.op["kind"] == "llm")
    cut.update(accounting=[], status="cancelled")

    def summary(runs):
        return make_meta(assemble_session(tree["id"], runs, []), created_ns=1, updated_ns=2)

    whole = summary([first, second])
    assert whole["unfinished_llm_calls"] == 1 == unfinished_llm_calls({"runs": [first, second]})
    assert meta_after_run(summary([first]), assemble_session(tree["id"], [second], [])) == whole
    assert whole["totals"]["llm_calls"] == summary([first])["totals"]["llm_calls"] + sum(
        1 for ref in iter_ops({"runs": [second]}) if ref.op["kind"] == "llm") - 1


def test_the_hooks_of_every_run_are_summed_up_only_when_every_run_names_them(record):
    """meta.json's ``hooks`` is what a resume warns from without reading the journal; a run that
    does not name its hooks (an older or imported one) leaves it out, so the decisions are searched."""
    import copy

    from otel_agents.tracing import semconv as sc

    recorded = record(prompts=["Create Jack and Jill for a cafe discussion", "And then?"])
    tree = recorded.store.load_tree()
    first, second = (copy.deepcopy(run) for run in tree["runs"])
    assert first["attributes"][sc.RUN_HOOKS] == ["ResourceMonitor"]  # the script's hook, installed by the run
    first["attributes"][sc.RUN_HOOKS] = ["guard"]
    second["attributes"][sc.RUN_HOOKS] = ["auditor", "guard"]

    def summary(runs):
        return make_meta(assemble_session(tree["id"], runs, []), created_ns=1, updated_ns=2)

    assert summary([first, second])["hooks"] == ["auditor", "guard"]
    assert meta_after_run(summary([first]), assemble_session(tree["id"], [second], [])) == summary([first, second])
    unnamed = copy.deepcopy(first)
    del unnamed["attributes"][sc.RUN_HOOKS]
    assert "hooks" not in summary([unnamed, second])
    assert "hooks" not in meta_after_run(summary([unnamed]), assemble_session(tree["id"], [second], []))
    damaged = dict(summary([first]), hooks="guard")
    assert "hooks" not in meta_after_run(damaged, assemble_session(tree["id"], [second], []))


def test_values_cut_in_transit_are_counted_by_a_summary_and_by_one_more_run(record):
    # A session collect builds run by run says as much as one built whole: resume reads it from meta.json.
    import copy

    from otel_agents.tracing import semconv as sc

    recorded = record(prompts=["Create Jack and Jill for a cafe discussion", "And then?"])
    tree = copy.deepcopy(recorded.store.load_tree())
    first, second = tree["runs"]
    first["attributes"][sc.EXPORT_TRUNCATED] = 2
    next(iter(second["turns"] or second["ops"]))["attributes"][sc.EXPORT_TRUNCATED] = 3

    def summary(runs):
        return make_meta(assemble_session(tree["id"], runs, []), created_ns=1, updated_ns=2)

    assert "truncated_values" not in make_meta(recorded.store.load_tree(), created_ns=1, updated_ns=2)
    assert summary([first])["truncated_values"] == 2
    assert summary([first, second])["truncated_values"] == 5
    assert meta_after_run(summary([first]), assemble_session(tree["id"], [second], [])) == summary([first, second])
