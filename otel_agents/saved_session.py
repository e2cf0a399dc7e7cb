"""What resume starts from: a saved session read (by ``persistence.saved``) and checked whole before anything runs.

The quick path takes a cleanly closed session from events.jsonl and meta.json (its
checkpoint mark holds); otherwise the owner's careful load rebuilds from the journal, showing
what a dead writer left open as interrupted. Loading writes nothing: the careful load's repair
(recording those ends, rewriting a checkpoint that is behind) is handed back and made by
:func:`bill_before_resume`, once every check has passed, so a refused resume changes nothing. A
file that exists but cannot be read whole, or records that contradict the checkpoint,
are a :class:`~otel_agents.restore.ResumeError`: no model is called and nothing billed.
The CLI and the Python API both resume through :func:`load_for_resume` and
:func:`bill_before_resume` (and :func:`spent_before` and :func:`agents_spent`, what the session and
agents with a budget spent before; :func:`hooks_left_behind`, the hooks that watched it and are not back;
:func:`stopped_before_its_first_agent`, a session whose root starts afresh).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from otel_agents.persistence.gc_pause import collector_paused
from otel_agents.persistence.notices import stderr_warning
from otel_agents.persistence.repair import flush_unbilled, mark_billed, write_back
from otel_agents.persistence.session_meta import values_cut
from otel_agents.persistence.saved import LoadedSession, SessionUnreadable, load_checkpoint, load_saved
from otel_agents.persistence.store import SessionStore, StoreError, check_ledger_writable
from otel_agents.persistence.tree_file import UnknownTreeVersion
from otel_agents.persistence.tree_kinds import KIND_TOOL, STATUS_IN_PROGRESS, STATUS_INTERRUPTED
from otel_agents.persistence.tree_walk import iter_ops, records_of
from otel_agents.restore import ResumeError, SavedSession, merge_records, runs_from_meta, saved_runs
from otel_agents.tracing import semconv as sc


def _read_checkpoint(store: SessionStore) -> dict[str, Any] | None:
    """The last tree.json.gz checkpoint as written, or None when unreadable.

    An unreadable tree is load_saved's business (it falls back to the streams), but
    an unknown payload version must not be guessed at.
    """
    try:
        return store.load_tree()
    except UnknownTreeVersion as exc:
        raise ResumeError(str(exc)) from None
    except StoreError:
        return None


def load_for_resume(session_dir: Path, session_id: str):
    """Everything resume needs, validated; nothing is written (ResumeError, one line, on any problem).

    Returns ``(saved, tree, meta, repair)``; ``tree`` is None when no run needs billing (or there is
    none); ``repair``: the careful load's, for :func:`bill_before_resume` (None after the quick load).
    The caller holds the session's lock, so what is open was left by a dead writer.
    """
    with collector_paused():  # a large session is many small acyclic objects (see persistence/gc_pause.py)
        return _load(Path(session_dir), session_id)


def bill_before_resume(session_dir: Path, tree: Mapping[str, Any] | None, meta: Mapping[str, Any] | None,
                       billing_file: Path, repair: LoadedSession | None = None) -> None:
    """A resume's first writes, once every check has passed: prove the ledger writable (StoreError, one
    line), make ``repair`` (load_for_resume's: record what a dead writer left open, rewrite a checkpoint
    that is behind), and bill what a crash left unbilled, once, before new runs."""
    check_ledger_writable(billing_file)
    if repair is not None:
        meta = write_back(repair, None, stderr_warning).meta
    if tree is not None:
        flush_unbilled(tree, billing_file)
        mark_billed(Path(session_dir), meta)


def spent_before(tree: Mapping[str, Any] | None, meta: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """What the session's and the root's limits count at resume: the saved totals (``totals_before``)
    plus every LLM attempt that never completed (cancelled, interrupted), as the ledger bills them
    at zero tokens and unknown cost; from ``tree`` when loaded, else meta.json's count of them."""
    from otel_agents.llm.budget import totals_before
    from otel_agents.persistence.session_meta import UNFINISHED_LLM_CALLS
    from otel_agents.persistence.tree_totals import unfinished_llm_calls

    totals = totals_before(tree, meta)
    unfinished = unfinished_llm_calls(tree) if tree is not None else int((meta or {}).get(UNFINISHED_LLM_CALLS) or 0)
    if not unfinished:
        return totals
    totals = dict(totals or {})
    totals["llm_calls"] = int(totals.get("llm_calls") or 0) + unfinished
    return totals


