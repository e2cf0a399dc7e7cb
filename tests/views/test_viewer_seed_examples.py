"""The four seed-001 examples, verbatim, through every view: exact text and structure."""

from __future__ import annotations

import pytest

from otel_agents.views import SessionDataError, UnknownMessage
from otel_agents.views import render as R
from otel_agents.views.model import Speaker

MODEL = "anthropic/claude-sonnet-4-5-20250929"


def parents(viewer) -> dict[str, tuple[str, str]]:
    return {m: (link.parent, link.link) for m, link in viewer.build_causality_index().items() if link.parent}


def lines(text: str) -> str:
    return "\n".join(line.strip() for line in text.strip().splitlines())


# --- example 1: Jack and Jill discussion ---
def test_example1_agents(seed_viewer):
    viewer = seed_viewer(1)
    assert R.render_agents(viewer.list_agents()) == (
        "ID          NAME        PARENT      ROLE      MODEL\n"
        f"agent_root  agent_root  -           root      {MODEL}\n"
        f"agent_jack  Jack        agent_root  subagent  {MODEL}\n"
        f"agent_jill  Jill        agent_root  subagent  {MODEL}"
    )
    jack = viewer.agent("Jack")
    assert (jack.parent, jack.cause, jack.created_by, jack.path) == ("agent_root", "msg_003", "msg_004", "agent_root/Jack")
    assert jack.system_prompt == "You work in HR..."
    assert [a.entries for a in viewer.list_agents()] == [8, 4, 4]


def test_example1_transcripts(seed_viewer):
    viewer = seed_viewer(1)
    assert R.render_transcript(viewer.transcript("agent_root")) == lines("""
        msg_002 user: Create Jack and Jill for a cafe discussion
        msg_003 assistant -> task(name="Jack", system_prompt="You work in HR...")
        msg_006 tool task: Created subagent: Jack
        msg_007 assistant -> task(name="Jill", system_prompt="You are an aspiring author...")
        msg_010 tool task: Created subagent: Jill
        msg_011 assistant -> discuss(prompt="You meet in a cafe. Introduce yourselves.", speakers=["Jack", "Jill"])
        msg_016 tool discuss: Hi, I'm Jack. *extends hand*
        msg_019 tool discuss: *smiles* Hello Jack, I'm Jill.
    """)
    assert R.render_transcript(viewer.transcript("Jack")) == lines("""
        msg_005 system: You work in HR...
        msg_013 user: You meet in a cafe. Introduce yourselves.
        msg_015 assistant: Hi, I'm Jack. *extends hand*
        msg_020 user: [Jill]: *smiles* Hello Jack, I'm Jill.
    """)
    # The message for each entry is what the model is sent: host fields never appear.
    jill = viewer.transcript("agent_jill")
    assert [line.message for line in jill] == [
        {"role": "system", "content": "You are an aspiring author..."},
        {"role": "user", "content": "You meet in a cafe. Introduce yourselves."},
        {"role": "user", "content": "[Jack]: Hi, I'm Jack. *extends hand*"},
        {"role": "assistant", "content": "*smiles* Hello Jack, I'm Jill."},
    ]
    assert [line.substance for line in jill] == [None, "msg_012", "msg_015", None]


def test_example1_dialog(seed_viewer):
    viewer = seed_viewer(1)
    items = viewer.extract_dialog(["Jack", "Jill"])
    assert R.render_dialog(items) == lines("""
        msg_012 agent_root: You meet in a cafe. Introduce yourselves.
        msg_015 Jack: Hi, I'm Jack. *extends hand*
        msg_018 Jill: *smiles* Hello Jack, I'm Jill.
    """)
    assert [(i.heard_by, i.entries) for i in items] == [
        (("agent_jack", "agent_jill"), ("msg_013", "msg_014")),
        (("agent_jill",), ("msg_015", "msg_017")),
        (("agent_jack",), ("msg_018", "msg_020")),
    ]
    assert items[0].speaker == Speaker("agent_root", "agent_root")
    # Jill alone: Jack's utterance appears in its original form, not as "[Jack]: ...".
    assert R.render_dialog(viewer.extract_dialog(["Jill"])) == lines("""
        msg_012 agent_root: You meet in a cafe. Introduce yourselves.
        msg_015 Jack: Hi, I'm Jack. *extends hand*
        msg_018 Jill: *smiles* Hello Jack, I'm Jill.
    """)
    # The root only gave the prompt and received tool results: its dialog is its user prompt.
    assert R.render_dialog(viewer.extract_dialog(["agent_root"])) == (
        "msg_002 user: Create Jack and Jill for a cafe discussion"
    )


