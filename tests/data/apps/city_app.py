"""A Python app for `otel-agents run --app city_app:make`: a custom tool, an approval hook, a tool that can crash;
a review hook that fails (`with_broken_review`), hooks failing with two lines (`with_multiline_review`,
`with_multiline_approval`) and tools that interrupt or leave the program (`with_quitting_tools`)."""

import os
import signal
import sys

from otel_agents import Agent, Decision, ToolRequest, approval, review, tool


@tool
def population(city: str) -> str:
    """How many people live in a city.

    city: the city's name
    """
    return f"{city} has {len(city)} million people"


@tool
def census(city: str) -> str:
    """Count a city's people; with CITY_APP_KILL set the process dies mid-call, as a crash would."""
    if os.environ.get("CITY_APP_KILL"):
        os.kill(os.getpid(), signal.SIGKILL)
    return f"census of {city}: done"


@approval(tools=["delete_notes"])
def keep_notes(request: ToolRequest) -> Decision:
    return Decision(False, "notes are kept")


@tool
def delete_notes() -> str:
    """Delete the research notes."""
    raise AssertionError("the approval hook must stop this call")


def make():
    return Agent("researcher", "You answer questions about cities.",
                 tools=[population, census, delete_notes]), [keep_notes]


@review
def offline_reviewer(agent, utterance):
    raise RuntimeError("reviewer offline")


def with_broken_review():
    agent, hooks = make()
    return agent, [*hooks, offline_reviewer]


@tool
def interrupted() -> str:
    """Stands for a tool whose own code a second Ctrl-C reaches (a first one cancels at the next await)."""
    raise KeyboardInterrupt


@tool
def give_up() -> str:
    """Leaves the program, as a tool calling sys.exit would."""
    sys.exit(3)


def with_quitting_tools():
    return Agent("researcher", "You answer questions about cities.", tools=[population, interrupted, give_up])


def broken():
    raise RuntimeError("no configuration")


@review
def brittle(agent, utterance):
    raise ValueError("review broke\nsecond line")


def with_multiline_review():
    agent, hooks = make()
    return agent, [*hooks, brittle]


@approval(tools=["delete_notes"])
def brittle_approval(request: ToolRequest) -> Decision:
    raise ValueError("approval broke\nsecond line")


def with_multiline_approval():
    agent, _ = make()
    return agent, [brittle_approval]
