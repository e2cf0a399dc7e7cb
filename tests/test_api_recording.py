"""The recording() block: its arguments checked where given, and one block per object."""

from __future__ import annotations

import pytest

import otel_agents


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"home": 5}, "recording: home= takes a path, not int"),
        ({"sessions_dir": b"sessions"}, "recording: sessions_dir= takes a path, not bytes"),
        ({"billing_file": 1.5}, "recording: billing_file= takes a path, not float"),
        ({"otlp_file": ["x"]}, "recording: otlp_file= takes a path, not list"),
        ({"redacted_save": 1}, "recording: redacted_save= takes True or False, not int"),
        ({"tracer_provider": "sdk"}, "recording: tracer_provider= takes an opentelemetry.sdk.trace.TracerProvider"),
    ],
)
def test_a_wrong_argument_is_a_type_error_naming_it(arguments, message):
    """``recording(home=5)`` raised os.fspath's TypeError, naming no parameter."""
    with pytest.raises(TypeError, match=message.replace(".", r"\.")):
        otel_agents.recording(**arguments)


def test_a_recording_object_used_again_after_its_block_says_it_has_ended(tmp_path):
    """It said 'this recording is already active', though its block was over."""
    rec = otel_agents.recording(home=tmp_path)
    with rec:
        with pytest.raises(RuntimeError, match="already active"):
            rec.__enter__()
    with pytest.raises(RuntimeError, match=r"this recording has ended: .* make a new one"):
        with rec:
            pass
    with otel_agents.recording(home=tmp_path) as again:
        assert again.saved_everything


def test_an_otlp_file_in_a_directory_that_is_not_there_is_refused_where_given(tmp_path):
    """As the CLI's --otlp-file: the block ran every session and only warned it exported nothing."""
    missing = tmp_path / "nodir" / "spans.jsonl"
    with pytest.raises(ValueError, match=r"^recording: otlp_file= .*nodir/spans\.jsonl'.* does not exist$"):
        otel_agents.recording(home=tmp_path / "home", otlp_file=missing)
    assert not (tmp_path / "home").exists() and not missing.parent.exists()
    with otel_agents.recording(home=tmp_path / "home", otlp_file=tmp_path / "spans.jsonl") as rec:
        assert rec.saved_everything
