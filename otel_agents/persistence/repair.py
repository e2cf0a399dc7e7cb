"""Recovering a session its writer left unfinished: the one place, besides resume, that rewrites it.

Run by the session's owner (the caller holds its lock, ownership.py): the ends of
spans the dead writer left open are recorded as interrupted, tree.json.gz and
meta.json are rewritten from the journal when they are behind it, and the runs
not yet billed are billed once (ledger record ids make that idempotent).
"""

from __future__ import annotations

from pathlib import Path

from otel_agents.persistence.artifacts import flush_unbilled, load_artifacts, mark_billed
from otel_agents.persistence.notices import Warn


def repair_session(directory: Path, billing_file: Path, warn: Warn) -> list[str]:
    """What was changed, one line each (empty: nothing needed it). ValueError (one line) if unreadable."""
    artifacts = load_artifacts(directory, warn, owned=True, repair=True)
    if artifacts.damaged:
        raise ValueError(artifacts.damaged[0])
    changes = []
    if artifacts.interrupted:
        changes.append(f"recorded {artifacts.interrupted} span(s) left open as interrupted in spans.jsonl")
    if artifacts.recovered:
        changes.append("rewrote tree.json.gz and meta.json from spans.jsonl and events.jsonl")
    if artifacts.tree is not None and not artifacts.billed:
        billed = flush_unbilled(artifacts.tree, Path(billing_file))
        if billed:
            changes.append(f"billed {billed} ledger record(s) of runs that had not been billed")
        mark_billed(Path(directory), artifacts.meta)
    return changes
