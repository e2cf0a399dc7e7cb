"""LoggedString: a str carrying the message id of the substance it represents."""

from __future__ import annotations

import copy
import json
import pickle

from otel_agents.runtime.logged_string import LoggedString, substance_of


def test_behaves_as_a_plain_string_with_an_id():
    s = LoggedString("Hello", "msg_000015")
    assert isinstance(s, str) and s == "Hello" and s.message_id == "msg_000015"
    assert s.upper() == "HELLO" and json.dumps(s) == '"Hello"'
    assert {s: 1}["Hello"] == 1
    assert LoggedString("x").message_id is None


def test_formatted_delivery_keeps_the_originals_id():
    original = LoggedString("Hi", "msg_000015")
    formatted = LoggedString(f"[Jack]: {original}", original.message_id)
    assert formatted == "[Jack]: Hi" and substance_of(formatted) == "msg_000015"
    # Ordinary string operations produce plain strings: they do not claim the substance.
    assert substance_of(original + "!") is None
    assert substance_of("plain") is None


def test_id_survives_copy_and_pickle():
    s = LoggedString("Hello", "msg_000007")
    for clone in (copy.copy(s), copy.deepcopy(s), pickle.loads(pickle.dumps(s))):
        assert clone == "Hello" and clone.message_id == "msg_000007" and type(clone) is LoggedString


def test_an_id_that_is_not_a_message_id_is_refused_where_the_string_is_made():
    import pytest

    with pytest.raises(TypeError, match="not int"):
        LoggedString("x", 42)
    for bad in ("", "42", "msg_12", "agent_001", "msg_000001 ", "MSG_000001"):
        with pytest.raises(ValueError, match="is not a message id"):
            LoggedString("x", bad)
    assert LoggedString("x", "msg_1234567").message_id == "msg_1234567"  # past a million records
