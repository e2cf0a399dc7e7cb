"""A Python app for `otel-agents run --app city_app:make`: a custom tool, an approval hook, and a tool that can crash."""

import os
import signal

from otel_agents import Agent, Decision, ToolRequest, approval, tool


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


def broken():
    raise RuntimeError("no configuration")
