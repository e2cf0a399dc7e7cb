"""``otel-agents view SESSION VIEW ...``: multi-perspective views of a saved session."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click
from click.core import ParameterSource

from otel_agents.cli.options import NoSuchSession, SafePath, session_dir_or_exit, storage_options
from otel_agents.persistence.paths import Paths, home_dir
from otel_agents.terminal_text import shown


class ViewFailed(click.ClickException):
    """Unknown agent/message/span or unreadable session data: one line, exit 2."""

    exit_code = 2


@dataclass(frozen=True)
class Target:
    session: str
    paths: Paths


def _open(target: Target, sessions_dir: Path | None):
    from otel_agents.views import SessionViewer, ViewError

    paths = target.paths
    if sessions_dir is not None and click.get_current_context().get_parameter_source("sessions_dir") == ParameterSource.COMMANDLINE:
        paths = Paths.resolve(sessions_dir, paths.billing_file)
    if "/" in target.session or target.session in (".", ".."):
        path = Path(target.session)  # a session directory given by path
        if not path.is_dir():
            raise NoSuchSession(f"{target.session} is not a directory")
    else:
        path = session_dir_or_exit(paths, target.session)
    try:
        # The index of a large session is kept under the home directory, never in the session's.
        return SessionViewer.from_session_dir(path, cache_dir=home_dir() / "cache" / "views")
    except ViewError as exc:
        raise ViewFailed(str(exc)) from None


def _view_command(func):
    """A view: ``--json``, and ``--sessions-dir`` also accepted after the view's name."""
    func = click.option("--json", "as_json", is_flag=True, help="Stable JSON output (docs/views.md).")(func)
    func = click.option(
        "--sessions-dir", type=SafePath(file_okay=False, path_type=Path), hidden=True
    )(func)
    return click.pass_obj(func)


def _emit(text_or_document, as_json: bool) -> None:
    from otel_agents.views.jsonout import dumps

    if as_json:
        click.echo(dumps(text_or_document))
    else:
        click.echo(shown(text_or_document) if text_or_document else "(nothing)")  # --json keeps the exact content


def _run(view):
    """Turn a view's refusal into a one-line error with exit code 2."""
    from otel_agents.views import ViewError

    try:
        return view()
    except ViewError as exc:
        raise ViewFailed(str(exc)) from None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("session")
@storage_options
@click.pass_context
def view(ctx: click.Context, session: str, paths: Paths) -> None:
    """Views of saved SESSION (an id, or a session directory's path).

    \b
    Agents may be given by id (agent_002), name (Jill) or path (main/Jill).
    Examples:
      otel-agents view SESSION agents
      otel-agents view SESSION dialog Jack Jill --json
      otel-agents view SESSION perspective Jill
      otel-agents view SESSION trace msg_000017
      otel-agents view SESSION context 5f1c0e2a9b7d4c33
    """
    from otel_agents.persistence.gc_pause import collector_paused

    # A view builds large acyclic data (the records and what is derived from them): the cyclic
    # collector would only rescan it again and again. Paused until the command is done.
    ctx.with_resource(collector_paused())
    ctx.obj = Target(session, paths)


@view.command()
@_view_command
def agents(target: Target, as_json: bool, sessions_dir: Path | None) -> None:
    """Every agent: id, name, parent, role and model."""
    from otel_agents.views import jsonout, render

    viewer = _open(target, sessions_dir)
    infos = viewer.list_agents()
    _emit(jsonout.agents_json(viewer.session_id, infos) if as_json else render.render_agents(infos), as_json)


@view.command()
@click.argument("agent")
@click.option("--after", metavar="MESSAGE_ID", help="The transcript as it stood right after this entry (its id, or a unique start of it).")
@_view_command
def transcript(target: Target, agent: str, after: str | None, as_json: bool, sessions_dir: Path | None) -> None:
    """AGENT's transcript now (truncations applied): what its next LLM call would send."""
    from otel_agents.views import jsonout, render

    viewer = _open(target, sessions_dir)
    info = _run(lambda: viewer.agent(agent))
    lines = _run(lambda: viewer.transcript(info.agent_id, after=after))
    _emit(jsonout.transcript_json(info, lines) if as_json else render.render_transcript(lines), as_json)


@view.command()
@click.argument("agents", nargs=-1, required=True)
@_view_command
def dialog(target: Target, agents: tuple[str, ...], as_json: bool, sessions_dir: Path | None) -> None:
    """What AGENTS said and heard: each distinct content once, with its speaker."""
    from otel_agents.views import jsonout, render

    viewer = _open(target, sessions_dir)
    infos = _run(lambda: [viewer.agent(a) for a in agents])
    items = _run(lambda: viewer.extract_dialog([i.agent_id for i in infos]))
    _emit(jsonout.dialog_json(infos, items) if as_json else render.render_dialog(items), as_json)


@view.command()
@click.argument("agent")
@_view_command
def perspective(target: Target, agent: str, as_json: bool, sessions_dir: Path | None) -> None:
    """AGENT's point of view: [Heard] [Thought] [Said] [Action] [Received] [Truncated]."""
    from otel_agents.views import jsonout, render

    viewer = _open(target, sessions_dir)
    info = _run(lambda: viewer.agent(agent))
    items = viewer.extract_agent_perspective(info.agent_id)
    _emit(jsonout.perspective_json(info, items) if as_json else render.render_perspective(items), as_json)


@view.command()
@click.argument("message_id")
@_view_command
def trace(target: Target, message_id: str, as_json: bool, sessions_dir: Path | None) -> None:
    """The causality chain of MESSAGE_ID, oldest first (cause, substance, denial, tool call links)."""
    from otel_agents.views import jsonout, render

    viewer = _open(target, sessions_dir)
    steps = _run(lambda: viewer.trace_message_flow(message_id))
    _emit(jsonout.trace_json(steps[-1].message_id, steps) if as_json else render.render_trace(steps), as_json)


@view.command()
@click.argument("message_id")
@_view_command
def heard(target: Target, message_id: str, as_json: bool, sessions_dir: Path | None) -> None:
    """Every transcript entry that represents MESSAGE_ID: who heard it, when, in what form."""
    from otel_agents.views import jsonout, render

    viewer = _open(target, sessions_dir)
    original = _run(lambda: viewer.step(message_id))
    refs = viewer.trace_content_references(original.message_id)
    _emit(jsonout.heard_json(original, refs) if as_json else render.render_references(original, refs), as_json)


@view.command()
@click.argument("span_id")
@_view_command
def context(target: Target, span_id: str, as_json: bool, sessions_dir: Path | None) -> None:
    """The exact message list sent on chat span SPAN_ID, rebuilt from the session's records.

    SPAN_ID may also be an assistant entry's message id: the context that produced it.
    """
    from otel_agents.views import jsonout, render

    viewer = _open(target, sessions_dir)
    chat = _run(lambda: viewer.chat_context(span_id))
    _emit(jsonout.context_json(chat) if as_json else render.render_context(chat), as_json)
