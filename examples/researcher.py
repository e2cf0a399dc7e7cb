"""A researcher with a custom tool (`population`) and an approval hook that keeps its notes from being deleted."""

from pathlib import Path

from otel_agents import Agent, Decision, ToolRequest, approval, tool

POPULATIONS = {"paris": 2.1, "rome": 2.8, "oslo": 0.7}  # millions, city proper


@tool
def population(city: str) -> str:
    """How many people live in a city, in millions.

    city: the city's name
    """
    found = POPULATIONS.get(city.strip().lower())
    return f"{city}: {found} million" if found is not None else f"{city}: unknown"


@tool
def delete_notes() -> str:
    """Delete the research notes."""
    return "notes deleted"


@approval(tools=["delete_notes"])
def keep_notes(request: ToolRequest) -> Decision:
    return Decision(False, "research notes are kept")


def make():
    researcher = Agent("researcher", "You answer questions about cities. Look numbers up with population.",
                       tools=[population, delete_notes])
    return researcher, [keep_notes]


if __name__ == "__main__":
    from examples.common import main

    main(make, "examples.researcher:make", Path(__file__).with_suffix(".json"), "Which is bigger, Paris or Rome?")
