"""``otel-agents resume SESSION_ID [PROMPT]...``: rebuild every agent of a saved session and carry on."""

from __future__ import annotations

import gzip
from pathlib import Path

import click
import orjson

from otel_agents.cli.execution import (
    attach_console,
    configure,
    execute,
    finish,
    make_llm,
    model_options,
    output_options,
    read_prompts,
    start_recording,
)
from otel_agents.cli.options import ledger_errors_are_data_errors, session_dir_or_exit, storage_options

FALLBACK_SCRIPT = "jack-and-jill"


def _read_checkpoint(path: Path):
    """The last tree.json.gz checkpoint as written (decoded once), or None when unreadable.

    An unreadable tree is load_artifacts' business (it falls back to the streams), but
    an unknown payload version must not be guessed at.
    """
    from otel_agents.persistence.store import READABLE_TREE_VERSIONS, StoreError, decode_payload

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
            raise click.UsageError(
                f"{path} has tree version {version!r}; this otel-agents reads versions 1 and 2"
            ) from None
        return None


def load_saved(session_dir: Path, session_id: str):
    """Everything resume needs, validated before anything is written (exit 2 on any problem).

    Returns ``(saved, tree, meta)``; ``tree`` is None when no run needs billing (or there is none).
    """
    from otel_agents.persistence.gc_pause import collector_paused

    with collector_paused():  # a large session is many small acyclic objects (see persistence/gc_pause.py)
        return _load_saved(session_dir, session_id)


def _load_saved(session_dir: Path, session_id: str):
    quick = _load_current(session_dir, session_id)
    if quick is not None:
        return quick
    from otel_agents.persistence.artifacts import SessionUnreadable, load_artifacts
    from otel_agents.persistence.tree_walk import records_of
    from otel_agents.resume import ResumeError, SavedSession, merge_records, saved_runs

    # Read before load_artifacts, which may rewrite a checkpoint that is merely behind.
    checkpoint = _read_checkpoint(session_dir / "tree.json.gz")
    try:
        # The caller owns the session: what a dead writer left open is recorded as interrupted.
        artifacts = load_artifacts(session_dir, owned=True, repair=True)
    except SessionUnreadable as exc:
        raise click.UsageError(str(exc)) from None
    if artifacts.damaged:  # checked before any model is called or anything billed
        raise click.UsageError(f"session {session_id} cannot be resumed: {artifacts.damaged[0]} "
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
        raise click.UsageError(f"session {session_id}: events.jsonl contradicts tree.json.gz: {exc}") from None
    from otel_agents.tracing import semconv as sc

    redacted = bool(meta.get("redacted")) or any(
        (run.get("attributes") or {}).get(sc.RUN_REDACTED_SAVE) for run in (tree or {}).get("runs", [])
    )
    try:
        runs, last = saved_runs(tree)
    except ResumeError as exc:
        raise click.UsageError(f"session {session_id}: {exc}") from None
    return SavedSession(session_id, records, runs, last, redacted=redacted), tree, artifacts.meta


def _load_current(session_dir: Path, session_id: str):
    """The quick load of a session closed cleanly: events.jsonl and meta.json, tree.json.gz only if unbilled.

    The runs are in meta.json's summary. None when the checkpoint mark does not hold (or
    anything looks wrong): the careful path decides.
    """
    from otel_agents.persistence.artifacts import current_checkpoint
    from otel_agents.persistence.store import SessionStore, StoreError
    from otel_agents.resume import ResumeError, SavedSession, merge_records, runs_from_meta

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


@ledger_errors_are_data_errors
def resume_session_command(session_id, prompts, script_name, model_opts, otlp_file, verbose, trace_llm,
                           trace_tools, paths, redacted_save: bool = False) -> int:
    """Own the session, load and check all of it, then run: nothing is called or billed before the checks."""
    from otel_agents.cli.execution import own_session

    session_dir = session_dir_or_exit(paths, session_id)
    ownership = own_session(session_dir)  # exit 2 while another process writes it
    try:
        return _resume_owned(session_dir, session_id, prompts, script_name, model_opts, otlp_file, verbose,
                             trace_llm, trace_tools, paths, ownership)
    finally:
        ownership.release()  # idempotent: a started recording has released it already


def _resume_owned(session_dir, session_id, prompts, script_name, model_opts, otlp_file, verbose, trace_llm,
                  trace_tools, paths, ownership) -> int:
    from otel_agents.llm.scripts import ScriptError, load_script
    from otel_agents.resume import ResumeError, restore_session

    saved, tree, meta = load_saved(session_dir, session_id)
    last = saved.last_run
    try:
        script = load_script(script_name or (last.script if last and last.script else FALLBACK_SCRIPT))
    except ScriptError as exc:
        raise click.UsageError(f"cannot load the session's script: {exc} (pass --script)") from None
    prompt_list = read_prompts(prompts, ())
    if not prompt_list:
        raise click.UsageError("no prompt given (as arguments, on stdin, or interactively)")
    model = model_opts.model or (last.model_override if last else None)

    from otel_agents.runtime.scenario import install_hooks, resolve_model
    from otel_agents.runtime.session import RunContext

    tracing = configure(otlp_file)
    llm = make_llm(tracing, model_opts)
    llm.use_script(script)  # the scripted model the saved agents name, if they use it
    resolved = resolve_model(script, model)
    try:
        session = restore_session(
            saved,
            model_override=None if resolved == script.model else resolved,
            script_model=script.model,  # agents on another script's scripted model move to this one's
            telemetry=tracing.telemetry,
            llm=llm,
            max_turns=model_opts.max_turns,
        )
    except ResumeError as exc:
        tracing.shutdown()
        raise click.UsageError(str(exc)) from None
    install_hooks(session, script.hooks)

    from otel_agents.persistence.artifacts import flush_unbilled, mark_billed

    from otel_agents.cli.execution import StorageUnwritable
    from otel_agents.persistence.store import StoreError, check_file_writable

    try:
        check_file_writable(paths.billing_file)  # said before anything is billed or any LLM is called
    except StoreError as exc:
        tracing.shutdown()
        raise StorageUnwritable(str(exc)) from None
    if tree is not None:
        flush_unbilled(tree, paths.billing_file)  # a crashed run is billed once, before new runs
        mark_billed(session_dir, meta)
    recording = start_recording(tracing, paths, session_id, ownership=ownership, resume=True)
    attach_console(tracing, verbose, trace_llm, trace_tools)
    context = RunContext(source="resume", script=script.source, model_override=model)
    return execute(session, prompt_list, context, tracing, recording)


@click.command()
@click.argument("session_id")
@click.argument("prompts", nargs=-1)
@click.option("--script", "script_name",
              help="Script to continue with (default: the one the session ran with). Agents on another "
                   "script's model (scripted/<name>) move to this script's; --model moves every agent. "
                   "Each change is recorded on the run (otel_agents.run.model_changes).")
@model_options
@output_options
@storage_options
def resume(session_id, prompts, script_name, model_opts, otlp_file, redacted_save, verbose, trace_llm, trace_tools,
           paths):
    """Rebuild every agent of SESSION_ID exactly as saved and run PROMPTS.

    Each resumed run is a new trace linked to the previous run, in the same session directory.
    """
    if redacted_save:
        raise click.UsageError("--redacted-save applies to new sessions only")
    finish(resume_session_command(session_id, prompts, script_name, model_opts, otlp_file, verbose,
                                  trace_llm, trace_tools, paths))
