"""Hooks: verdict parsing, the approval prompt, agent hooks, scripted hook specs, the public decorators."""

from __future__ import annotations

import pytest

from otel_agents.llm.script_hooks import HookSpec
from otel_agents.runtime.agent_approval import approval_prompt, parse_verdict
from otel_agents.runtime.hooks import Decision, ToolRequest
from otel_agents.runtime.scenario import install_hooks
from otel_agents.runtime.session import Session


def test_parse_verdict_reads_the_first_word():
    assert parse_verdict("DENY. Maximum subagents (3) already reached.") == Decision(
        False, "Maximum subagents (3) already reached."
    )
    assert parse_verdict("deny: too many") == Decision(False, "too many")
    assert parse_verdict("DENY") == Decision(False, "denied")
    assert parse_verdict("DENIED. Maximum subagents reached.") == Decision(False, "Maximum subagents reached.")
    assert parse_verdict("**Denied**: no") == Decision(False, "no")
    assert parse_verdict("APPROVE") == Decision(True, "")
    assert parse_verdict("  Approved - fewer than 3 exist") == Decision(True, "fewer than 3 exist")


@pytest.mark.parametrize("answer", ["I have nothing further to add.", "Sure, go ahead", "", "DENYING nothing",
                                    "APPROVING? no", "I deny it", "APPROVE?", "Approve? I cannot tell.",
                                    "**Deny?**", "Approve or deny?", "APPROVE/DENY", "Deny or approve: unsure"])
def test_an_answer_that_is_neither_verdict_denies_and_says_so(answer):
    decision = parse_verdict(answer)
    assert not decision.allowed
    assert decision.reason == f"the hook agent answered neither APPROVE nor DENY: {answer.strip()!r}"


def test_a_long_unclear_answer_is_cut_in_the_reason():
    decision = parse_verdict("x" * 500)
    assert decision.reason.endswith("x" * 199 + "…'") and len(decision.reason) < 300


@pytest.mark.parametrize("allowed", ["no", 1, None])
def test_a_decision_is_a_bool(allowed):
    with pytest.raises(TypeError, match="Decision: allowed must be True or False"):
        Decision(allowed)
    with pytest.raises(TypeError, match="Decision: reason must be a string, not int"):
        Decision(True, 5)


def test_approval_prompt_matches_the_seed_and_describes_other_tools():
    session = Session()
    root = session.create_agent("main", "scripted/x")
    for name in ("A", "B", "C"):
        session.create_agent(name, "scripted/x", parent=root)
    prompt = approval_prompt(ToolRequest(root, "task", {"name": "Searcher4"}, "c10"))
    assert prompt == (
        f"Agent '{root.agent_id}' is attempting to create subagent 'Searcher4'. Current subagent count: 3. Approve?"
    )
    other = approval_prompt(ToolRequest(root, "rm", {"path": "/", "force": True}, "c11"))
    assert other == f"Agent '{root.agent_id}' is attempting to call tool 'rm' with arguments " \
                    '{"force": true, "path": "/"}. Approve?'


def gate_script(gate_answers: list[str]) -> dict:
    """main creates the hook agent Gate (not judged: it does not exist yet), then Other (judged by Gate)."""
    return {
        "hooks": [{"kind": "approval", "name": "Gate", "agent": "Gate", "tools": ["task"]}],
        "agents": {
            "main": [{"tool_calls": [{"name": "task", "arguments": {"name": "Gate", "system_prompt": "judge"}}]},
                     {"tool_calls": [{"name": "task", "arguments": {"name": "Other", "system_prompt": "x"}}]},
                     "done"],
            "Gate": gate_answers,
        },
    }


async def test_agent_hook_approves_until_its_agent_exists_and_never_judges_itself(scripted):
    session = scripted(gate_script(["APPROVE"]))
    await session.run("go")
    results = [m["content"] for m in session.root.transcript if m["role"] == "tool"]
    assert results == ["Created subagent: Gate", "Created subagent: Other"]
    gate = session.find_agent("Gate")
    # Consulted once (for Other): it heard a prompt and answered.
    assert [m["role"] for m in gate.transcript] == ["system", "user", "assistant"]


