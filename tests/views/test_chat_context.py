"""The exact LLM context of every chat attempt, rebuilt from the records, byte for byte.

The runtime is asked to capture ``gen_ai.input.messages`` (json.dumps of what it
sent); the reconstruction from events.jsonl + the chat span's context attributes
must serialise to the same bytes, for every attempt: retries, hooks of every
kind, parallel tool calls, non-ASCII text, and after a transcript truncation.
"""

from __future__ import annotations

import json

import pytest

from otel_agents.llm.tool_definitions import tools_id
from otel_agents.runtime.tools import tool
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.content_capture import as_json, request_content
from otel_agents.views import SessionDataError, SessionViewer, UnknownSpan


@tool
def echo(text: str) -> str:
    """Repeat a text.

    text: what to repeat
    """
    return text


HOOKED_SCRIPT = {
    "name": "views-context-hooks",
    "root": {"name": "main", "system_prompt": "Run a café ☕ meeting."},
    "hooks": [
        {"kind": "review", "name": "NoForbidden", "reject_if_contains": "forbidden", "agents": ["Jack"]},
        {"kind": "transform", "name": "Polite", "replace": {"darn": "d***"}},
        {"kind": "approval", "name": "NoEcho", "deny_tools": ["echo"], "tools": ["echo"]},
    ],
    "agents": {
        "main": [
            {
                "tool_calls": [
                    {"name": "task", "arguments": {"name": "Jack", "system_prompt": "Be terse."}},
                    {"name": "task", "arguments": {"name": "Jill", "system_prompt": "Be kind. Ünïcödé ✓"}},
                ]
            },
            {
                "tool_calls": [{"name": "discuss", "arguments": {"prompt": "Say something, darn it.", "speakers": ["Jack", "Jill"]}}],
                "fail_first_attempt": {"status": 503},
            },
            {"tool_calls": [{"name": "echo", "arguments": {"text": "blocked"}}]},
            {"text": "Done — 完了.", "reasoning": "Everyone spoke."},
        ],
        "Jack": ["This is forbidden talk, darn.", "Fine, darn: hello."],
        "Jill": ["Hello Jack 👋"],
    },
}


def truncate_root(keep: int):
    def between(session, tracer) -> None:
        with tracer.start_as_current_span("maintenance"):  # a record is a span event: give it a span
            session.root.truncate(keep)

    return between


def assert_every_context_identical(saved, viewer: SessionViewer) -> list:
    contexts = []
    chats = saved.chat_spans()
    assert chats
    for span in chats:
        context = viewer.chat_context(span.span_id)
        # The captured content (the registry's shape) is the context the viewer rebuilt, converted.
        instructions, history = request_content(context.messages)
        assert as_json(history) == span.attributes[sc.GEN_AI_INPUT_MESSAGES], span.name
        assert (as_json(instructions) if instructions else None) == span.attributes.get(sc.GEN_AI_SYSTEM_INSTRUCTIONS)
        assert context.message_count == span.attributes[sc.CONTEXT_MESSAGE_COUNT] == len(context.messages)
        # The definitions the agent sends, found by id when this span does not carry them.
        assert context.tools == saved.session.agents[context.agent_id].tool_schemas()
        assert tools_id(json.dumps(context.tools, separators=(",", ":"))) == span.attributes[sc.REQUEST_TOOLS_ID]
        assert context.attempt == span.attributes[sc.LLM_ATTEMPT]
        contexts.append((span, context))
    return contexts


async def test_every_chat_context_is_byte_identical_with_hooks_retries_and_truncation(scripted_session, tmp_path):
    saved = await scripted_session(
        HOOKED_SCRIPT, ["Start the meeting", "Once more, please"], between=truncate_root(3), tools=[echo]
    )
    contexts = assert_every_context_identical(saved, saved.viewer())
    events = saved.events
    # The situations this test is about really happened:
    assert any(c.attempt == 2 for _, c in contexts)  # a retried attempt
    assert any(e["event_type"] == "transcript_truncated" for e in events)
    assert any(e.get("source") == "system" and "rejected by hook 'NoForbidden'" in e["content"] for e in events)
    assert any("d***" in (e.get("content") or "") for e in events)  # a transformed delivery
    assert any("Action blocked by hook 'NoEcho'" in (e.get("content") or "") for e in events)
    assert any(len(e.get("tool_calls") or []) == 2 for e in events)  # parallel calls in one turn
    truncation = next(e for e in events if e["event_type"] == "transcript_truncated")
    after = [
        c for _, c in contexts
        if c.agent_id == truncation["agent_id"] and c.last_message_id > truncation["message_id"]
    ]
    assert after, "no chat attempt of the truncated agent after its truncation"
    # The first context after the truncation holds the 3 kept entries plus the new prompt.
    assert after[0].message_count == 4
    assert after[0].messages[3] == {"role": "user", "content": "Once more, please"}

    # The same through the saved files: events.jsonl + tree.json.gz.
    viewer = SessionViewer.from_session_dir(saved.save(tmp_path / "sessions"))
    assert_every_context_identical(saved, viewer)


