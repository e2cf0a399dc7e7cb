"""Views of sessions produced by the real runtime (scripted model through litellm's real path)."""

from __future__ import annotations

import pytest

from otel_agents.runtime.hooks import TransformHook
from otel_agents.views import AmbiguousAgent, SessionViewer, UnknownAgent
from otel_agents.views import jsonout
from otel_agents.views import render as R
from otel_agents.views.index import tool_calls_of
from otel_agents.views.model import HookMark

CAFE_SCRIPT = {
    "name": "views-cafe",
    "root": {"name": "main", "system_prompt": "You run a cafe scene."},
    "agents": {
        "main": [
            {
                "tool_calls": [
                    {"name": "task", "arguments": {"name": "Jack", "system_prompt": "You are Jack."}},
                    {"name": "task", "arguments": {"name": "Jill", "system_prompt": "You are Jill."}},
                    {"name": "task", "arguments": {"name": "Bob", "system_prompt": "You are Bob; you only listen."}},
                ]
            },
            {
                "tool_calls": [
                    {
                        "name": "discuss",
                        "arguments": {"prompt": "Introduce yourselves.", "speakers": ["Jack", "Jill"], "listeners": ["Bob"]},
                    }
                ]
            },
            "They met.",
        ],
        "Jack": ["Hi, I'm Jack."],
        "Jill": ["Hello Jack, I'm Jill."],
    },
}


def shout_to_bob(sender, recipient, text: str) -> str:
    """Bob hears everything in capitals: a different formatted form for one recipient."""
    return text.upper() if recipient.name == "Bob" else text


def add_shouting(session) -> None:
    session.hooks.transformers.append(TransformHook("ShoutToBob", shout_to_bob))


async def test_dialog_deduplicates_one_utterance_delivered_in_different_forms(scripted_session):
    saved = await scripted_session(CAFE_SCRIPT, ["Set the scene"], setup=add_shouting)
    viewer = saved.viewer()
    jack, jill, bob = (viewer.agent(n).agent_id for n in ("Jack", "Jill", "Bob"))

    # Jack's utterance reached Jill and Bob in two different forms ...
    jack_said = next(r for r in viewer.records if r.get("agent_id") == jack and r.get("role") == "assistant")
    forms = {(r.agent, r.content) for r in viewer.trace_content_references(jack_said["message_id"])}
    assert forms == {("Jill", "[Jack]: Hi, I'm Jack."), ("Bob", "[JACK]: HI, I'M JACK.")}

    # ... and the dialog shows it once, in its original words, with its speaker.
    items = viewer.extract_dialog(["Jack", "Jill", "Bob"])
    assert [(i.speaker.label, i.content) for i in items] == [
        ("main", "Introduce yourselves."),
        ("Jack", "Hi, I'm Jack."),
        ("Jill", "Hello Jack, I'm Jill."),
    ]
    assert items[0].heard_by == (jack, jill, bob)
    assert items[1].heard_by == (jill, bob) and len(items[1].entries) == 3  # said once, heard twice
    assert items[2].heard_by == (jack, bob)
    assert items[1].message_id == jack_said["message_id"]
    # Bob alone: he heard three things, each once, from who said them (not the shouted copies).
    # What the hook did is said beside the original words: Bob heard each in capitals.
    assert R.render_dialog(viewer.extract_dialog(["Bob"])).splitlines() == [
        f"{items[0].message_id} main: Introduce yourselves.  [delivered to Bob as rewritten by hook 'ShoutToBob']",
        f"{items[1].message_id} Jack: Hi, I'm Jack.  [delivered to Bob as rewritten by hook 'ShoutToBob']",
        f"{items[2].message_id} Jill: Hello Jack, I'm Jill.  [delivered to Bob as rewritten by hook 'ShoutToBob']",
    ]
    assert [(m.action, m.hook, m.agent) for m in items[1].hooks] == [("rewritten", "ShoutToBob", "Bob")]


