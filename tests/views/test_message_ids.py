"""A message id given whole or as a unique start of one (views/message_ids.py)."""

from __future__ import annotations

import pytest

from otel_agents.views import AmbiguousMessage, SessionViewer, UnknownMessage
from otel_agents.views.message_ids import resolve_message_id

IDS = {"msg_000010": 1, "msg_000011": 2, "msg_000020": 3, "msg_00002": 4}


def test_a_whole_id_is_itself_even_when_it_begins_others():
    assert resolve_message_id(IDS, "msg_00002") == "msg_00002"  # also the start of msg_000020
    assert resolve_message_id(IDS, "msg_000011") == "msg_000011"


def test_a_unique_start_is_the_id_it_begins():
    assert resolve_message_id({"msg_000010": 1, "msg_000020": 2}, "msg_00001") == "msg_000010"


def test_the_start_of_several_ids_or_of_none_is_refused_by_name():
    with pytest.raises(AmbiguousMessage, match=r"'msg_00001' is the start of 2 ids \(msg_000010, msg_000011\)"):
        resolve_message_id(IDS, "msg_00001")
    for given in ("msg_3", "", "000010"):
        with pytest.raises(UnknownMessage):
            resolve_message_id(IDS, given)


def test_the_viewer_takes_a_start_wherever_a_message_id_is_asked_for():
    records = [{"message_id": "msg_000001", "event_type": "agent_created", "agent_id": "a1", "name": "Ann"}]
    records += [{"message_id": f"msg_{n:06d}", "event_type": "transcript_entry", "agent_id": "a1",
                 "role": "user" if n % 2 else "assistant", "content": f"line {n}"} for n in range(2, 11)]
    viewer = SessionViewer(records)
    assert viewer.get_transcript("Ann", after="msg_00001") == viewer.get_transcript("Ann", after="msg_000010")
    assert viewer.step("msg_00001").message_id == "msg_000010"
    assert viewer.trace_message_flow("msg_00001")[-1].message_id == "msg_000010"
    assert viewer.trace_content_references("msg_00001") == []
    with pytest.raises(AmbiguousMessage):
        viewer.get_transcript("Ann", after="msg_00000")
