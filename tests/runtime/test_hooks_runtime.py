"""Hooks: verdict parsing, the approval prompt, agent hooks, scripted hook specs, the public decorators."""

from __future__ import annotations

from otel_agents.llm.scripts import HookSpec
from otel_agents.runtime.hooks import Decision, ToolRequest, approval_prompt, parse_verdict
from otel_agents.runtime.scenario import install_hooks
from otel_agents.runtime.session import Session


def test_parse_verdict():
    assert parse_verdict("DENY. Maximum subagents (3) already reached.") == Decision(
        False, "Maximum subagents (3) already reached."
    )
    assert parse_verdict("deny: too many") == Decision(False, "too many")
    assert parse_verdict("DENY") == Decision(False, "denied")
    assert parse_verdict("APPROVE").allowed
    assert parse_verdict("  Sure, go ahead  ") == Decision(True, "Sure, go ahead")


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


async def test_agent_hook_approves_until_its_agent_exists_and_never_judges_itself(scripted):
    data = {
        "hooks": [{"kind": "approval", "name": "Gate", "agent": "Gate", "tools": ["task"]}],
        "agents": {
            "main": [{"tool_calls": [{"name": "task", "arguments": {"name": "Gate", "system_prompt": "judge"}}]},
                     {"tool_calls": [{"name": "task", "arguments": {"name": "Other", "system_prompt": "x"}}]},
                     "done"],
            "Gate": ["APPROVE"],
        },
    }
    session = scripted(data)
    await session.run("go")
    results = [m["content"] for m in session.root.transcript if m["role"] == "tool"]
    assert results == ["Created subagent: Gate", "Created subagent: Other"]
    gate = session.find_agent("Gate")
    # Consulted once (for Other): it heard a prompt and answered.
    assert [m["role"] for m in gate.transcript] == ["system", "user", "assistant"]


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


def test_install_hooks_sorts_kinds():
    session = Session()
    install_hooks(session, [HookSpec("approval", "a", deny_tools=("x",)), HookSpec("review", "r"),
                            HookSpec("transform", "t", replace={"a": "b"})])
    assert [h.name for h in session.approval_hooks] == ["a"]
    assert [h.name for h in session.review_hooks] == ["r"]
    assert [h.name for h in session.transform_hooks] == ["t"]


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
    session.approval_hooks.append(quiet_please)
    session.review_hooks.append(no_bangs)
    session.transform_hooks.append(polite)
    assert (quiet_please.name, no_bangs.name, polite.name) == ("quiet_please", "no_bangs", "polite")
    assert await session.run("go") == "Done."
    contents = [m["content"] for m in session.root.transcript]
    assert "Error: Action blocked by hook 'quiet_please': " in contents and "FINE" in contents
    assert "Your answer was rejected by hook 'no_bangs': no exclamation marks" in contents
    other = session.create_agent("other", session.root.model)
    session.root.inform(other, "a stupid idea")
    assert other.transcript[-1]["content"] == "a unusual idea"

    session.review_hooks[:] = [reset(2, keep=1, name="forget")]
    await session.run("again")
    assert len(session.root.transcript) == 1  # the reset kept the first entry only
