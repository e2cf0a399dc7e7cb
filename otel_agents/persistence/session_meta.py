"""What meta.json says of a session: its listing summary, how one more run updates it, and the checkpoint mark readers trust.

A few hundred bytes read by every listing (``sessions list``, the UI), so a session is
summarised without decoding its tree. ``SessionStore.write_meta`` and ``read_meta``
(store.py) write and read the file; this module decides what is in it.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from otel_agents.persistence.ownership import owner_of
from otel_agents.persistence.timestamps import iso_ts, parse_iso_ts
from otel_agents.persistence.tree_file import READABLE_TREE_VERSIONS, TREE_VERSION
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.ingress import ingress_of

if TYPE_CHECKING:
    from otel_agents.persistence.store import SessionStore

TITLE_LIMIT = 80


def title_of(tree: Mapping[str, Any]) -> str | None:
    """The session's first user prompt, shortened to one line."""
    for run in tree.get("runs", []):
        for event in run.get("events", []):
            record = event["record"]
            if record.get("event_type") == sc.EVENT_TRANSCRIPT_ENTRY and record.get("role") == "user":
                return shorten(str(record.get("content") or ""))
    return None


def shorten(text: str, limit: int = TITLE_LIMIT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def make_meta(
    tree: Mapping[str, Any],
    *,
    created_ns: int,
    updated_ns: int,
    running: bool = False,
) -> dict[str, Any]:
    """The listing summary; ``writer`` names the live process while a run is going on.

    ``last_run`` and ``redacted`` are what resume needs of the runs, so that a session
    whose checkpoint is current (see :func:`checkpoint_mark`) resumes without decoding
    tree.json.gz.
    """
    totals = tree.get("totals", {}).get("inclusive", {})
    runs = tree.get("runs", [])
    meta = {
        "id": tree.get("id"),
        "title": title_of(tree),
        "created": iso_ts(created_ns),
        "updated": iso_ts(updated_ns),
        "runs": len(runs),
        "status": "running" if running else (tree.get("status") if runs or tree.get("ops") else "new"),
        "agents": len(tree.get("agents", {})),
        "root_agent": tree.get("agent_name"),
        "totals": dict(totals),
        "writer": this_writer() if running else None,
        "last_run": run_summary(runs[-1], len(runs)) if runs else None,
    }
    _note_unfinished(meta, tree, 0)
    hooks = installed_hooks(runs)
    if hooks is not None:
        meta["hooks"] = hooks
    if any((run.get("attributes") or {}).get(sc.RUN_REDACTED_SAVE) for run in runs):
        meta["redacted"] = True
    _note_cut(meta, tree, 0)
    first = (runs[0].get("attributes") or {}) if runs else {}
    if first.get(sc.RUN_FORK_SESSION) is not None:  # lineage: only forks carry it, other meta.json is unchanged
        meta["forked_from"] = {"session": first[sc.RUN_FORK_SESSION], "message": first.get(sc.RUN_FORK_MESSAGE)}
    return meta


def meta_after_run(settled: Mapping[str, Any], run_tree: Mapping[str, Any]) -> dict[str, Any] | None:
    """``make_meta`` of a session that is ``settled``'s plus the one run of ``run_tree``, without that session's tree.

    ``settled``: ``make_meta`` of the session so far, no run in progress; ``run_tree``: the
    next run alone (``assemble_session`` of its trace), which began after every earlier
    run had ended. Its totals are folded on from the earlier ones, the same fold as over
    the whole tree. None when the run does not fit that picture (the caller then builds
    the whole tree): not exactly one run and no other operation, an undeclared or
    unexpected run index, or summary fields missing.
    """
    runs = run_tree.get("runs") or []
    if len(runs) != 1 or run_tree.get("ops"):
        return None
    run = runs[0]
    before = settled.get("runs")
    totals = settled.get("totals")
    declared = (run.get("attributes") or {}).get(sc.RUN_INDEX)
    last = settled.get("last_run")
    if (
        not isinstance(before, int) or isinstance(before, bool)
        or isinstance(declared, bool) or declared != before + 1  # the run's index, and the last one
        or (before and not (isinstance(last, dict) and last.get("index") == before))
        or not isinstance(totals, dict) or not all(key in totals for key in sc.TOTAL_KEYS)
        or not isinstance(settled.get("agents"), int) or run.get("ended_ns") is None
    ):
        return None
    from otel_agents.persistence.tree_kinds import session_status
    from otel_agents.persistence.tree_totals import fold_totals, session_entries

    meta = dict(settled)
    meta.pop("checkpoint", None)
    meta.update({
        "title": settled.get("title") if settled.get("title") is not None else title_of(run_tree),
        "runs": before + 1,
        "status": session_status(([settled.get("status")] if before else []) + [run["status"]]),
        "agents": settled["agents"] + len(run_tree.get("agents", {})),
        "root_agent": settled.get("root_agent") if before else run_tree.get("agent_name"),
        "totals": fold_totals(session_entries(runs, []), start=totals),
        "writer": None,
        "last_run": run_summary(run, before + 1),
    })
    _note_unfinished(meta, run_tree, settled.get(UNFINISHED_LLM_CALLS) or 0)
    meta.pop("hooks", None)
    earlier = installed_hooks([]) if not before else _hook_names(settled.get("hooks"))
    added = installed_hooks(runs)
    if earlier is not None and added is not None:
        meta["hooks"] = sorted(set(earlier) | set(added))
    if (run.get("attributes") or {}).get(sc.RUN_REDACTED_SAVE):
        meta["redacted"] = True
    _note_cut(meta, run_tree, settled.get(TRUNCATED_VALUES) or 0)
    return meta


def installed_hooks(runs: Iterable[Mapping[str, Any]]) -> list[str] | None:
    """The names of the hooks installed in any of ``runs``, sorted; None when a run does not say
    (recorded before runs named them, or damaged): then only the hooks' recorded decisions tell."""
    names: set[str] = set()
    for run in runs:
        listed = _hook_names((run.get("attributes") or {}).get(sc.RUN_HOOKS))
        if listed is None:
            return None
        names.update(listed)
    return sorted(names)


def meta_hooks(meta: Mapping[str, Any]) -> list[str] | None:
    """meta.json's union of the runs' hooks (see :func:`installed_hooks`); None when it has none or a damaged one."""
    return _hook_names(meta.get("hooks"))


def _hook_names(value: Any) -> list[str] | None:
    if isinstance(value, (list, tuple)) and all(isinstance(name, str) for name in value):
        return list(value)
    return None


# LLM attempts that never completed (cut off by a signal or a kill): not in ``totals``, which count only
# completed operations, yet billed by the ledger and counted by a resume's ``--max-llm-calls``.
UNFINISHED_LLM_CALLS = "unfinished_llm_calls"


def _note_unfinished(meta: dict[str, Any], tree: Mapping[str, Any], before: int) -> None:
    """``meta``'s count of unfinished LLM attempts: ``before`` plus ``tree``'s; only present when some."""
    from otel_agents.persistence.tree_totals import unfinished_llm_calls

    count = before + unfinished_llm_calls(tree)
    if count:  # only sessions with one carry it: other meta.json is unchanged
        meta[UNFINISHED_LLM_CALLS] = count
    else:
        meta.pop(UNFINISHED_LLM_CALLS, None)


# Values cut and events dropped by the sending side's export limits (``otel_agents.export.truncated`` on the
# spans collect or import received): the session holds a cap's truncation markers, or a standard limit's cut
# text without one, where values were, so it is never resumed or forked.
TRUNCATED_VALUES = "truncated_values"
# What cut them, as resume, fork and `sessions verify` say it: the count alone cannot tell which limit.
CUT_BY = ("by the sender's export limits (its caps, OTEL_AGENTS_EXPORT_VALUE_CAP and 1 MiB a span, "
          "or the standard OTEL_*_LIMIT variables)")


def values_cut(tree: Mapping[str, Any]) -> int:
    """How many of the tree's span values were cut on their way here (0 for a session recorded locally)."""
    from otel_agents.persistence.tree_walk import iter_nodes

    total = 0
    for _, node in iter_nodes(tree):
        count = (node.get("attributes") or {}).get(sc.EXPORT_TRUNCATED)
        if type(count) is int and count > 0:
            total += count
    return total


def _note_cut(meta: dict[str, Any], tree: Mapping[str, Any], before: int) -> None:
    count = before + values_cut(tree)
    if count:  # only sessions with cut values carry it: other meta.json is unchanged
        meta[TRUNCATED_VALUES] = count
    else:
        meta.pop(TRUNCATED_VALUES, None)


def this_writer() -> dict[str, Any]:
    """How meta.json names the process writing a session (for people: the lock in ownership.py decides)."""
    return {"pid": os.getpid(), "host": socket.gethostname()}


def run_summary(run: Mapping[str, Any], position: int) -> dict[str, Any]:
    """A run's root span as resume needs it: ids to link to, index to count on, script, model, app, api base, params, budget."""
    attributes = run.get("attributes") or {}
    summary = {
        "index": int(run.get("index") or position),
        "trace_id": run["trace_id"],
        "span_id": run["span_id"],
        "script": attributes.get(sc.RUN_SCRIPT),
        "model": attributes.get(sc.RUN_MODEL),
    }
    if attributes.get(sc.RUN_APP) is not None:  # only app runs carry it: other sessions' meta.json is unchanged
        summary["app"] = attributes[sc.RUN_APP]
    if attributes.get(sc.RUN_API_BASE) is not None:  # likewise only runs given --api-base: resume goes on with it
        summary["api_base"] = attributes[sc.RUN_API_BASE]
    if attributes.get(sc.RUN_PARAMS) is not None:  # likewise only runs given --param
        summary["params"] = attributes[sc.RUN_PARAMS]
    if attributes.get(sc.RUN_BUDGET) is not None:  # likewise only runs with limits: resume carries them on
        summary["budget"] = attributes[sc.RUN_BUDGET]
    if attributes.get(sc.RUN_BUDGET_CARRIED) is not None:  # a run whose limits were its own: what goes on after it
        summary["budget_carried"] = attributes[sc.RUN_BUDGET_CARRIED]
    if attributes.get(sc.SESSION_TXN) is not None:  # the console id, kept by resume and send
        summary["txn"] = attributes[sc.SESSION_TXN]
    ingress = ingress_of(attributes)
    if ingress:  # where the run came from (seed 002); runs started through the Python API have none
        summary["ingress"] = ingress
    return summary


def checkpoint_mark(store: "SessionStore") -> dict[str, Any]:
    """What a tree.json.gz just written covers: size and modification time of it and of its sources.

    Stored in the meta.json written with it. While all three files are as named, the
    checkpoint holds everything the journal and events.jsonl hold (both are only ever
    appended to, and any other change moves their size or time), so readers may take it
    as it is instead of rebuilding it.
    """
    return {
        "tree_version": TREE_VERSION,
        "files": {path.name: _stamp(path) for path in (store.tree_path, store.journal_path, store.events_path)},
    }


def checkpoint_is_current(store: "SessionStore", meta: Mapping[str, Any] | None) -> bool:
    """Whether tree.json.gz is known to hold all of the journal and events.jsonl (no writer is adding to them)."""
    if not meta or meta.get("status") == "running" or meta.get("id") != store.session_id:
        return False  # written live, or found under another name: the careful path says what is wrong
    mark = meta.get("checkpoint")
    if not isinstance(mark, dict) or mark.get("tree_version") not in READABLE_TREE_VERSIONS:
        return False
    return mark.get("files") == checkpoint_mark(store)["files"]


def _stamp(path: Path) -> list[int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return [stat.st_size, stat.st_mtime_ns]


def closed_meta(tree: Mapping[str, Any], *, created_ns: int, updated_ns: int) -> dict[str, Any]:
    """meta.json for a session no process is writing: a run that never ended is ``interrupted``."""
    meta = make_meta(tree, created_ns=created_ns, updated_ns=updated_ns, running=False)
    if meta["status"] == "in_progress":
        meta["status"] = "interrupted"
    return meta


def created_ns_of(meta: Mapping[str, Any] | None) -> int | None:
    """meta.json's ``created`` back in nanoseconds (None when absent or unreadable)."""
    created = (meta or {}).get("created")
    if not isinstance(created, str):
        return None
    try:
        return parse_iso_ts(created)
    except ValueError:
        return None


# meta.json's mark of a session saved by import or collect while a trace of it is not whole (import_sessions.py,
# span_intake.py): its runs are not billed until the rest arrives or `sessions repair` bills what there is
# (repair.mark_billed drops it).
AWAITING_TRACE = "awaiting_trace"


def writer_died(meta: Mapping[str, Any] | None, directory: Path) -> bool:
    """meta.json says a run is going on, yet no process holds the session (ownership.py): it was killed mid-run."""
    return meta is not None and meta.get("status") in ("running", "in_progress") and owner_of(directory) is None


def effective_status(meta: Mapping[str, Any], directory: Path) -> str:
    """``running`` only while a process holds the session; else a run left open is ``interrupted``, and a
    session import or collect saved before a trace of it was whole is ``incomplete`` (its tree's status
    is that of the spans that came, which need not include the failure the rest would show)."""
    if writer_died(meta, directory):
        return "interrupted"
    if meta.get(AWAITING_TRACE):
        return "incomplete"
    return str(meta.get("status") or "?")