@pytest.mark.parametrize("gate_answers, result", [
    (["DENIED. Too many already."], "Error: Action blocked by hook 'Gate': Too many already."),
    # Out of answers, the scripted model says "I have nothing further to add.": no verdict, so no yes.
    ([], "Error: Action blocked by hook 'Gate': the hook agent answered neither APPROVE nor DENY: "
         "'I have nothing further to add.'"),
])
async def test_an_agent_hook_that_does_not_approve_denies(scripted, gate_answers, result):
    session = scripted(gate_script(gate_answers))
    await session.run("go")
    results = [m["content"] for m in session.root.transcript if m["role"] == "tool"]
    assert results == ["Created subagent: Gate", result]
    assert session.find_agent("Other") is None


async def test_scripted_hook_specs_install_working_hooks(scripted):
    data = {
        "hooks": [
            {"kind": "approval", "name": "NoDiscuss", "deny_tools": ["discuss"]},
            {"kind": "review", "name": "NoShouting", "reject_if_contains": "!!!", "agents": ["main"]},
            {"kind": "transform", "name": "Polite", "replace": {"stupid": "unusual"}},
        ],
        "agents": {
            "main": [
                {"tool_calls": [{"name": "task", "arguments": {"name": "Kid", "system_prompt": "x",
                                                               "user_prompt": "a stupid question"}}]},
                {"tool_calls": [{"name": "discuss", "arguments": {"speakers": ["Kid"]}}]},
                "DONE!!!",
                "Done.",
            ],
        },
    }
    session = scripted(data)
    assert await session.run("go") == "Done."
    kid = session.find_agent("Kid")
    assert kid.transcript[1]["content"] == "a unusual question"
    tool_results = [m["content"] for m in session.root.transcript if m["role"] == "tool"]
    assert tool_results[1] == "Error: Action blocked by hook 'NoDiscuss': tool 'discuss' is not allowed"
    assert session.root.transcript[-2]["content"] == (
        "Your answer was rejected by hook 'NoShouting': the answer must not contain '!!!'"
    )


def test_a_deny_tools_hook_gives_a_reason_only_when_it_denies():
    """An allowed call's hook event said "tool 'task' is not allowed" beside its allow."""
    from types import SimpleNamespace

    from otel_agents.llm.script_hooks import HookSpec
    from otel_agents.runtime.scenario import _approval

    hook = _approval(HookSpec("approval", "NoDiscuss", deny_tools=("discuss",)))
    assert hook.check(SimpleNamespace(tool="task")) == Decision(True, "")
    assert hook.check(SimpleNamespace(tool="discuss")) == Decision(False, "tool 'discuss' is not allowed")


def test_install_hooks_sorts_kinds():
    session = Session()
    install_hooks(session, [HookSpec("approval", "a", deny_tools=("task",)), HookSpec("review", "r"),
                            HookSpec("transform", "t", replace={"a": "b"})])
    assert [h.name for h in session.hooks.approvers] == ["a"]
    assert [h.name for h in session.hooks.reviewers] == ["r"]
    assert [h.name for h in session.hooks.transformers] == ["t"]


@pytest.mark.parametrize("spec, field", [
    (HookSpec("approval", "Gate", deny_tools=("task", "taks")), "deny_tools"),
    (HookSpec("approval", "Gate", agent="Monitor", tools=("secrets",)), "tools"),
    (HookSpec("remind", "Nudge", message="m", tools=("serach",)), "tools"),
])
def test_a_scripted_hook_naming_a_tool_the_session_lacks_is_refused(spec, field):
    session = Session()
    with pytest.raises(ValueError, match=rf"hook '(Gate|Nudge)': {field} names '(taks|secrets|serach)', which no agent "
                                         r"of this session has as a tool \(its tools: discuss, task\)"):
        install_hooks(session, [spec])
    assert not session.hooks.approvers and not session.hooks.reminders


def test_the_root_s_own_tools_may_be_named():
    from otel_agents.runtime.session import AgentSpec
    from otel_agents.runtime.tools import tool

    @tool
    def secret() -> str:
        """The secret."""
        return "s"

    session = Session(root=AgentSpec("main", "scripted/x", tools=(secret,)))
    install_hooks(session, [HookSpec("approval", "Gate", deny_tools=("secret",))])
    assert session.tool_names() == {"secret", "task", "discuss"}
    with pytest.raises(ValueError, match="'secrets', which no agent"):
        install_hooks(session, [HookSpec("approval", "Typo", deny_tools=("secrets",))])


