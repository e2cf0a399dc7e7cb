"""Path labels: labels and positions are inverse bijections, and node_at finds every operation by its label."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from otel_agents.persistence.tree_paths import label_of, node_at, position_of
from otel_agents.persistence.tree_walk import iter_ops
from otel_agents.tracing import semconv as sc

segments = st.tuples(st.integers(0, 40), st.lists(st.integers(1, 40), min_size=1, max_size=4)).map(
    lambda t: (t[0], *t[1])
)
positions = st.builds(
    lambda inner, last: tuple(inner) + (last,),
    st.lists(segments, max_size=4),
    st.one_of(segments, st.integers(1, 40).map(lambda t: (t,))),
)


@given(positions)
def test_label_and_position_are_inverse(position):
    label = label_of(position)
    assert position_of(label) == position
    assert label_of(position_of(label)) == label


@pytest.mark.parametrize(
    "label",
    ["", "0", "1.", ".1", "1--2", "01-1", "1-0", "1.2-1", "a-1", "1-2.0", "1-2\n", " 1-2", "-1-2", "1-2.3-01"],
)
def test_malformed_labels_are_rejected(label):
    with pytest.raises(ValueError):
        position_of(label)


def test_labels_are_distinct_for_distinct_positions():
    seen = {}
    for turn in range(0, 4):
        for a in range(1, 4):
            for b in range(0, 4):
                for c in range(0, 3):
                    position = ((turn, a) + ((b,) if b else ()),) + (((c, 1),) if c and b else ())
                    label = label_of(position)
                    assert seen.setdefault(label, position) == position


def test_three_level_labels_are_bijective_with_positions(record, scripts):
    recorded = record(scripts.three_levels())
    assert recorded.utterances == ["All three levels answered."]
    tree = recorded.recorder.tree()
    (run,) = tree["runs"]
    labels = [ref.label for ref in iter_ops(tree)]
    assert len(labels) == len(set(labels))
    for ref in iter_ops(tree):
        assert ref.op["path"] == ref.label
        assert node_at(run, position_of(ref.label)) is ref.op
    deepest = node_at(run, position_of("1-2-2.1-2-2.1-2-2.1-1"))
    assert deepest["kind"] == "llm"
    assert deepest["attributes"][sc.GEN_AI_AGENT_NAME] == "C"
    chain = [node_at(run, position_of(label))["session"]["call_path"] for label in
             ("1-2-2", "1-2-2.1-2-2", "1-2-2.1-2-2.1-2-2")]
    assert chain == ["main/A", "main/A/B", "main/A/B/C"]
    for turn_label in ("1", "1-2-2.1", "1-2-2.1-2-2.2"):
        assert node_at(run, position_of(turn_label))["kind"] == "turn"
    with pytest.raises(KeyError):
        node_at(run, position_of("1-9"))
    with pytest.raises(KeyError):
        node_at(run, position_of("1-1.1-1"))  # an llm op has no child session
