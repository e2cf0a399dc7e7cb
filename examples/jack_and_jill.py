"""Seed 001's Jack and Jill: Jill consults her Inner voice, and a ResourceMonitor agent approves new sub-agents."""

from pathlib import Path

from otel_agents import Agent, agent_approval_hook


def make():
    main = Agent("main", "You orchestrate a small cast of characters. "
                         "Use task to create them and discuss to let them talk.")
    # The monitor is an agent: once `main` has created it, it answers every later `task` call of `main`.
    monitor = agent_approval_hook("ResourceMonitor", tools=frozenset({"task"}), agents=frozenset({"main"}))
    return main, [monitor]


if __name__ == "__main__":
    from examples.common import main

    main(make, "examples.jack_and_jill:make", Path(__file__).with_suffix(".json"),
         "Create Jack and Jill for a cafe discussion")
