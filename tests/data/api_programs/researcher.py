"""A program built on the public API only: a custom tool, an approval hook, recorded offline.

python researcher.py HOME SCRIPT PROMPT -> prints the answer, then {"session": ID} on the last line.
"""

import json
import sys

import otel_agents
from otel_agents import Agent, Decision, Session, ToolContext, ToolRequest, approval, tool


@tool
def population(city: str, ctx: ToolContext) -> str:
    """How many people live in a city.

    city: the city's name
    """
    return f"{city} has {len(city)} million people (asked by {ctx.agent.name})"


@tool
def delete_notes() -> str:
    """Delete the research notes."""
    raise AssertionError("the approval hook must stop this call")


@approval(tools=["delete_notes"])
def keep_notes(request: ToolRequest) -> Decision:
    return Decision(False, "notes are kept")


home, script, prompt = sys.argv[1:4]
researcher = Agent("researcher", "You answer questions about cities.", tools=[population, delete_notes])
with otel_agents.recording(home=home):
    with Session(researcher, hooks=[keep_notes], script=script) as session:
        print(session.run_sync(prompt))
print(json.dumps({"session": session.id}))
