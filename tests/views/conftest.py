"""View-test fixtures: the seed-001 examples verbatim, and real scripted sessions saved as session directories.

Scripted sessions run the real runtime (litellm's real path with the offline
``scripted`` provider) into an in-memory TracerProvider; events.jsonl lines are
encoded by the real events-file encoder and tree.json.gz by the real tree builder.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import orjson
import pytest

from otel_agents.persistence.events_file import encode_line
from otel_agents.persistence.store import encode_payload
from otel_agents.persistence.tree import build_tree
from otel_agents.tracing.spandata import SpanData, from_readable, hex_span_id, hex_trace_id
from otel_agents.views import SessionViewer
from support.seed_examples import seed_records


@pytest.fixture
def seed_viewer() -> Callable[[int], SessionViewer]:
    return lambda number: SessionViewer(seed_records(number))


class EventsCapture:
    """A live listener that keeps what the recorder writes: the events.jsonl line of each record."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def on_record(self, span, record, ts_ns) -> None:
        ctx = span.get_span_context()
        trace_id = hex_trace_id(ctx.trace_id) if ctx.is_valid else None
        span_id = hex_span_id(ctx.span_id) if ctx.is_valid else None
        self.lines.append(encode_line(record, ts_ns, trace_id, span_id))

    def on_log(self, span, level, message, ts_ns) -> None:
        pass


@dataclass
class SavedSession:
    session: Any  # otel_agents.runtime.session.Session
    lines: list[bytes]
    spans: list[SpanData]
    outputs: list[str] = field(default_factory=list)

    @property
    def events(self) -> list[dict[str, Any]]:
        return [orjson.loads(line) for line in self.lines]

    @property
    def tree(self) -> dict[str, Any]:
        return {"version": 1, "session": build_tree(self.spans, self.session.id), "meta": {}}

    def viewer(self) -> SessionViewer:
        return SessionViewer(self.events, self.tree, session_id=self.session.id)

    def save(self, sessions_dir: Path, *, journal: bool = False) -> Path:
        """events.jsonl and tree.json.gz; with ``journal``, spans.jsonl too, in the journal's own line shapes."""
        path = sessions_dir / self.session.id
        path.mkdir(parents=True)
        (path / "events.jsonl").write_bytes(b"".join(self.lines))
        (path / "tree.json.gz").write_bytes(encode_payload(self.tree))
        if journal:
            from otel_agents.persistence import journal as spans_journal

            lines = [spans_journal.context_line(self.spans[0].resource, self.spans[0].scope)]
            lines += [line for span in self.spans for line in spans_journal.span_lines(span)]
            (path / spans_journal.JOURNAL_FILE).write_bytes(b"".join(map(spans_journal.encode, lines)))
        return path

    def chat_spans(self) -> list[SpanData]:
        return [s for s in self.spans if s.name.startswith("chat ")]


@pytest.fixture
def scripted_session(memory_tracing):
    """``await run(script_dict, prompts, setup=..., between=..., capture=True)`` -> SavedSession.

    ``setup(session)`` runs before the first prompt (e.g. to add hooks);
    ``between(session, tracer)`` runs after every prompt but the last (e.g. to truncate).
    """
    from otel_agents.llm.client import LLMClient
    from otel_agents.llm.retry import RetryPolicy
    from otel_agents.llm.scripts import parse_script
    from otel_agents.runtime.scenario import build_session

    async def no_sleep(_seconds: float) -> None:
        return None

    async def run(
        script: dict[str, Any], prompts: list[str], *, setup=None, between=None, tools=(), capture: bool = True
    ) -> SavedSession:
        capture_listener = EventsCapture()
        memory_tracing.telemetry.listeners.append(capture_listener)
        llm = LLMClient(
            memory_tracing.telemetry, retry=RetryPolicy(max_attempts=3), capture_input_messages=capture, sleep=no_sleep
        )
        session = build_session(
            parse_script(script, f"test:{script['name']}"), telemetry=memory_tracing.telemetry, llm=llm, tools=tools
        )
        if setup is not None:
            setup(session)
        outputs = []
        for number, prompt in enumerate(prompts):
            outputs.append(str(await session.run(prompt)))
            if between is not None and number < len(prompts) - 1:
                between(session, memory_tracing.telemetry.tracer)
        spans = [from_readable(s) for s in memory_tracing.spans()]
        return SavedSession(session, capture_listener.lines, spans, outputs)

    return run


def load_builtin_script(name: str) -> dict[str, Any]:
    from importlib import resources

    return json.loads(resources.files("otel_agents.llm").joinpath("scripts", f"{name}.json").read_text())


@pytest.fixture
def jack_and_jill_script() -> dict[str, Any]:
    return load_builtin_script("jack-and-jill")