async def test_perspective_of_an_agent_that_only_listened(scripted_session):
    saved = await scripted_session(CAFE_SCRIPT, ["Set the scene"], setup=add_shouting)
    viewer = saved.viewer()
    items = viewer.extract_agent_perspective("Bob")
    assert [i.kind for i in items] == ["heard", "heard", "heard", "heard"]
    assert [(i.speaker.label, i.content) for i in items] == [
        ("system", "You are Bob; you only listen."),
        ("main", "INTRODUCE YOURSELVES."),  # what Bob actually heard, from whom
        ("Jack", "[JACK]: HI, I'M JACK."),
        ("Jill", "[JILL]: HELLO JACK, I'M JILL."),
    ]
    assert [i.speaker.agent_id for i in items] == [None] + [viewer.agent(n).agent_id for n in ("main", "Jack", "Jill")]
    text = R.render_perspective(items)
    assert "[Said]" not in text and "[Action]" not in text
    assert text.splitlines()[2].endswith("[Heard] Jack: [JACK]: HI, I'M JACK.")


async def test_agents_of_the_demo_session(scripted_session, jack_and_jill_script):
    saved = await scripted_session(jack_and_jill_script, ["Create Jack and Jill for a cafe discussion"])
    viewer = saved.viewer()
    agents = viewer.list_agents()
    assert [(a.name, a.role, viewer.name_of(a.parent) if a.parent else None, a.path) for a in agents] == [
        ("main", "root", None, "main"),
        ("Jack", "subagent", "main", "main/Jack"),
        ("Jill", "subagent", "main", "main/Jill"),
        ("ResourceMonitor", "subagent", "main", "main/ResourceMonitor"),
        ("Inner", "subagent", "Jill", "main/Jill/Inner"),
    ]
    assert {a.model for a in agents} == {"scripted/jack-and-jill"}
    # Each creation is linked to the tool call that caused it.
    for agent in agents[1:]:
        chain = viewer.trace_message_flow(agent.created_by)
        assert [s.event_type for s in chain] == ["transcript_entry", "agent_created"]
        assert chain[0].agent_id == agent.parent and chain[1].link == "cause"
        assert [c.name for c in tool_calls_of(chain[0].record)] == ["task"]

    # The approval hook agent heard a system prompt and answered; main received the denial.
    monitor = R.render_perspective(viewer.extract_agent_perspective("ResourceMonitor")).splitlines()
    assert monitor[1].endswith(
        "[Heard] system: Agent 'agent_001' is attempting to create subagent 'Searcher4'. "
        "Current subagent count: 3. Approve?"
    )
    assert monitor[2].endswith("[Said] DENY. Maximum subagents (3) already reached.")
    main = R.render_perspective(viewer.extract_agent_perspective("main")).splitlines()
    assert main[-3].endswith("[Received] task: Error: Action blocked by hook 'ResourceMonitor': Maximum subagents (3) already reached.")
    # The blocked result traces back through the denial notice to the monitor's answer.
    (blocked,) = [r for r in viewer.records if str(r.get("content", "")).startswith("Error: Action blocked")]
    chain = viewer.trace_message_flow(blocked["message_id"])
    assert [(s.agent, s.event_type, s.link) for s in chain] == [
        ("ResourceMonitor", "transcript_entry", None), ("main", "host_notice", "cause"), ("main", "transcript_entry", "denial"),
    ]
    assert chain[0].record["content"] == "DENY. Maximum subagents (3) already reached."
    (call,) = [r["message_id"] for r in viewer.records
               if any(c["id"] == blocked["tool_call_id"] for c in r.get("tool_calls") or [])]
    assert chain[1].record["cause"] == [chain[0].message_id, call]  # the verdict, then the call it denied
    assert main[-2].endswith("[Thought] The discussion is done and the monitor refused another subagent, so I can summarise.")
    assert main[-1].endswith("[Said] Jack and Jill met in the cafe and introduced themselves; a fourth helper was not allowed.")
    # Jill consulted her inner voice: that exchange is in her perspective, not in the Jack-Jill dialog.
    dialog = R.render_dialog(viewer.extract_dialog(["Jack", "Jill"]))
    assert "Be friendly" not in dialog and "[Jack]" not in dialog
    assert "Be friendly" in R.render_perspective(viewer.extract_agent_perspective("Jill"))