async def test_jack_and_jill_contexts_are_byte_identical(scripted_session, jack_and_jill_script):
    saved = await scripted_session(jack_and_jill_script, ["Create Jack and Jill for a cafe discussion"])
    contexts = assert_every_context_identical(saved, saved.viewer())
    # Every agent that spoke, including the ResourceMonitor asked by the approval hook.
    names = {c.agent for _, c in contexts}
    assert names == {"main", "Jack", "Jill", "Inner", "ResourceMonitor"}
    # The first attempt of the discuss turn hit a 429 and was retried with the same context.
    retried = [c for _, c in contexts if c.attempt == 2]
    assert len(retried) == 1
    first = [c for _, c in contexts if c.last_message_id == retried[0].last_message_id and c.attempt == 1]
    assert first[0].messages == retried[0].messages


async def test_context_refusals(scripted_session, jack_and_jill_script):
    saved = await scripted_session(jack_and_jill_script, ["Create Jack and Jill for a cafe discussion"])
    viewer = saved.viewer()
    with pytest.raises(UnknownSpan, match="no span 'ffffffffffffffff'"):
        viewer.chat_context("ffffffffffffffff")
    tool_span = next(s for s in saved.spans if s.name == "execute_tool task")
    with pytest.raises(UnknownSpan, match="is not a chat span"):
        viewer.chat_context(tool_span.span_id)
    # Span ids are matched case-insensitively (they are hex).
    chat = saved.chat_spans()[0]
    assert viewer.chat_context(chat.span_id.upper()).span_id == chat.span_id

    # A span whose context does not match the records is reported, not papered over.
    tree = saved.tree
    node = next(n for n in _nodes(tree) if n.get("span_id") == saved.chat_spans()[-1].span_id)
    node["attributes"][sc.CONTEXT_MESSAGE_COUNT] += 1
    with pytest.raises(SessionDataError, match="records give"):
        SessionViewer(saved.events, tree).chat_context(node["span_id"])
    node["attributes"][sc.CONTEXT_LAST_MESSAGE_ID] = "msg_999999"
    with pytest.raises(SessionDataError, match="unknown message 'msg_999999'"):
        SessionViewer(saved.events, tree).chat_context(node["span_id"])


def _nodes(document):
    from otel_agents.views.loading import span_nodes

    return list(span_nodes(document))


async def test_tool_definitions_are_on_one_chat_span_per_trace_and_id(scripted_session, jack_and_jill_script):
    saved = await scripted_session(
        jack_and_jill_script, ["Create Jack and Jill for a cafe discussion", "Again, please"]
    )
    chats = saved.chat_spans()
    carried: dict[tuple[str, str], int] = {}
    for span in chats:
        if sc.REQUEST_TOOLS in span.attributes:
            key = (span.trace_id, span.attributes[sc.REQUEST_TOOLS_ID])
            carried[key] = carried.get(key, 0) + 1
            assert tools_id(span.attributes[sc.REQUEST_TOOLS]) == key[1]
    used = {(s.trace_id, s.attributes[sc.REQUEST_TOOLS_ID]) for s in chats}
    assert len({trace for trace, _ in used}) == 2  # each run is its own trace, and each holds its definitions
    assert carried == dict.fromkeys(used, 1)
    assert len(chats) > len(used)  # the other chat spans refer to them by id only


async def test_context_whose_tool_definitions_are_missing_is_refused(scripted_session, jack_and_jill_script):
    saved = await scripted_session(jack_and_jill_script, ["Create Jack and Jill for a cafe discussion"])
    tree = saved.tree
    for node in _nodes(tree):  # a trace imported without the span that held the definitions
        node["attributes"].pop(sc.REQUEST_TOOLS, None)
    chat = saved.chat_spans()[-1]
    with pytest.raises(SessionDataError, match=f"sent tool definitions {chat.attributes[sc.REQUEST_TOOLS_ID]}, which no span"):
        SessionViewer(saved.events, tree).chat_context(chat.span_id)