async def test_hook_decorators_judge_rewrite_and_reset_as_the_scripted_kinds_do(scripted):
    from otel_agents.runtime.hooks import approval, reset, review, transform
    from otel_agents.runtime.tools import tool

    @tool
    def shout(text: str) -> str:
        """Say it loudly."""
        return text.upper()

    @approval(tools=["shout"])
    async def quiet_please(request: ToolRequest) -> bool:  # async, and a bool is a Decision
        return request.arguments["text"] != "forbidden"

    @review
    def no_bangs(agent, utterance: str) -> Decision:
        return Decision("!" not in utterance, "no exclamation marks")

    @transform(name="polite")
    def polite(sender, recipient, text: str) -> str:
        return text.replace("stupid", "unusual")

    data = {"agents": {"main": [
        {"tool_calls": [{"name": "shout", "arguments": {"text": "forbidden"}},
                        {"name": "shout", "arguments": {"text": "fine"}}]},
        "Done!", "Done."]}}
    session = scripted(data, tools=[shout])
    session.hooks.approvers.append(quiet_please)
    session.hooks.reviewers.append(no_bangs)
    session.hooks.transformers.append(polite)
    assert (quiet_please.name, no_bangs.name, polite.name) == ("quiet_please", "no_bangs", "polite")
    assert await session.run("go") == "Done."
    contents = [m["content"] for m in session.root.transcript]
    assert "Error: Action blocked by hook 'quiet_please'." in contents and "FINE" in contents
    assert "Your answer was rejected by hook 'no_bangs': no exclamation marks" in contents
    other = session.create_agent("other", session.root.model)
    session.root.inform(other, "a stupid idea")
    assert other.transcript[-1]["content"] == "a unusual idea"

    session.hooks.reviewers[:] = [reset(2, keep=1, name="forget")]
    await session.run("again")
    assert len(session.root.transcript) == 1  # the reset kept the first entry only


# --- remind hooks ---

def _entries(session, agent):
    return list(zip(agent.transcript_ids, agent.transcript))


async def test_a_remind_hook_fires_before_the_turn_after_every_n_turns(scripted, span_tree):
    task = {"tool_calls": [{"name": "task", "arguments": {"name": "Kid", "system_prompt": "x", "user_prompt": "hi"}}]}
    data = {
        "hooks": [{"kind": "remind", "name": "Focus", "message": "Stay on topic.", "after_turns": 2, "agents": ["main"]}],
        "agents": {"main": [task, task, "done"], "Kid": ["ok", "ok"]},
    }
    session = scripted(data)
    assert await session.run("go") == "done"
    main = session.root
    reminders = [i for i, m in enumerate(main.transcript) if m["content"] == "Stay on topic."]
    assert len(reminders) == 1  # two turns taken, then reminded once before the third
    index = reminders[0]
    assert main.transcript[index - 1]["role"] == "tool" and main.transcript[index + 1]["role"] == "assistant"
    assert main.transcript[index + 1]["content"] == "done"
    record = next(r for r in span_tree().records() if r["message_id"] == main.transcript_ids[index])
    assert record["source"] == "system" and record["role"] == "user"
    # The Kid is not watched; the third turn's span carries the hook event: the entry and its cause.
    assert "Stay on topic." not in [m["content"] for m in session.find_agent("Kid").transcript]
    turns = [s for s in span_tree().named("turn") if s.attributes.get("otel_agents.agent.id") == main.agent_id]
    hooked = [(s.attributes["otel_agents.turn.index"], dict(e.attributes))
              for s in turns for e in s.events if e.name == "otel_agents.hook"]
    assert hooked == [(3, {
        "otel_agents.hook.kind": "remind", "otel_agents.hook.name": "Focus", "otel_agents.hook.decision": "remind",
        "otel_agents.hook.reason": "after 2 turns", "otel_agents.hook.message_id": main.transcript_ids[index],
        "otel_agents.hook.cause": main.transcript_ids[index - 1],
    })]