def test_example1_perspectives(seed_viewer):
    viewer = seed_viewer(1)
    assert R.render_perspective(viewer.extract_agent_perspective("Jill")) == lines("""
        msg_009 [Heard] system: You are an aspiring author...
        msg_014 [Heard] agent_root: You meet in a cafe. Introduce yourselves.
        msg_017 [Heard] Jack: Hi, I'm Jack. *extends hand*
        msg_018 [Said] *smiles* Hello Jack, I'm Jill.
    """)
    assert R.render_perspective(viewer.extract_agent_perspective("Jack")) == lines("""
        msg_005 [Heard] system: You work in HR...
        msg_013 [Heard] agent_root: You meet in a cafe. Introduce yourselves.
        msg_015 [Said] Hi, I'm Jack. *extends hand*
        msg_020 [Heard] Jill: *smiles* Hello Jack, I'm Jill.
    """)
    assert R.render_perspective(viewer.extract_agent_perspective("agent_root")) == lines("""
        msg_002 [Heard] user: Create Jack and Jill for a cafe discussion
        msg_003 [Action] task(name="Jack", system_prompt="You work in HR...")
        msg_006 [Received] task: Created subagent: Jack
        msg_007 [Action] task(name="Jill", system_prompt="You are an aspiring author...")
        msg_010 [Received] task: Created subagent: Jill
        msg_011 [Action] discuss(prompt="You meet in a cafe. Introduce yourselves.", speakers=["Jack", "Jill"])
        msg_016 [Received] discuss: Hi, I'm Jack. *extends hand*
        msg_019 [Received] discuss: *smiles* Hello Jack, I'm Jill.
    """)
    received = viewer.extract_agent_perspective("agent_root")[2]
    assert (received.kind, received.tool, received.tool_call_id) == ("received", "task", "c1")


def test_example1_causality(seed_viewer):
    viewer = seed_viewer(1)
    assert parents(viewer) == {
        "msg_004": ("msg_003", "cause"),
        "msg_006": ("msg_003", "tool_call"),
        "msg_008": ("msg_007", "cause"),
        "msg_010": ("msg_007", "tool_call"),
        "msg_012": ("msg_011", "cause"),
        "msg_013": ("msg_012", "substance"),
        "msg_014": ("msg_012", "substance"),
        "msg_016": ("msg_011", "tool_call"),
        "msg_017": ("msg_015", "substance"),
        "msg_019": ("msg_011", "tool_call"),
        "msg_020": ("msg_018", "substance"),
    }
    assert R.render_trace(viewer.trace_message_flow("msg_014")) == lines("""
        msg_011 agent_root [Action] discuss(prompt="You meet in a cafe. Introduce yourselves.", speakers=["Jack", "Jill"])
        msg_012 agent_root [Text] You meet in a cafe. Introduce yourselves.  (cause: msg_011)
        msg_014 Jill [Heard] agent_root: You meet in a cafe. Introduce yourselves.  (substance: msg_012)
    """)
    assert R.render_trace(viewer.trace_message_flow("msg_008")) == lines(f"""
        msg_007 agent_root [Action] task(name="Jill", system_prompt="You are an aspiring author...")
        msg_008 Jill [Created] Jill (agent_jill) model {MODEL}  (cause: msg_007)
    """)
    assert R.render_trace(viewer.trace_message_flow("msg_020")) == lines("""
        msg_018 Jill [Said] *smiles* Hello Jack, I'm Jill.
        msg_020 Jack [Heard] Jill: *smiles* Hello Jack, I'm Jill.  (substance: msg_018)
    """)
    assert R.render_trace(viewer.trace_message_flow("msg_019")) == lines("""
        msg_011 agent_root [Action] discuss(prompt="You meet in a cafe. Introduce yourselves.", speakers=["Jack", "Jill"])
        msg_019 agent_root [Received] discuss: *smiles* Hello Jack, I'm Jill.  (tool_call: msg_011)
    """)
    assert [s.message_id for s in viewer.trace_message_flow("msg_002")] == ["msg_002"]


