"""``otel-agents send SESSION_ID --to AGENT [--source NAME] TEXT|-``: an outside event for a saved session's agent."""

from __future__ import annotations

import click

from otel_agents.arguments import SENDER_LIMIT as SOURCE_LIMIT  # the Python API's Session.send takes the same
from otel_agents.cli.execution import finish, output_options
from otel_agents.cli.model_options import model_options
from otel_agents.cli.options import not_empty, storage_options, utf8_text
from otel_agents.cli.prompts import text_or_stdin
from otel_agents.cli.resume import Delivery, resume_session_command


def _checked_source(ctx, param, value: str | None) -> str | None:
    """A sender's name is one printable line (it lands in records, spans and console lines)."""
    if value is None:
        return None
    if not value.strip() or len(value) > SOURCE_LIMIT or not value.isprintable():
        raise click.BadParameter(f"must be one printable line of 1 to {SOURCE_LIMIT} characters", ctx=ctx,
                                 param=param)
    return value


@click.command()
@click.argument("session_id")
@click.argument("text")
@click.option("--to", "agent", required=True, metavar="AGENT",
              help="Name (the most recent agent of that name), path of names from the root (main/Jill/Inner) "
                   "or id (agent_002) of the agent that receives it.")
@click.option("--source", "sender", callback=_checked_source, metavar="NAME",
              help="Who sent it (e.g. cron, ci); the record's source becomes external:NAME.")
@click.option("--script", "script_name", callback=not_empty, help="Script to continue with (default: the one the session ran with).")
@model_options
@output_options
@storage_options
def send(session_id, text, agent, sender, script_name, model_opts, otlp_file, redacted_save, verbose, trace_llm,
         trace_tools, paths):
    """Deliver TEXT to AGENT of the saved session SESSION_ID as an outside event, and run its answer.

    The event is a user message with source ``external`` (``external:NAME`` with --source) in the
    agent's transcript; the answer is a new run of the session, linked to the previous one like a
    resume, and refused (exit 2) while another live process owns the session. stdout carries the
    agent's answer. TEXT ``-`` reads the event from stdin, all of it (for text too long for an argument).
    """
    if redacted_save:
        raise click.UsageError("--redacted-save applies to new sessions only")
    text = utf8_text(text_or_stdin(text, "TEXT"), "TEXT")
    if not text.strip():
        raise click.UsageError("TEXT is empty: an outside event says something")
    utf8_text(agent, "--to")  # --source has its own check (_checked_source)
    finish(resume_session_command(session_id, (text,), script_name, model_opts, otlp_file, verbose, trace_llm,
                                  trace_tools, paths, delivery=Delivery(agent, sender)))