async def test_tool_schemas_cut_short_are_named(scripted_session, jack_and_jill_script):
    saved = await scripted_session(jack_and_jill_script, ["Create Jack and Jill for a cafe discussion"])
    tree = saved.tree
    holder = next(n for n in _nodes(tree) if sc.REQUEST_TOOLS in n["attributes"])
    holder["attributes"][sc.REQUEST_TOOLS] = holder["attributes"][sc.REQUEST_TOOLS][:40]  # a capped network copy
    with pytest.raises(SessionDataError, match="tool schemas are not whole JSON"):
        SessionViewer(saved.events, tree).chat_context(holder["span_id"])


async def test_contexts_from_the_span_journal_equal_those_from_the_tree(scripted_session, tmp_path, monkeypatch):
    saved = await scripted_session(
        HOOKED_SCRIPT, ["Start the meeting", "Once more, please"], between=truncate_root(3), tools=[echo]
    )
    path = saved.save(tmp_path / "sessions", journal=True)
    from_tree = saved.viewer()

    def no_tree(*args, **kwargs):
        raise AssertionError("the tree was decoded although the journal holds the span")

    monkeypatch.setattr("otel_agents.views.viewer.read_tree", no_tree)
    viewer = SessionViewer.from_session_dir(path)
    assert_every_context_identical(saved, viewer)  # by span id, tool definitions found by id
    for span in saved.chat_spans():
        response = span.attributes.get(sc.RESPONSE_MESSAGE_ID)
        if response is not None:  # by the assistant entry it produced
            assert viewer.chat_context(response) == from_tree.chat_context(response)
        assert viewer.chat_context(span.span_id.upper()) == from_tree.chat_context(span.span_id)
    # A message no chat span answered is refused from the records alone.
    heard = next(e for e in saved.events if e.get("role") == "user")
    with pytest.raises(UnknownSpan, match="is not an assistant entry answered by a chat span"):
        viewer.chat_context(heard["message_id"])


async def test_a_span_the_journal_cannot_give_is_found_in_the_tree(scripted_session, jack_and_jill_script, tmp_path):
    saved = await scripted_session(jack_and_jill_script, ["Create Jack and Jill for a cafe discussion"])
    path = saved.save(tmp_path / "sessions", journal=True)
    chats = saved.chat_spans()
    holder = next(s for s in chats if sc.REQUEST_TOOLS in s.attributes)
    dropped, damaged = chats[-1], chats[-2]
    journal = path / "spans.jsonl"
    kept = []
    for line in journal.read_bytes().splitlines(keepends=True):
        if dropped.span_id.encode() in line:
            continue  # a journal that lost a span's lines
        if f'"start":"{damaged.span_id}"'.encode() in line or f'"start":"{holder.span_id}"'.encode() in line:
            line = line[: len(line) // 2] + b"\n"  # a line that is not JSON any more
        kept.append(line)
    journal.write_bytes(b"".join(kept))
    from_tree = saved.viewer()
    viewer = SessionViewer.from_session_dir(path)
    for span in (dropped, damaged, holder, chats[0]):
        assert viewer.chat_context(span.span_id) == from_tree.chat_context(span.span_id)
    with pytest.raises(UnknownSpan, match="no span 'ffffffffffffffff'"):
        viewer.chat_context("ffffffffffffffff")


@pytest.mark.parametrize("key, value", [
    (sc.CONTEXT_MESSAGE_COUNT, "13"), (sc.CONTEXT_MESSAGE_COUNT, True), (sc.CONTEXT_MESSAGE_COUNT, 2.5),
    (sc.CONTEXT_LAST_MESSAGE_ID, 7), (sc.CONTEXT_AGENT_ID, ["agent_001"]), (sc.LLM_ATTEMPT, "1"),
    (sc.REQUEST_TOOLS_ID, {"id": 1}),
])
async def test_context_attributes_of_the_wrong_type_are_refused(scripted_session, jack_and_jill_script, tmp_path,
                                                                 key, value):
    saved = await scripted_session(jack_and_jill_script, ["Create Jack and Jill for a cafe discussion"])
    chat = saved.chat_spans()[-1]
    tree = saved.tree
    node = next(n for n in _nodes(tree) if n["span_id"] == chat.span_id)
    node["attributes"][key] = value
    with pytest.raises(SessionDataError, match=f"chat span {chat.span_id}: {key} is "):
        SessionViewer(saved.events, tree).chat_context(chat.span_id)

    # The same damage in the span journal, which answers first.
    path = saved.save(tmp_path / "sessions", journal=True)
    journal = path / "spans.jsonl"
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    for line in lines:
        if line.get("start") == chat.span_id:
            line.setdefault("attrs", {})[key] = value
    journal.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(SessionDataError, match=f"{key} is "):
        SessionViewer.from_session_dir(path).chat_context(chat.span_id)
