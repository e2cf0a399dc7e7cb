"""What resume starts from: a saved session read and checked whole before anything runs.

The quick path takes a cleanly closed session from events.jsonl and meta.json (its
checkpoint mark holds); otherwise the owner's careful load (``load_artifacts`` with
``repair``) records what a dead writer left open and rebuilds from the journal. A
file that exists but cannot be read whole, or records that contradict the checkpoint,
are a :class:`~otel_agents.restore.ResumeError`: no model is called and nothing billed.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson

from otel_agents.persistence.artifacts import SessionUnreadable, current_checkpoint, load_artifacts
from otel_agents.persistence.gc_pause import collector_paused
from otel_agents.persistence.store import READABLE_TREE_VERSIONS, SessionStore, StoreError, decode_payload
from otel_agents.persistence.tree_walk import records_of
from otel_agents.restore import ResumeError, SavedSession, merge_records, runs_from_meta, saved_runs
from otel_agents.tracing import semconv as sc


def _read_checkpoint(path: Path):
    """The last tree.json.gz checkpoint as written (decoded once), or None when unreadable.

    An unreadable tree is load_artifacts' business (it falls back to the streams), but
    an unknown payload version must not be guessed at.
    """
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        return decode_payload(data, str(path))["session"]
    except StoreError:
        try:
            version = orjson.loads(gzip.decompress(data)).get("version")
        except Exception:
            return None
        if type(version) is not int or version not in READABLE_TREE_VERSIONS:
            raise ResumeError(f"{path} has tree version {version!r}; this otel-agents reads versions 1 and 2") from None
        return None


def load_saved(session_dir: Path, session_id: str):
    """Everything resume needs, validated before anything is written (ResumeError, one line, on any problem).

    Returns ``(saved, tree, meta)``; ``tree`` is None when no run needs billing (or there is none).
    """
    with collector_paused():  # a large session is many small acyclic objects (see persistence/gc_pause.py)
        return _load_saved(session_dir, session_id)


def _load_saved(session_dir: Path, session_id: str):
    quick = _load_current(session_dir, session_id)
    if quick is not None:
        return quick
    # Read before load_artifacts, which may rewrite a checkpoint that is merely behind.
    checkpoint = _read_checkpoint(session_dir / "tree.json.gz")
    try:
        # The caller owns the session: what a dead writer left open is recorded as interrupted.
        artifacts = load_artifacts(session_dir, owned=True, repair=True)
    except SessionUnreadable as exc:
        raise ResumeError(str(exc)) from None
    if artifacts.damaged:  # checked before any model is called or anything billed
        raise ResumeError(f"session {session_id} cannot be resumed: {artifacts.damaged[0]} "
                          "(nothing was run; `otel-agents sessions verify` says more)")
    meta = artifacts.meta or {}
    tree = artifacts.tree
    try:
        records = merge_records(
            records_of(checkpoint) if checkpoint else [],
            records_of(tree) if tree else [],
            artifacts.records,
        )
    except ResumeError as exc:
        raise ResumeError(f"session {session_id}: events.jsonl contradicts tree.json.gz: {exc}") from None

    redacted = bool(meta.get("redacted")) or any(
        (run.get("attributes") or {}).get(sc.RUN_REDACTED_SAVE) for run in (tree or {}).get("runs", [])
    )
    try:
        runs, last = saved_runs(tree)
    except ResumeError as exc:
        raise ResumeError(f"session {session_id}: {exc}") from None
    return SavedSession(session_id, records, runs, last, redacted=redacted), tree, artifacts.meta


def _load_current(session_dir: Path, session_id: str):
    """The quick load of a session closed cleanly: events.jsonl and meta.json, tree.json.gz only if unbilled.

    The runs are in meta.json's summary. None when the checkpoint mark does not hold (or
    anything looks wrong): the careful path decides.
    """
    store = SessionStore(session_dir)
    current = current_checkpoint(store, with_tree=False)
    if current is None:
        return None
    meta = current.meta or {}
    try:
        records = merge_records(current.records)
        runs, last = runs_from_meta(meta)
        tree = None if current.billed else store.load_tree()
    except (StoreError, ResumeError, OSError):
        return None
    return SavedSession(session_id, records, runs, last, redacted=bool(meta.get("redacted"))), tree, current.meta
