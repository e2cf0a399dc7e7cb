"""A Python app for `otel-agents run --app city_app:make`: a custom tool, an approval hook, and a slow tool for crash tests."""

import os
import time

from otel_agents import Agent, Decision, ToolRequest, approval, tool


@tool
def population(city: str) -> str:
    """How many people live in a city.

    city: the city's name
    """
    return f"{city} has {len(city)} million people"


@tool
def slow_census(city: str) -> str:
    """A census that takes a while (the crash test kills the process during it)."""
    marker = os.environ.get("CITY_APP_MARKER")
    if marker:
        open(marker, "w").close()  # tells the test the run is in the middle of this tool
    time.sleep(float(os.environ.get("CITY_APP_SLEEP", "0")))
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
                 tools=[population, slow_census, delete_notes]), [keep_notes]


def broken():
    raise RuntimeError("no configuration")
