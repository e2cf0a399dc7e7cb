"""An application with its own TracerProvider and exporter runs a recorded session with ``async with``.

python own_provider.py HOME SCRIPT -> one JSON line: the span names its own exporter received and the session id.
"""

import asyncio
import json
import sys

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otel_agents
from otel_agents import Agent, Session

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
app = trace.get_tracer("my-app")


async def main(home: str, script: str) -> str:
    with app.start_as_current_span("app: before"):
        pass
    async with otel_agents.recording(home=home):
        with app.start_as_current_span("app: during"):
            async with Session(Agent("researcher"), script=script) as session:
                await session.run("What is the largest city?")
    with app.start_as_current_span("app: after"):
        pass
    return session.id


session_id = asyncio.run(main(*sys.argv[1:3]))
provider.shutdown()
print(json.dumps({"session": session_id, "spans": [s.name for s in exporter.get_finished_spans()]}))