def test_example1_content_references(seed_viewer):
    viewer = seed_viewer(1)
    refs = viewer.trace_content_references("msg_012")
    assert R.render_references(viewer.step("msg_012"), refs) == lines("""
        msg_012 agent_root [Text] You meet in a cafe. Introduce yourselves.
        heard as:
        msg_013 Jack: You meet in a cafe. Introduce yourselves.
        msg_014 Jill: You meet in a cafe. Introduce yourselves.
    """).replace("\nmsg_013", "\n    msg_013").replace("\nmsg_014", "\n    msg_014")
    refs = viewer.trace_content_references("msg_015")
    assert [(r.message_id, r.agent_id, r.role, r.content) for r in refs] == [
        ("msg_017", "agent_jill", "user", "[Jack]: Hi, I'm Jack. *extends hand*")
    ]
    assert R.render_references(viewer.step("msg_005"), viewer.trace_content_references("msg_005")) == (
        "msg_005 Jack [Heard] system: You work in HR...\nno transcript entry refers to it"
    )


def test_example1_has_no_chat_context(seed_viewer):
    with pytest.raises(SessionDataError, match="span tree"):
        seed_viewer(1).chat_context("0123456789abcdef")


# --- example 2: inner monologue ---
def test_example2_every_view(seed_viewer):
    viewer = seed_viewer(2)
    assert R.render_agents(viewer.list_agents()) == (
        "ID                NAME        PARENT      ROLE          MODEL\n"
        "agent_jill        agent_jill  -           unregistered  -\n"
        f"agent_jill_inner  Inner       agent_jill  subagent      {MODEL}"
    )
    assert viewer.agent("agent_jill/Inner").agent_id == "agent_jill_inner"
    assert R.render_transcript(viewer.transcript("agent_jill")) == lines("""
        msg_030 assistant -> task(name="Inner", system_prompt="You are Jill's inner voice...")
        msg_033 user: [Jack]: Hi, I'm Jack. *extends hand*
        msg_034 assistant -> discuss(speakers=["Inner"], prompt="Jack just introduced himself. What should I say?")
        msg_038 tool discuss: Be friendly but not over-eager. A simple greeting with a smile.
        msg_039 assistant: *smiles* Hello Jack, I'm Jill.
    """)
    # Jack's utterance (msg_015) is not in this excerpt: its speaker is unknown.
    assert R.render_perspective(viewer.extract_agent_perspective("agent_jill")) == lines("""
        msg_030 [Action] task(name="Inner", system_prompt="You are Jill's inner voice...")
        msg_033 [Heard] unknown: [Jack]: Hi, I'm Jack. *extends hand*
        msg_034 [Action] discuss(speakers=["Inner"], prompt="Jack just introduced himself. What should I say?")
        msg_038 [Received] discuss: Be friendly but not over-eager. A simple greeting with a smile.
        msg_039 [Said] *smiles* Hello Jack, I'm Jill.
    """)
    assert R.render_perspective(viewer.extract_agent_perspective("Inner")) == lines("""
        msg_032 [Heard] system: You are Jill's inner voice...
        msg_036 [Heard] agent_jill: Jack just introduced himself. What should I say?
        msg_037 [Said] Be friendly but not over-eager. A simple greeting with a smile.
    """)
    # Jill's inner monologue: what she heard, asked herself, was told, and said.
    assert R.render_dialog(viewer.extract_dialog(["agent_jill", "Inner"])) == lines("""
        msg_015 unknown: [Jack]: Hi, I'm Jack. *extends hand*
        msg_035 agent_jill: Jack just introduced himself. What should I say?
        msg_037 Inner: Be friendly but not over-eager. A simple greeting with a smile.
        msg_039 agent_jill: *smiles* Hello Jack, I'm Jill.
    """)
    assert R.render_trace(viewer.trace_message_flow("msg_036")) == lines("""
        msg_034 agent_jill [Action] discuss(speakers=["Inner"], prompt="Jack just introduced himself. What should I say?")
        msg_035 agent_jill [Text] Jack just introduced himself. What should I say?  (cause: msg_034)
        msg_036 Inner [Heard] agent_jill: Jack just introduced himself. What should I say?  (substance: msg_035)
    """)
    assert R.render_trace(viewer.trace_message_flow("msg_033")) == (
        "msg_033 agent_jill [Heard] unknown: [Jack]: Hi, I'm Jack. *extends hand*  "
        "(substance: msg_015, not in this session)"
    )
    assert R.render_trace(viewer.trace_message_flow("msg_038")) == lines("""
        msg_034 agent_jill [Action] discuss(speakers=["Inner"], prompt="Jack just introduced himself. What should I say?")
        msg_038 agent_jill [Received] discuss: Be friendly but not over-eager. A simple greeting with a smile.  (tool_call: msg_034)
    """)
    assert parents(viewer) == {
        "msg_031": ("msg_030", "cause"),
        "msg_033": ("msg_015", "substance"),
        "msg_035": ("msg_034", "cause"),
        "msg_036": ("msg_035", "substance"),
        "msg_038": ("msg_034", "tool_call"),
    }
    # Inner's answer reached Jill only as a tool result: nobody heard it as a message.
    assert viewer.trace_content_references("msg_037") == []
    assert [r.agent for r in viewer.trace_content_references("msg_035")] == ["Inner"]
    with pytest.raises(UnknownMessage):
        viewer.trace_content_references("msg_015")  # referred to, but not in this session


