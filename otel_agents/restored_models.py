"""Which model a resumed or forked agent goes on with, and how the run records each change."""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

from opentelemetry import trace

from otel_agents.tracing import semconv as sc


# Models that answer only inside the process that loaded them: a script's (``scripted/<name>``) and
# a replay's (``replay/<source>``, `otel-agents replay`). A resumed agent cannot stay on one.
PROCESS_MODELS = ("scripted/", "replay/")


def continued_model(saved_model: str, model_override: str | None, script_model: str | None) -> str:
    """The model an agent saved with ``saved_model`` continues with."""
    if model_override:
        return model_override
    if script_model and saved_model.startswith(PROCESS_MODELS):
        return script_model  # the old script's (or the replay's) model is not loaded: it would fail every call
    return saved_model


def previous_model(saved_model: str, last_model: str | None, last_script: str | None) -> str:
    """The model an agent saved with ``saved_model`` ran on in the session's last run, whose ``--model``
    (as recorded: a resume records the one it carried on) and script were ``last_model`` and ``last_script``.
    A change is said against this, not against the model the agent was created with."""
    return continued_model(saved_model, last_model, _script_model(last_script) if last_script else None)


@functools.lru_cache(maxsize=8)
def _script_model(source: str) -> str | None:
    """The scripted model of a script by name or path; None when it no longer loads (its agents' model
    is then said as saved)."""
    from otel_agents.llm.scripts import ScriptError, load_script

    try:
        return load_script(source, saved=True).model
    except ScriptError:
        return None


def carried_model(recorded: str | None) -> str | None:
    """The last run's ``--model`` that a resume or fork keeps using, or None: a replay's is never carried
    (its answers were the source's recorded ones, and outside the replay nothing answers it)."""
    return None if recorded is None or recorded.startswith("replay/") else recorded


def record_model_changes(session: Any, changes: Counter) -> None:
    """Say each change on the resumed run's root span, once, inside that run."""
    described = [f"{old} -> {new} for {count} agent{'s' if count != 1 else ''}"
                 for (old, new), count in changes.items()]

    def record() -> None:
        session.telemetry.set_attributes(trace.get_current_span(), {sc.RUN_MODEL_CHANGES: described})
        for text in described:
            session.telemetry.log("VRB", f"model changed: {text}")

    session.before_next_run.append(record)
