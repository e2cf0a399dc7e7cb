"""What the examples share: run an app offline on the script beside it (or on a real model with --model), recorded."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable

import otel_agents
from otel_agents import Session


def main(make: Callable[[], Any], app: str, script: Path, prompt: str) -> None:
    """``python -m examples.NAME [PROMPT] [--model M] [--home DIR]``: one recorded run, resumable with
    ``otel-agents resume ID`` (the session records ``app``, so the CLI imports it again)."""
    parser = argparse.ArgumentParser(description=f"Run {app} (offline on {script.name} unless --model is given).")
    parser.add_argument("prompt", nargs="?", default=prompt)
    parser.add_argument("--model", help="any litellm model string, e.g. openai/gpt-4o-mini (its API key set)")
    parser.add_argument("--home", help="where sessions and the ledger go (default: $OTEL_AGENTS_HOME)")
    args = parser.parse_args()
    made = make()
    agent, hooks = made if isinstance(made, tuple) else (made, ())
    with otel_agents.recording(home=args.home):
        with Session(agent, hooks=hooks, script=None if args.model else script, model=args.model,
                     app=app) as session:
            print(session.run_sync(args.prompt))
    print(f"session: {session.id}", file=sys.stderr)