async def test_truncation_external_events_and_name_resolution(scripted_session):
    script = {
        "name": "views-truncation",
        "root": {"name": "main", "system_prompt": "Answer briefly."},
        "agents": {
            "main": [
                {"tool_calls": [{"name": "task", "arguments": {"name": "Inner", "system_prompt": "Main's helper."}}]},
                "First answer.",
                "Second answer.",
            ]
        },
    }

    def between(session, tracer):
        with tracer.start_as_current_span("maintenance"):
            session.root.truncate(2)
            session.external(session.root, "File changed: data.json")

    saved = await scripted_session(script, ["One", "Two"], between=between)
    viewer = saved.viewer()
    items = viewer.extract_agent_perspective("main")
    kinds = [i.kind for i in items]
    # After forgetting its first turns the scripted model starts over: task again, then an answer.
    # issue 23: the truncation's host notice follows it, shown apart (the agent never heard it).
    assert kinds == [
        "heard", "heard", "action", "received", "said", "truncated", "host", "heard", "heard", "action", "received",
        "said",
    ]
    assert items[5].keep == 2
    assert [(i.speaker.label, i.content) for i in items[7:9]] == [("external", "File changed: data.json"), ("user", "Two")]
    assert R.render_perspective(items).splitlines()[5].endswith("[Truncated] kept the first 2 entries")
    # The transcript is the state after the truncation: the next LLM call would send exactly this.
    assert [line.message["content"] for line in viewer.transcript("main")] == [
        "Answer briefly.", "One", "File changed: data.json", "Two", None,
        "Error: subagent 'Inner' already exists", "First answer.",
    ]
    assert [m for m in saved.session.root.transcript] == [line.message for line in viewer.transcript("main")]
    # The live agent and the viewer agree on every transcript.
    for agent in saved.session.agents.values():
        assert [line.message for line in viewer.transcript(agent.agent_id)] == agent.transcript


async def test_same_name_under_two_parents(scripted_session):
    script = {
        "name": "views-two-inners",
        "root": {"name": "main"},
        "agents": {
            "main": [
                {
                    "tool_calls": [
                        {"name": "task", "arguments": {"name": "Jack", "system_prompt": "J"}},
                        {"name": "task", "arguments": {"name": "Inner", "system_prompt": "main's inner"}},
                    ]
                },
                {"tool_calls": [{"name": "discuss", "arguments": {"speakers": ["Jack"], "prompt": "Go"}}]},
                "done",
            ],
            "Jack": [
                {"tool_calls": [{"name": "task", "arguments": {"name": "Inner", "system_prompt": "Jack's inner"}}]},
                "ok",
            ],
        },
    }
    saved = await scripted_session(script, ["go"])
    viewer = saved.viewer()
    inners = [a for a in viewer.list_agents() if a.name == "Inner"]
    assert [a.path for a in inners] == ["main/Inner", "main/Jack/Inner"]
    assert [a.display_name for a in inners] == [f"Inner ({a.agent_id})" for a in inners]
    with pytest.raises(AmbiguousAgent, match="agent name 'Inner' is ambiguous"):
        viewer.resolve_agent("Inner")
    assert viewer.resolve_agent(inners[1].path) == inners[1].agent_id
    assert viewer.resolve_agent(inners[0].agent_id) == inners[0].agent_id
    with pytest.raises(UnknownAgent, match=r"unknown agent 'Nobody' \(agents: main, Jack, Inner \(agent_"):
        viewer.resolve_agent("Nobody")


HOOKED_SCRIPT = {
    "name": "views-hooked",
    "root": {"name": "main", "system_prompt": "You run a scene."},
    "hooks": [
        {"kind": "review", "name": "NoShouting", "reject_if_contains": "!!!", "agents": ["Jack"]},
        {"kind": "transform", "name": "Redact", "replace": {"1234": "[REDACTED]"}},
    ],
    "agents": {
        "main": [
            {"tool_calls": [{"name": "task", "arguments": {"name": "Jack", "system_prompt": "You are Jack."}},
                            {"name": "task", "arguments": {"name": "Jill", "system_prompt": "You are Jill."}}]},
            {"tool_calls": [{"name": "discuss", "arguments": {"prompt": "Introduce yourselves.", "speakers": ["Jack", "Jill"]}}]},
            "They met.",
        ],
        "Jack": ["HELLO!!!", "Hi, my PIN is 1234."],
        "Jill": ["Hello Jack."],
    },
}


