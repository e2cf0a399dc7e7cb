"""tree.json.gz that decodes but is not shaped as build_tree makes it: refused at load, naming the place."""

from __future__ import annotations

import copy

import pytest

from otel_agents.persistence.store import SessionStore, StoreError, make_payload
from otel_agents.persistence.tree import assemble_session
from otel_agents.persistence.tree_shape import ShapeError, check_session_shape


@pytest.fixture(scope="module")
def demo_tree(tmp_path_factory):
    """A real two-run demo tree, recorded once for the module."""
    mp = pytest.MonkeyPatch()
    home = tmp_path_factory.mktemp("shape") / "home"
    mp.setenv("OTEL_AGENTS_HOME", str(home))
    mp.setenv("OTEL_TRACES_EXPORTER", "none")
    try:
        from click.testing import CliRunner

        from otel_agents.cli import cli

        result = CliRunner().invoke(cli, ["run", "Create Jack and Jill for a cafe discussion", "More?"])
        assert result.exit_code == 0, result.stderr
    finally:
        mp.undo()
    (directory,) = (home / "sessions").iterdir()
    return SessionStore(directory).load_tree()


def test_trees_build_tree_makes_pass(demo_tree):
    check_session_shape(demo_tree)
    check_session_shape(assemble_session("empty", [], []))
    check_session_shape({"id": "minimal", "runs": []})  # nothing in it to index


def _first_op(tree):
    return tree["runs"][0]["turns"][0]["ops"][0]


def _first_tool(tree):
    from otel_agents.persistence.tree_walk import iter_ops

    return next(ref.op for ref in iter_ops(tree) if ref.op["kind"] == "tool" and ref.op["accounting"])


DAMAGE = {
    "runs is an object": (lambda t: t.__setitem__("runs", {"a": 1}), "session.runs: expected a list"),
    "no totals": (lambda t: t.pop("totals"), "session.totals: expected an object"),
    "a total is text": (lambda t: t["totals"]["self"].__setitem__("cost_usd", "1"),
                        "session.totals.self.cost_usd: expected a number"),
    "an event without ts": (lambda t: t["runs"][0]["events"][0].pop("ts"),
                            "session.runs[0].events[0]: a record event needs an integer ts"),
    "a record's message id is a list": (lambda t: t["runs"][0]["events"][0]["record"].__setitem__("message_id", []),
                                        "session.runs[0].events[0].record.message_id: expected msg_<digits>"),
    "a record's message id is empty": (lambda t: t["runs"][0]["events"][0]["record"].__setitem__("message_id", ""),
                                       "session.runs[0].events[0].record.message_id: expected msg_<digits>"),
    "an op without kind": (lambda t: _first_op(t).pop("kind"), "session.runs[0].turns[0].ops[0].kind: expected one of"),
    "a turn's ops is text": (lambda t: t["runs"][0]["turns"][1].__setitem__("ops", "x"),
                             "session.runs[0].turns[1].ops: expected a list"),
    "tokens are text": (lambda t: _first_op(t)["accounting"][0]["tokens"].__setitem__("input", "12"),
                        "session.runs[0].turns[0].ops[0].accounting[0].tokens.input: expected an integer"),
    "an entry's type is a list": (lambda t: _first_op(t)["accounting"][0].__setitem__("type", ["llm"]),
                                  "session.runs[0].turns[0].ops[0].accounting[0]: expected an llm or tool entry"),
    "an op's kind is a list": (lambda t: _first_op(t).__setitem__("kind", ["llm"]),
                               "session.runs[0].turns[0].ops[0].kind: expected one of"),
    "an attempt without its cost": (lambda t: _first_op(t)["accounting"][0].pop("cost_usd"),
                                    "session.runs[0].turns[0].ops[0].accounting[0].cost_usd: missing"),
    "a tool call without its name": (lambda t: _first_tool(t)["accounting"][0].pop("tool"), ".accounting[0].tool: missing"),
    "a run without its end": (lambda t: t["runs"][0].pop("ended_ns"), "session.runs[0].ended_ns: expected an integer or null"),
    "span events are a number": (lambda t: t["runs"][0].__setitem__("span_events", 5),
                                 "session.runs[0].span_events: expected a list"),
    "a run without index": (lambda t: t["runs"][1].pop("index"), "session.runs[1].index: expected an integer"),
    "a log line without message": (lambda t: next(n for n in t["runs"][0]["turns"] if n["logs"])["logs"][0].pop("message"),
                                   "a log line needs a string level and message"),
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_damage_is_named_in_one_line(demo_tree, tmp_path, case):
    damage, where = DAMAGE[case]
    tree = copy.deepcopy(demo_tree)
    damage(tree)
    with pytest.raises(ShapeError, match=where.replace("[", r"\[").replace("]", r"\]")):
        check_session_shape(tree)
    store = SessionStore.create(tmp_path / "sessions", "s-1")
    store.save_tree(make_payload(tree, {}))
    with pytest.raises(StoreError) as raised:
        store.load_tree()
    message = str(raised.value)
    assert message.startswith(f"{store.tree_path} is damaged: ") and "\n" not in message