def agents_spent(session_dir: Path, tree: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    """What each agent, its sub-agents included, spent in the saved session, by agent id: the tree's
    accounting (the ledger's numbers), ``tree`` as loaded for resume, else the checkpoint, read only now.
    Its ``llm_calls`` count the attempts that never completed (cut off by a kill or Ctrl-C) too, as
    :func:`spent_before` does for the session: the ledger bills them."""
    from otel_agents.persistence.tree_totals import spent_by_agent

    if tree is None:  # a closed, billed session resumes without its tree: read only when a budget needs it
        try:
            tree = SessionStore(Path(session_dir)).load_tree()
        except UnknownTreeVersion as exc:
            raise ResumeError(str(exc)) from None
        except StoreError as exc:
            raise ResumeError(f"the saved tree is needed for the agents' budgets and cannot be read: {exc}") from None
    return spent_by_agent(tree)


def stopped_before_its_first_agent(saved: SavedSession, tree: Mapping[str, Any] | None,
                                   meta: Mapping[str, Any] | None) -> bool:
    """Stopped (even by kill -9) before its root agent was made: no run, or runs that recorded nothing and made
    no call (a run killed as it began). Its root starts afresh; an imported trace of another tool, whose runs
    made model calls and recorded nothing, has nothing of ours to rebuild and is refused."""
    if any(r.get("event_type") == sc.EVENT_AGENT_CREATED for r in saved.records):
        return False
    if not saved.runs:
        return True
    totals = ((tree or {}).get("totals") or {}).get("inclusive") if tree is not None else (meta or {}).get("totals")
    if not isinstance(totals, dict):
        return False
    return not saved.records and not totals.get("llm_calls") and not totals.get("tool_calls")


def _load(session_dir: Path, session_id: str):
    quick = _load_current(session_dir, session_id)
    if quick is not None:
        return (*quick, None)
    # Read before load_saved, which may rewrite a checkpoint that is merely behind.
    checkpoint = _read_checkpoint(SessionStore(session_dir))
    try:
        # The caller owns the session: what a dead writer left open shows as interrupted (recorded later).
        loaded = load_saved(session_dir, owned=True)
    except SessionUnreadable as exc:
        raise ResumeError(str(exc)) from None
    if loaded.damaged:  # checked before any model is called or anything billed
        raise ResumeError(f"session {session_id} cannot be resumed: {loaded.damaged[0]} "
                          "(nothing was run; `otel-agents sessions verify` says more)")
    meta = loaded.meta or {}
    tree = loaded.tree
    try:
        records = merge_records(
            records_of(checkpoint) if checkpoint else [],
            records_of(tree) if tree else [],
            loaded.records,
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
    repair = loaded if loaded.event_lines is not None else None  # rebuilt from the journal
    saved = SavedSession(session_id, records, runs, last, redacted=redacted, open_tool_calls=open_tool_calls(tree),
                         truncated=values_cut(tree) if tree else _meta_cut(meta))
    return saved, tree, loaded.meta, repair


def _load_current(session_dir: Path, session_id: str):
    """The quick load of a session closed cleanly: events.jsonl and meta.json, tree.json.gz only if unbilled.

    The runs are in meta.json's summary. None when the checkpoint mark does not hold (or
    anything looks wrong): the careful path decides.
    """
    current = load_checkpoint(session_dir, tree=False)
    if current is None:
        return None
    meta = current.meta or {}
    try:
        records = merge_records(current.records)
        runs, last = runs_from_meta(meta)
        # A last run a dead writer left (repaired, billed) may hold a call that replied and never ended:
        # only the tree tells, so it is read then too.
        interrupted = meta.get("status") == STATUS_INTERRUPTED
        tree = None if current.billed and not interrupted else current.store.load_tree()
    except (StoreError, ResumeError, OSError):
        return None
    saved = SavedSession(session_id, records, runs, last, redacted=bool(meta.get("redacted")),
                         open_tool_calls=open_tool_calls(tree), truncated=_meta_cut(meta))
    return saved, tree, current.meta


def _meta_cut(meta: Mapping[str, Any]) -> int:
    from otel_agents.persistence.session_meta import TRUNCATED_VALUES

    count = meta.get(TRUNCATED_VALUES)
    return count if type(count) is int and count > 0 else 0


def open_tool_calls(tree: Mapping[str, Any] | None) -> frozenset[str]:
    """Ids of the tool calls whose span a dead writer left open: a call that replied as it went (discuss)
    has results, yet did not finish, and resume must say so."""
    unfinished = (STATUS_INTERRUPTED, STATUS_IN_PROGRESS)
    return frozenset(
        ref.op["request"]["tool_call_id"] for ref in iter_ops(tree or {})
        if ref.op.get("kind") == KIND_TOOL and ref.op.get("status") in unfinished
        and (ref.op.get("request") or {}).get("tool_call_id")
    )


def hooks_left_behind(session_dir: Path, tree: Mapping[str, Any] | None, meta: Mapping[str, Any] | None,
                      installed: set[str]) -> list[str]:
    """The hooks that watched the session and that a resume installing ``installed`` lacks, sorted.

    Hooks are code, not saved data: a session a program started without ``app=`` comes back from the
    CLI unwatched by them, and a hook that denied actions would silently stop denying them. The runs
    name their hooks (the tree's, else meta.json's union of them, which the quick path has read
    already); a session whose runs do not (saved before they did, or imported) is searched for
    the decisions its hooks recorded.
    """
    from otel_agents.persistence.session_meta import installed_hooks, meta_hooks

    named = installed_hooks(tree.get("runs") or ()) if tree is not None else meta_hooks(meta or {})
    if named is None:
        from otel_agents.persistence.tree_file import TREE_FILE
        from otel_agents.views.hook_marks import hook_names

        named = sorted(hook_names(tree, Path(session_dir) / TREE_FILE))
    return sorted(set(named) - installed)