async def test_dialog_marks_what_hooks_rejected_and_rewrote(scripted_session, tmp_path):
    """The dialog shows original words: an utterance a review hook rejected (the agent tried again) and
    one a transform hook redacted on its way to Jill read like any other unless marked. The marks come
    from the hooks' span events, read from the tree in memory, the span journal or tree.json.gz alike."""
    saved = await scripted_session(HOOKED_SCRIPT, ["Start"])
    from_journal = SessionViewer.from_session_dir(saved.save(tmp_path / "a", journal=True))
    from_tree = SessionViewer.from_session_dir(saved.save(tmp_path / "b"))
    for viewer in (saved.viewer(), from_journal, from_tree):
        jill = viewer.agent("Jill").agent_id
        shouted, told, calm = (next(r for r in viewer.records if r.get("content") == text) for text in (
            "HELLO!!!", "Your answer was rejected by hook 'NoShouting': the answer must not contain '!!!'",
            "Hi, my PIN is 1234."))
        (delivered,) = [r for r in viewer.records if r.get("agent_id") == jill and r.get("substance") == calm["message_id"]]
        assert delivered["content"] == "[Jack]: Hi, my PIN is [REDACTED]."
        items = viewer.extract_dialog(["Jack", "Jill"])
        assert R.render_dialog(items).splitlines()[1:4] == [
            f"{shouted['message_id']} Jack: HELLO!!!  [rejected by hook 'NoShouting']",
            f"{told['message_id']} system: {told['content']}",
            f"{calm['message_id']} Jack: Hi, my PIN is 1234.  [delivered to Jill as rewritten by hook 'Redact']",
        ]
        marks = {i.message_id: i.hooks for i in items}
        jack = viewer.agent("Jack").agent_id
        assert marks[shouted["message_id"]] == (HookMark("rejected", "NoShouting", shouted["message_id"], jack, "Jack"),)
        assert marks[calm["message_id"]] == (HookMark("rewritten", "Redact", delivered["message_id"], jill, "Jill"),)
        assert sum(map(len, marks.values())) == 2  # nothing else is marked
        as_json = jsonout.dialog_json([viewer.agent("Jack"), viewer.agent("Jill")], items)["items"]
        assert [i["hooks"] for i in as_json if i["hooks"]] == [
            [{"action": "rejected", "hook": "NoShouting", "message_id": shouted["message_id"], "agent_id": jack,
              "agent": "Jack"}],
            [{"action": "rewritten", "hook": "Redact", "message_id": delivered["message_id"], "agent_id": jill,
              "agent": "Jill"}],
        ]
        # Jack alone heard nothing rewritten and said the rejected line: only the rejection is marked.
        assert [bool(i.hooks) for i in viewer.extract_dialog(["Jack"])] == [False, True, False, False, False]


async def test_an_ambiguous_name_lists_a_few_agents_each_by_its_paths_end(scripted_session):
    """Every candidate with its whole path made one line of 368 MB for a chain of 12,000 agents of one name."""
    parents = [f"P{n}{'x' * 70}" for n in range(14)]
    script = {
        "name": "many-jacks",
        "agents": {
            "main": [{"tool_calls": [{"name": "task", "arguments": {"name": p, "system_prompt": "s", "user_prompt": "go"}}
                                     for p in parents]}, "done"],
            **{p: [{"tool_calls": [{"name": "task", "arguments": {"name": "Jack", "system_prompt": "s"}}]}, "ok"]
               for p in parents},
        },
    }
    viewer = (await scripted_session(script, ["go"])).viewer()
    with pytest.raises(AmbiguousAgent) as caught:
        viewer.resolve_agent("Jack")
    message = str(caught.value)
    assert message.startswith("agent name 'Jack' is ambiguous: ") and message.endswith(", ... (14 in all); give an id or a path")
    shown = message.split(": ", 1)[1].split(", ... ")[0].split(", ")
    assert len(shown) == 12 and all(len(entry.split(" (", 1)[1]) <= 61 and "…" in entry for entry in shown), shown
