"""Text rendering details and the stable --json shapes."""

from __future__ import annotations

import json

from support.seed_examples import seed_records

from otel_agents.tracing.records import make_record
from otel_agents.views import SessionViewer
from otel_agents.views import jsonout
from otel_agents.views import render as R


def test_timestamps():
    assert R.format_ts(None) == "-"
    assert R.format_ts(1_700_000_000_123_456_789) == "2023-11-14T22:13:20.123Z"
    assert R.format_ts(1_700_000_000.5) == "2023-11-14T22:13:20.500Z"
    assert R.format_ts("2023-11-14T22:13:20.123456789Z") == "2023-11-14T22:13:20.123456789Z"


def test_arguments():
    assert R.format_arguments('{"name": "Jill", "n": 2, "tags": ["a"], "é": null}') == 'name="Jill", n=2, tags=["a"], é=null'
    assert R.format_arguments("not json") == "not json"
    assert R.format_arguments("[1, 2]") == "[1, 2]"
    assert R.format_arguments("") == ""


def test_multiline_content_is_indented_under_its_item():
    call = {"id": "c1", "type": "function", "function": {"name": "note", "arguments": "{}"}}
    records = [
        make_record("agent_created", "msg_000001", agent_id="a1", name="Ann"),
        make_record("transcript_entry", "msg_000002", agent_id="a1", role="user", content="line one\nline two"),
        make_record("transcript_entry", "msg_000003", agent_id="a1", role="assistant", content="Thinking\naloud", tool_calls=[call]),
        make_record("transcript_entry", "msg_000004", agent_id="a1", role="tool", tool_call_id="c1", name="note", content="ok\r\ndone"),
        make_record("transcript_entry", "msg_000005", agent_id="a2", role="user", content="heard\ntwice", substance="msg_000002"),
    ]
    viewer = SessionViewer(records)
    assert R.render_perspective(viewer.extract_agent_perspective("Ann")) == (
        "msg_000002 [Heard] user: line one\n"
        "    line two\n"
        "msg_000003 [Action] Thinking\n"
        "    aloud -> note()\n"
        "msg_000004 [Received] note: ok\n"
        "    done"
    )
    assert R.render_transcript(viewer.transcript("Ann")).splitlines()[2:4] == ["msg_000003 assistant: Thinking", "    aloud -> note()"]
    assert R.render_references(viewer.step("msg_000002"), viewer.trace_content_references("msg_000002")) == (
        "msg_000002 Ann [Heard] user: line one\n"
        "    line two\n"
        "heard as:\n"
        "    msg_000005 a2: heard\n"
        "        twice"
    )


def test_a_heard_delivery_names_its_speaker_once():
    """``discuss`` delivers ``[Jack]: Hi``: the line says who spoke once, not ``Jack: [Jack]: Hi``; --json
    keeps the content as received. Two agents named Jack keep their display names; a tag naming someone
    else than the speaker is content, kept."""
    records = [
        make_record("agent_created", "msg_000001", agent_id="a1", name="Jack"),
        make_record("agent_created", "msg_000002", agent_id="a2", name="Jack"),
        make_record("agent_created", "msg_000003", agent_id="a3", name="Jill"),
        make_record("transcript_entry", "msg_000004", agent_id="a1", role="assistant", content="Hi"),
        make_record("transcript_entry", "msg_000005", agent_id="a3", role="user", content="[Jack]: Hi", substance="msg_000004"),
        make_record("transcript_entry", "msg_000006", agent_id="a2", role="assistant", content="Yo"),
        make_record("transcript_entry", "msg_000007", agent_id="a3", role="user", content="[Bob]: Yo", substance="msg_000006"),
    ]
    viewer = SessionViewer(records)
    items = viewer.extract_agent_perspective("Jill")
    assert R.render_perspective(items) == (
        "msg_000005 [Heard] Jack (a1): Hi\n"
        "msg_000007 [Heard] Jack (a2): [Bob]: Yo"
    )
    assert jsonout.perspective_json(viewer.agent("Jill"), items)["items"][0]["content"] == "[Jack]: Hi"
    assert R.render_trace(viewer.trace_message_flow("msg_000005")).splitlines()[1] == (
        "msg_000005 Jill [Heard] Jack (a1): Hi  (substance: msg_000004)"
    )


