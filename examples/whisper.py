"""Whispers: a `whisper` tool, written on the public ToolContext, tells one agent something the others never hear."""

from pathlib import Path

from otel_agents import Agent, ToolContext, tool


@tool
def whisper(to: str, text: str, ctx: ToolContext) -> str:
    """Say something to one agent only; nobody else hears it.

    to: the name of the agent told
    text: what to whisper
    """
    ctx.tell(to, f"[{ctx.agent.name} whispers]: {text}")  # recorded as a piece of text caused by this call
    return f"You whispered to {to}."


def make():
    return Agent("host", "You host a cafe chat. Use task to create Jack and Jill, then discuss to let them talk; "
                         "they can whisper to each other.", tools=[whisper])


if __name__ == "__main__":
    from examples.common import main

    main(make, "examples.whisper:make", Path(__file__).with_suffix(".json"), "Host a chat between Jack and Jill")