async def test_a_remind_hook_on_a_tool_is_caused_by_that_tools_result(scripted, span_tree):
    task = {"tool_calls": [{"name": "task", "arguments": {"name": "Kid", "system_prompt": "x", "user_prompt": "hi"}}]}
    data = {
        "hooks": [{"kind": "remind", "name": "AfterTask", "message": "Check the helper's work.", "tools": ["task"]}],
        "agents": {"main": ["first", task, "second"], "Kid": ["ok"]},
    }
    session = scripted(data)
    assert await session.run("go") == "first"
    assert "Check the helper's work." not in [m["content"] for m in session.root.transcript]
    assert await session.run("again") == "second"
    main = session.root
    index = [m["content"] for m in main.transcript].index("Check the helper's work.")
    result_id = main.transcript_ids[index - 1]
    assert main.transcript[index - 1]["role"] == "tool"
    record = next(r for r in span_tree().records() if r["message_id"] == main.transcript_ids[index])
    assert record["source"] == "system"
    events = [dict(e.attributes) for s in span_tree().named("turn") for e in s.events if e.name == "otel_agents.hook"]
    assert [(e["otel_agents.hook.reason"], e["otel_agents.hook.cause"]) for e in events] == [
        ("tool 'task' was used", result_id)
    ]


async def test_a_remind_hook_on_a_timer_fires_once_the_time_has_passed():
    from otel_agents.runtime.hooks import remind

    session = Session()
    agent = session.create_agent("main", "scripted/x")
    hook = remind("Time check.", every_seconds=30)
    now = [100.0]
    hook._clock = lambda: now[0]
    assert hook.due(agent) is None  # the timer starts when the agent is first seen
    now[0] = 129.0
    assert hook.due(agent) is None
    now[0] = 130.0
    assert hook.due(agent) == ("30s passed", agent.transcript_ids[-1] if agent.transcript_ids else None)
    assert hook.due(agent) is None  # and starts again


def test_remind_hooks_need_a_trigger_and_a_message():
    import pytest

    from otel_agents.llm.scripts import ScriptError, parse_script
    from otel_agents.runtime.hooks import remind

    with pytest.raises(ValueError, match="needs after_turns"):
        remind("x")
    base = {"name": "r", "agents": {"main": ["x"]}}
    for hook, why in [
        ({"kind": "remind", "name": "R", "after_turns": 1}, "needs a 'message'"),
        ({"kind": "remind", "name": "R", "message": "m"}, "needs 'after_turns', 'tools' or 'every_seconds'"),
        ({"kind": "remind", "name": "R", "message": "m", "after_turns": 0}, "positive integer"),
        ({"kind": "remind", "name": "R", "message": "m", "every_seconds": -1}, "positive number"),
    ]:
        with pytest.raises(ScriptError, match=why):
            parse_script({**base, "hooks": [hook]}, "s.json")


async def test_the_public_remind_hook_is_accepted_by_the_api_session(tmp_path):
    import json

    import otel_agents

    script = tmp_path / "s.json"
    script.write_text(json.dumps({"name": f"remind-api-{tmp_path.name}", "agents": {"main": ["one", "two"]}}))
    hook = otel_agents.remind("Be brief.", after_turns=1)
    session = otel_agents.Session(otel_agents.Agent("main"), hooks=[hook], script=str(script))
    assert await session.run("a") == "one"
    assert await session.run("b") == "two"
    contents = [m["content"] for m in session.runtime.root.transcript]
    assert contents.count("Be brief.") == 1 and contents.index("Be brief.") == contents.index("b") + 1


async def test_a_remind_hook_on_discuss_fires_after_it_and_is_caused_by_its_last_reply(scripted, span_tree):
    # discuss replies as it goes: it has no single result, yet it ran.
    data = {
        "hooks": [{"kind": "remind", "name": "Rm", "agents": ["main"], "message": "Stay on topic",
                   "tools": ["discuss", "task"]}],
        "agents": {
            "main": [{"tool_calls": [{"name": "task", "arguments": {"name": "Jack"}}]},
                     {"tool_calls": [{"name": "discuss", "arguments": {"speakers": ["Jack"], "prompt": "hi"}}]},
                     "done"],
            "Jack": ["hello"],
        },
    }
    session = scripted(data)
    assert await session.run("go") == "done"
    main = session.root
    contents = [m["content"] for m in main.transcript]
    assert contents.count("Stay on topic") == 2
    index = len(contents) - 1 - contents[::-1].index("Stay on topic")
    assert main.transcript[index - 1]["role"] == "tool" and main.transcript[index - 1]["name"] == "discuss"
    events = [dict(e.attributes) for s in span_tree().named("turn") for e in s.events if e.name == "otel_agents.hook"]
    assert [e["otel_agents.hook.reason"] for e in events] == ["tool 'task' was used", "tool 'discuss' was used"]
    assert events[1]["otel_agents.hook.cause"] == main.transcript_ids[index - 1]
