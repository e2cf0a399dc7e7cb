"""The hook factories (approval, review, transform, reset, remind, agent_approval_hook) check their arguments
where they are given, so a wrong one fails at its decorator line and not mid-run (or never)."""

from __future__ import annotations

import functools

import pytest

from otel_agents.runtime.agent_approval import agent_approval_hook
from otel_agents.runtime.hooks import (
    ApprovalHook, RemindHook, ReviewHook, TransformHook, approval, remind, reset, review, transform,
)


def request_check(request):
    return True


def judge(agent, utterance):
    return True


def rewrite(sender, recipient, text):
    return text


async def rewrite_later(sender, recipient, text):
    return text


@pytest.mark.parametrize("make, error, says", [
    # A lone string was split into letters: approval(tools="task") watched tools 't', 'a', 's', 'k'.
    (lambda: approval(tools="task")(request_check), TypeError, r"approval: tools= takes a list of names, not one "
                                                             r"string: tools=\['task'\]"),
    (lambda: review(agents="Jack")(judge), TypeError, r"review: agents= takes a list of names, not one string"),
    (lambda: approval(tools=[""])(request_check), ValueError, r"approval: tools\[0\] must be a non-empty string"),
    (lambda: approval(agents=[5])(request_check), TypeError, r"approval: agents\[0\] must be a non-empty string, not int"),
    (lambda: approval(tools=5), TypeError, r"approval: tools= takes a list of names, not int"),
    (lambda: approval(5), TypeError, r"approval: takes a function of \(request\), not int"),
    (lambda: approval(name=5), TypeError, r"approval: name= takes a string, not int"),
    (lambda: approval(lambda: True), TypeError, r"approval: <lambda>\(\) cannot be called with \(request\)"),
    (lambda: review(request_check), TypeError, r"review: request_check\(request\) cannot be called with "
                                               r"\(agent, utterance\)"),
    (lambda: transform(judge), TypeError, r"transform: judge\(agent, utterance\) cannot be called with "
                                          r"\(sender, recipient, text\)"),
    (lambda: transform(rewrite_later), TypeError, r"transform: rewrite_later is async"),
    (lambda: agent_approval_hook(5), TypeError, r"agent_approval_hook: agent_name must be a non-empty string, not int"),
    (lambda: agent_approval_hook(""), ValueError, r"agent_approval_hook: agent_name must be a non-empty string"),
    (lambda: agent_approval_hook("Gate", tools="task"), TypeError, r"agent_approval_hook: tools= takes a list"),
    # A name no agent can have: the hook never acted, silently.
    (lambda: agent_approval_hook("a/b"), ValueError, r"^agent_approval_hook: agent_name may not contain '/'"),
    (lambda: review(agents=["main/Jack"])(judge), ValueError, r"^review: agents\[0\] may not contain '/'"),
    (lambda: remind("m", agents=["Jack", "J\nill"]), ValueError, r"^remind: agents\[1\] may not contain '\\n'"),
    (lambda: reset("5"), TypeError, r"reset: max_entries= takes a whole number, not str"),
    (lambda: reset(5, keep=-1), ValueError, r"reset: keep= must be at least 0, not -1"),
    (lambda: reset(5, agents="Jack"), TypeError, r"reset: agents= takes a list of names"),
    (lambda: remind(5, after_turns=1), TypeError, r"remind: message must be a non-empty string, not int"),
    (lambda: remind("m", after_turns="2"), TypeError, r"remind: after_turns= takes a whole number, not str"),
    (lambda: remind("m", every_seconds="9"), TypeError, r"remind: every_seconds= takes seconds as a number"),
    (lambda: remind("m", tools="task"), TypeError, r"remind: tools= takes a list of names"),
])
def test_a_wrong_argument_is_refused_where_the_hook_is_made(make, error, says):
    with pytest.raises(error, match=says):
        make()


def test_right_arguments_make_hooks_watching_the_names_given():
    assert approval(tools=["task"], agents=("Jack",))(request_check).tools == frozenset({"task"})
    assert approval(request_check).name == "request_check"
    assert review(agents={"Jack"})(judge).agents == frozenset({"Jack"})
    assert review(lambda *args: True).agents is None  # any function that can take the arguments
    assert transform(name="Redact")(rewrite).name == "Redact"
    assert agent_approval_hook("Gate", tools=["task"]).tools == frozenset({"task"})
    assert agent_approval_hook("Gate", name="g").agent == "Gate"  # a scripted session checks it is one of its agents
    assert reset(0, keep=0).agents is None
    assert remind("m", tools=["discuss"]).tools == frozenset({"discuss"})
    # A partial has no __name__: the hook is named after its type rather than failing.
    assert review(functools.partial(judge)).name == "partial"


@pytest.mark.parametrize("make, error, says", [
    (lambda: ApprovalHook("gate", 5), TypeError, r"ApprovalHook: takes a function of \(request\), not int"),
    (lambda: ApprovalHook("gate", request_check, tools="task"), TypeError, r"ApprovalHook: tools= takes a list"),
    (lambda: ApprovalHook("", request_check), ValueError, r"ApprovalHook: name must be a non-empty string"),
    (lambda: ReviewHook("critic", rewrite), TypeError, r"ReviewHook: rewrite\(sender, recipient, text\) cannot be"),
    (lambda: TransformHook("redact", judge), TypeError, r"TransformHook: judge\(agent, utterance\) cannot be"),
    (lambda: RemindHook("nudge", "", after_turns=1), ValueError, r"RemindHook: message must be a non-empty string"),
    (lambda: reset(2, keep=3), ValueError, r"reset: max_entries= \(2\) must be at least keep= \(3, "),
    # keep= left at its default: the message names max_entries=, the argument given.
    (lambda: reset(0), ValueError, r"reset: max_entries= \(0\) must be at least keep= \(1, .*by default 1"),
])
def test_the_hook_classes_check_what_they_are_given_directly(make, error, says):
    with pytest.raises(error, match=says):
        make()
    # Names given as any iterable end up a frozenset.
    assert ApprovalHook("gate", request_check, ["task"]).tools == frozenset({"task"})
