"""The model a resumed agent goes on with: --model, else off a model only its own process loads; a replay's never carried."""

from __future__ import annotations

import pytest

from otel_agents.restored_models import carried_model, continued_model


@pytest.mark.parametrize(
    ("saved", "override", "script_model", "expected"),
    [
        ("openai/gpt-4o", None, "scripted/demo", "openai/gpt-4o"),  # a real model stays
        ("scripted/old", None, "scripted/demo", "scripted/demo"),  # another script's: not loaded any more
        ("replay/20260101-000000-aaaaaa", None, "scripted/demo", "scripted/demo"),  # a replay's: only in the replay
        ("replay/20260101-000000-aaaaaa", None, None, "replay/20260101-000000-aaaaaa"),  # nothing to move to
        ("openai/gpt-4o", "scripted/demo", "scripted/demo", "scripted/demo"),  # --model moves every agent
    ],
)
def test_continued_model(saved, override, script_model, expected):
    assert continued_model(saved, override, script_model) == expected


def test_a_replay_s_model_is_not_carried_and_any_other_is():
    assert carried_model("replay/20260101-000000-aaaaaa") is None
    assert carried_model("openai/gpt-4o") == "openai/gpt-4o"
    assert carried_model("scripted/demo") == "scripted/demo"
    assert carried_model(None) is None