def test_the_context_shows_the_reasoning_sent_with_an_assistant_message():
    """The request carried it (``--json`` shows it); the text view left it out."""
    from otel_agents.views.model import ChatContext

    messages = [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": "Hello", "reasoning_content": "Greet\nback"},
                {"role": "assistant", "content": None, "reasoning_content": "Ask Jack",
                 "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "task", "arguments": "{}"}}]},
                {"role": "assistant", "content": "ok", "reasoning_content": ""}]
    context = ChatContext("ab12", "chat", "a1", "Ann", "msg_000009", 4, 1, messages)
    assert R.render_context(context).splitlines()[1:] == [
        "[0] user: hi",
        "[1] assistant: Hello",
        "    reasoning_content: Greet",
        "        back",
        "[2] assistant -> task()",
        "    reasoning_content: Ask Jack",
        "[3] assistant: ok",
    ]


def test_content_parts_render_as_their_text():
    """A record's content may be a list of content parts (the OpenAI shape): views show its text."""
    parts = [{"type": "text", "text": "Look at\nthis: "}, {"type": "image_url", "image_url": {"url": "x"}}, "done"]
    assert R.content_text(parts) == "Look at\nthis: [image_url]done"
    assert R.content_text(None) == "" and R.content_text({"a": 1}) == '{"a": 1}'
    records = [
        make_record("agent_created", "msg_000001", agent_id="a1", name="Ann"),
        make_record("transcript_entry", "msg_000002", agent_id="a1", role="system", content=[{"type": "text", "text": "Be brief."}]),
        make_record("transcript_entry", "msg_000003", agent_id="a1", role="user", content=parts),
    ]
    viewer = SessionViewer(records)
    assert R.render_perspective(viewer.extract_agent_perspective("Ann")).endswith(
        "msg_000003 [Heard] user: Look at\n    this: [image_url]done")
    assert "system: Be brief." in R.render_transcript(viewer.transcript("Ann"))


def test_json_shapes_are_stable():
    viewer = SessionViewer(seed_records(1))
    jack = viewer.agent("Jack")
    documents = {
        "agents": jsonout.agents_json(None, viewer.list_agents()),
        "transcript": jsonout.transcript_json(jack, viewer.transcript("Jack")),
        "dialog": jsonout.dialog_json([jack], viewer.extract_dialog(["Jack"])),
        "perspective": jsonout.perspective_json(jack, viewer.extract_agent_perspective("Jack")),
        "trace": jsonout.trace_json("msg_013", viewer.trace_message_flow("msg_013")),
        "heard": jsonout.heard_json(viewer.step("msg_012"), viewer.trace_content_references("msg_012")),
    }
    keys = {
        "agents": ["agent_id", "name", "display_name", "parent", "model", "role", "path", "created_by", "cause", "system_prompt", "entries"],
        "transcript": ["message_id", "ts", "substance", "source", "tool", "message"],
        "dialog": ["message_id", "speaker", "speaker_agent_id", "content", "heard_by", "entries", "hooks"],
        "perspective": ["message_id", "kind", "ts", "content", "speaker", "speaker_agent_id", "substance", "tool_calls", "tool", "tool_call_id", "keep"],
        "trace": ["message_id", "event_type", "agent_id", "agent", "link", "parent", "parent_known", "causes", "speaker", "speaker_agent_id", "tool", "record"],
    }
    lists = {"agents": "agents", "transcript": "entries", "dialog": "items", "perspective": "items", "trace": "chain"}
    for view, field in lists.items():
        document = json.loads(jsonout.dumps(documents[view]))
        assert document["version"] == 1
        assert all(list(item) == keys[view] for item in document[field]), view
    heard = documents["heard"]
    assert list(heard) == ["version", "message_id", "original", "references"]
    assert list(heard["original"]) == keys["trace"]
    assert [list(r) for r in heard["references"]][0] == ["message_id", "agent_id", "agent", "ts", "role", "content"]
    assert documents["trace"]["chain"][2]["speaker"] == "agent_root"
    assert documents["perspective"]["items"][2] == {
        "message_id": "msg_015", "kind": "said", "ts": None, "content": "Hi, I'm Jack. *extends hand*",
        "speaker": None, "speaker_agent_id": None, "substance": None, "tool_calls": [], "tool": None,
        "tool_call_id": None, "keep": None,
    }
    assert "é" in jsonout.dumps({"x": "é"})  # UTF-8 text, not \\u escapes
