"""Persistence fixtures: real sessions recorded through a real TracerProvider into a temp home."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import pytest


@dataclass
class Recorded:
    session: Any
    recorder: Any
    store: Any
    billing_file: Path
    exporter: Any
    utterances: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def spans(self):
        """The run's finished spans as the importer would see them (plain SpanData)."""
        from otel_agents.tracing.spandata import from_readable

        return [from_readable(s) for s in self.exporter.get_finished_spans()]


def three_level_script(name: str = "three-levels") -> dict:
    """main -> A -> B -> C, each created by ``task`` with a user prompt, so each answers at once."""
    def delegate(child: str) -> dict:
        return {"tool_calls": [{"name": "task", "arguments": {"name": child, "system_prompt": f"You are {child}.",
                                                             "user_prompt": f"Hello {child}, report back."}}]}

    return {
        "name": name,
        "root": {"name": "main", "system_prompt": "You delegate."},
        "prompts": ["Go three levels deep"],
        "agents": {
            "main": [delegate("A"), "All three levels answered."],
            "A": [delegate("B"), "A: B answered."],
            "B": [delegate("C"), "B: C answered."],
            "C": ["C here, at the bottom."],
        },
    }


def fan_out_script(n: int, name: str | None = None) -> dict:
    """main creates n sub-agents one turn at a time; each answers its first prompt."""
    turns = [
        {"tool_calls": [{"name": "task", "arguments": {"name": f"Helper{i}", "system_prompt": "You help.",
                                                       "user_prompt": f"Task number {i}: say hi."}}]}
        for i in range(n)
    ]
    return {
        "name": name or f"fan-out-{n}",
        "root": {"name": "main"},
        "agents": {"main": turns + ["Everyone answered."]},
    }


@pytest.fixture
def write_script(tmp_path):
    def write(data: dict) -> Path:
        path = tmp_path / f"{data['name']}.json"
        path.write_text(json.dumps(data))
        return path

    return write


@pytest.fixture
def record(home, monkeypatch, write_script):
    """Run prompts against a script (built-in name or dict) with a SessionRecorder attached.

    The provider is the one ``run`` uses (configure_tracing), plus an in-memory
    exporter on the same provider to compare the live tree with a rebuilt one.
    """
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    providers = []

    def run(
        script: str | dict = "jack-and-jill",
        prompts: Iterable[str] | None = None,
        *,
        sessions_dir: Path | None = None,
        billing_file: Path | None = None,
        policy=None,
        tools=(),
        max_turns: int = 20,
        prepare=None,
        attach=None,
        ready=None,
        between=None,
    ) -> Recorded:
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        from otel_agents.llm.client import LLMClient
        from otel_agents.llm.scripts import load_script
        from otel_agents.persistence.paths import Paths
        from otel_agents.persistence.recorder import CheckpointPolicy, SessionRecorder
        from otel_agents.persistence.store import SessionStore
        from otel_agents.runtime.scenario import build_session
        from otel_agents.runtime.session import RunContext
        from otel_agents.tracing.setup import TracingOptions, configure_tracing

        loaded = load_script(str(write_script(script)) if isinstance(script, dict) else script)
        tracing = configure_tracing(TracingOptions(batch=False))
        providers.append(tracing)
        exporter = InMemorySpanExporter()
        tracing.add_processor(SimpleSpanProcessor(exporter))

        async def no_sleep(seconds):
            return None

        llm = LLMClient(tracing.telemetry, sleep=no_sleep)
        session = build_session(loaded, telemetry=tracing.telemetry, llm=llm, max_turns=max_turns, tools=tools)
        paths = Paths.resolve(sessions_dir, billing_file)
        store = SessionStore.create(paths.sessions_dir, session.id)
        warnings: list[str] = []
        if prepare is not None:
            prepare(store)
        recorder = SessionRecorder(
            store, session.id, billing_file=paths.billing_file, policy=policy or CheckpointPolicy(), warn=warnings.append
        )
        tracing.add_processor(recorder)
        tracing.add_listener(recorder)
        # attach(tracing, session) may add another recorder; what it returns is closed after the runs.
        extra = attach(tracing, session) if attach is not None else None
        recorded = Recorded(session, recorder, store, paths.billing_file, exporter, warnings=warnings)
        if ready is not None:
            ready(recorder)  # e.g. the idle moments a recorder process has before the first message
        prompt_list = list(prompts) if prompts is not None else list(loaded.prompts) or ["Go"]
        for number, prompt in enumerate(prompt_list):
            if number and between is not None:
                between(session)  # e.g. an outside event between two runs
            context = RunContext(source="cli", script=loaded.source)
            recorded.utterances.append(str(asyncio.run(session.run(prompt, context=context))))
        recorder.close()
        if extra is not None:
            extra.close()
        return recorded

    yield run
    for tracing in providers:
        tracing.shutdown()


@pytest.fixture
def scripts():
    class Scripts:
        three_levels = staticmethod(three_level_script)
        fan_out = staticmethod(fan_out_script)

    return Scripts
