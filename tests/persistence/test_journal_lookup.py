"""One span of the journal, by span id or by the entry it answered, equals the tree's node; damage says None."""

from __future__ import annotations

from otel_agents.persistence.journal_lookup import span_from_journal, tools_from_journal
from otel_agents.persistence.tree_walk import iter_ops
from otel_agents.tracing import semconv as sc


def test_a_chat_span_from_the_journal_equals_its_tree_node(record):
    recorded = record(prompts=["Create Jack and Jill for a cafe discussion"])
    store, tree = recorded.store, recorded.store.load_tree()
    chats = [ref.op for ref in iter_ops(tree) if ref.op["kind"] == "llm"]
    assert len(chats) >= 3
    for op in chats:
        by_id = span_from_journal(store.journal_path, op["span_id"].upper())  # ids are matched in any case
        assert by_id == {"span_id": op["span_id"], "name": op["name"], "attributes": op["attributes"]}
        answered = op["attributes"].get(sc.RESPONSE_MESSAGE_ID)
        if answered is not None:
            assert span_from_journal(store.journal_path, answered) == by_id
    sent = next(op["attributes"] for op in chats if op["attributes"].get(sc.REQUEST_TOOLS) is not None)
    assert tools_from_journal(store.journal_path, sent[sc.REQUEST_TOOLS_ID]) == sent[sc.REQUEST_TOOLS]


def test_what_the_journal_cannot_say_is_none(record, tmp_path):
    recorded = record(prompts=["Create Jack and Jill for a cafe discussion"])
    journal = recorded.store.journal_path
    assert span_from_journal(journal, "0" * 16) is None
    assert span_from_journal(journal, "msg_999999") is None
    assert tools_from_journal(journal, "no-such-id") is None
    assert span_from_journal(tmp_path / "missing.jsonl", "0" * 16) is None
    chat = next(ref.op for ref in iter_ops(recorded.store.load_tree()) if ref.op["kind"] == "llm")
    damaged = tmp_path / "spans.jsonl"
    damaged.write_bytes(b'{"start": "' + chat["span_id"].encode() + b'", not json\n')
    assert span_from_journal(damaged, chat["span_id"]) is None
