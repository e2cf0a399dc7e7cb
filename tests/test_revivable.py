"""otel_agents.revivable: an evicted agent's transcript read back from events.jsonl as it grows."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from otel_agents.persistence.events_file import encode_line
from otel_agents.revivable import SavedAgentTranscripts
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import make_record


# --- SavedAgentTranscripts: the runtime's SavedAgentRecords over events.jsonl (eviction) ---

def _saved_records(kinds: list[tuple[int, str, str]]) -> list[dict]:
    """Well-formed records (ids in order) for a few agents, of every kind the file holds."""
    out = []
    for number, (agent, kind, text) in enumerate(kinds, start=1):
        message_id = f"msg_{number:06d}"
        if kind == "entry":
            out.append(make_record(sc.EVENT_TRANSCRIPT_ENTRY, message_id, agent_id=f"agent_00{agent}", role="user",
                                   content=text))
        elif kind == "truncation":
            out.append(make_record(sc.EVENT_TRANSCRIPT_TRUNCATED, message_id, agent_id=f"agent_00{agent}", keep=0))
        else:
            out.append(make_record(sc.EVENT_PIECE_OF_TEXT, message_id, agent_id=f"agent_00{agent}", content=text,
                                   cause="msg_000001"))
    return out


@settings(max_examples=60, deadline=None)
@given(
    kinds=st.lists(st.tuples(st.integers(1, 3), st.sampled_from(["entry", "truncation", "piece"]),
                             st.text(max_size=12)), max_size=25),
    cuts=st.lists(st.integers(0, 10_000), max_size=8),
)
def test_the_saved_transcripts_of_an_agent_are_read_as_the_file_grows(tmp_path_factory, kinds, cuts):
    """Written in any pieces (a line may be half written when asked), each agent's transcript records are
    exactly those of the whole lines so far, in order, as saved."""
    records = _saved_records(kinds)
    data = b"".join(encode_line(r, 1_700_000_000_000_000_000, "0" * 32, "1" * 16) for r in records)
    path = tmp_path_factory.mktemp("events") / "events.jsonl"
    reader = SavedAgentTranscripts(path)
    assert reader.records_of("agent_001") == []  # no file yet
    written = 0
    for cut in sorted(c % (len(data) + 1) for c in cuts) + [len(data)]:
        with open(path, "ab") as handle:
            handle.write(data[written:cut] if cut > written else b"")
        written = max(written, cut)
        whole = data[:written].count(b"\n")
        for agent in ("agent_001", "agent_002", "agent_003"):
            expected = [r for r in records[:whole] if r["agent_id"] == agent
                        and r["event_type"] in (sc.EVENT_TRANSCRIPT_ENTRY, sc.EVENT_TRANSCRIPT_TRUNCATED)]
            assert reader.records_of(agent) == expected


def test_a_damaged_or_shrunk_events_file_is_a_value_error(tmp_path):
    path = tmp_path / "events.jsonl"
    record = _saved_records([(1, "entry", "hello")])[0]
    path.write_bytes(encode_line(record, 1, None, None) + b"not json\n")
    with pytest.raises(ValueError, match="not a record"):
        SavedAgentTranscripts(path).records_of("agent_001")
    reader = SavedAgentTranscripts(path)
    path.write_bytes(encode_line(record, 1, None, None))
    assert len(reader.records_of("agent_001")) == 1
    path.write_bytes(b"")
    with pytest.raises(ValueError, match="shrank"):
        reader.records_of("agent_001")