# --- example 3: hook intervention ---
def test_example3_every_view(seed_viewer):
    viewer = seed_viewer(3)
    assert R.render_agents(viewer.list_agents()) == (
        "ID                   NAME             PARENT      ROLE          MODEL\n"
        "agent_root           agent_root       -           unregistered  -\n"
        f"agent_resource_hook  ResourceMonitor  agent_root  subagent      {MODEL}"
    )
    assert R.render_perspective(viewer.extract_agent_perspective("agent_root")) == lines("""
        msg_100 [Action] task(name="ResourceMonitor", system_prompt="Monitor resource usage...")
        msg_102 [Action] task(name="Searcher4")
        msg_105 [Received] task: Error: Action blocked by hook 'ResourceMonitor': Maximum subagents (3) already reached.
    """)
    assert R.render_perspective(viewer.extract_agent_perspective("ResourceMonitor")) == lines("""
        msg_103 [Heard] user: Agent 'agent_root' is attempting to create subagent 'Searcher4'. Current subagent count: 3. Approve?
        msg_104 [Said] DENY. Maximum subagents (3) already reached.
    """)
    assert R.render_transcript(viewer.transcript("agent_resource_hook")) == lines("""
        msg_103 user: Agent 'agent_root' is attempting to create subagent 'Searcher4'. Current subagent count: 3. Approve?
        msg_104 assistant: DENY. Maximum subagents (3) already reached.
    """)
    assert R.render_dialog(viewer.extract_dialog(["ResourceMonitor", "agent_root"])) == lines("""
        msg_103 user: Agent 'agent_root' is attempting to create subagent 'Searcher4'. Current subagent count: 3. Approve?
        msg_104 ResourceMonitor: DENY. Maximum subagents (3) already reached.
    """)
    assert R.render_trace(viewer.trace_message_flow("msg_105")) == lines("""
        msg_102 agent_root [Action] task(name="Searcher4")
        msg_105 agent_root [Received] task: Error: Action blocked by hook 'ResourceMonitor': Maximum subagents (3) already reached.  (tool_call: msg_102)
    """)
    assert R.render_trace(viewer.trace_message_flow("msg_101")) == lines(f"""
        msg_100 agent_root [Action] task(name="ResourceMonitor", system_prompt="Monitor resource usage...")
        msg_101 ResourceMonitor [Created] ResourceMonitor (agent_resource_hook) model {MODEL}  (cause: msg_100)
    """)
    assert parents(viewer) == {"msg_101": ("msg_100", "cause"), "msg_105": ("msg_102", "tool_call")}
    # The hook's verdict (msg_104) and the blocked result (msg_105) differ in wording: compare them.
    assert viewer.record("msg_104")["content"] != viewer.record("msg_105")["content"]
    assert viewer.trace_content_references("msg_104") == []


# --- example 4: external trigger ---
def test_example4_every_view(seed_viewer):
    viewer = seed_viewer(4)
    assert R.render_agents(viewer.list_agents()) == (
        "ID             NAME           PARENT  ROLE          MODEL\n"
        "agent_watcher  agent_watcher  -       unregistered  -"
    )
    assert R.render_transcript(viewer.transcript("agent_watcher")) == lines("""
        msg_200 user: File changed: data.json
        msg_201 assistant: I'll reload the data and notify the main agent.
    """)
    assert R.render_perspective(viewer.extract_agent_perspective("agent_watcher")) == lines("""
        msg_200 [Heard] user: File changed: data.json
        msg_201 [Said] I'll reload the data and notify the main agent.
    """)
    assert R.render_dialog(viewer.extract_dialog(["agent_watcher"])) == lines("""
        msg_200 user: File changed: data.json
        msg_201 agent_watcher: I'll reload the data and notify the main agent.
    """)
    assert R.render_trace(viewer.trace_message_flow("msg_201")) == (
        "msg_201 agent_watcher [Said] I'll reload the data and notify the main agent."
    )
    assert viewer.trace_content_references("msg_200") == []
    assert parents(viewer) == {}  # an outside event and a fresh answer: nothing caused them here


def test_all_examples_together():
    """The four excerpts as one stream: links across examples resolve (msg_033 -> Jack's msg_015)."""
    from support.seed_examples import seed_records

    from otel_agents.views import SessionViewer

    viewer = SessionViewer([r for n in (4, 3, 2, 1) for r in seed_records(n)])  # order restored by id
    assert [a.agent_id for a in viewer.list_agents()] == [
        "agent_root", "agent_jack", "agent_jill", "agent_jill_inner", "agent_resource_hook", "agent_watcher"
    ]
    assert viewer.agent("agent_root/Jill/Inner").agent_id == "agent_jill_inner"
    assert R.render_perspective(viewer.extract_agent_perspective("Jill")) == lines("""
        msg_009 [Heard] system: You are an aspiring author...
        msg_014 [Heard] agent_root: You meet in a cafe. Introduce yourselves.
        msg_017 [Heard] Jack: Hi, I'm Jack. *extends hand*
        msg_018 [Said] *smiles* Hello Jack, I'm Jill.
        msg_030 [Action] task(name="Inner", system_prompt="You are Jill's inner voice...")
        msg_033 [Heard] Jack: Hi, I'm Jack. *extends hand*
        msg_034 [Action] discuss(speakers=["Inner"], prompt="Jack just introduced himself. What should I say?")
        msg_038 [Received] discuss: Be friendly but not over-eager. A simple greeting with a smile.
        msg_039 [Said] *smiles* Hello Jack, I'm Jill.
    """)
    # Jill heard Jack's introduction twice: one dialog line, two entries.
    jack_intro = [i for i in viewer.extract_dialog(["Jill"]) if i.message_id == "msg_015"]
    assert [(i.speaker.label, i.content, i.entries) for i in jack_intro] == [
        ("Jack", "Hi, I'm Jack. *extends hand*", ("msg_017", "msg_033"))
    ]
    assert [r.message_id for r in viewer.trace_content_references("msg_015")] == ["msg_017", "msg_033"]
