"""Runtime test helpers: inline scripts on the real scripted provider, span-tree queries."""

from __future__ import annotations

import itertools
import uuid
from typing import Any, Iterable

import pytest

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import from_span_event


class SpanTree:
    """Finished spans as a tree: lookups by name, parent and children in start order."""

    def __init__(self, spans: Iterable[Any]):
        self.spans = sorted(spans, key=lambda s: s.start_time)
        self.by_id = {s.context.span_id: s for s in self.spans}
        self._children: dict[int | None, list[Any]] = {}
        for span in self.spans:
            parent = span.parent.span_id if span.parent is not None else None
            self._children.setdefault(parent, []).append(span)

    @property
    def roots(self) -> list[Any]:
        return [s for s in self.spans if s.parent is None or s.parent.span_id not in self.by_id]

    def parent(self, span: Any) -> Any | None:
        return self.by_id.get(span.parent.span_id) if span.parent is not None else None

    def children(self, span: Any, name: str | None = None) -> list[Any]:
        kids = self._children.get(span.context.span_id, [])
        return [k for k in kids if name is None or k.name == name]

    def named(self, name: str) -> list[Any]:
        return [s for s in self.spans if s.name == name]

    def one(self, name: str) -> Any:
        found = self.named(name)
        assert len(found) == 1, f"expected one span {name!r}, found {len(found)}"
        return found[0]

    def descendants(self, span: Any) -> list[Any]:
        out, stack = [], list(self.children(span))
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(self.children(node))
        return out

    def ancestors(self, span: Any) -> list[Any]:
        out, node = [], self.parent(span)
        while node is not None:
            out.append(node)
            node = self.parent(node)
        return out

    def nearest(self, span: Any, predicate) -> Any | None:
        return next((a for a in self.ancestors(span) if predicate(a)), None)

    def records(self) -> list[dict[str, Any]]:
        """Every seed-001 record carried by a span event, in time order."""
        found = []
        for span in self.spans:
            for event in span.events:
                record = from_span_event(event.name, dict(event.attributes))
                if record is not None:
                    found.append((event.timestamp, record))
        return [r for _, r in sorted(found, key=lambda pair: pair[0])]

    @staticmethod
    def is_scope(span: Any) -> bool:
        """Spans that carry totals: turns and agent invocations."""
        return span.name == sc.OP_TURN or span.name.startswith(sc.OP_INVOKE_AGENT + " ")

    @staticmethod
    def is_chat(span: Any) -> bool:
        return span.name.startswith(sc.OP_CHAT + " ")


_names = itertools.count(1)


@pytest.fixture
def scripted(memory_tracing, no_sleep):
    """Build a session from an inline script dict, on the real scripted provider.

    Every script gets a unique name, so tests never share scripted models.
    """
    from otel_agents.llm.client import LLMClient
    from otel_agents.llm.retry import RetryPolicy
    from otel_agents.llm.scripts import parse_script
    from otel_agents.runtime.scenario import build_session

    def make(data: dict[str, Any], *, tools=(), max_attempts: int = 4, **session_kwargs):
        data = dict(data)
        data["name"] = f"{data.get('name', 'test')}-{next(_names)}-{uuid.uuid4().hex[:6]}"
        script = parse_script(data, "inline-test-script")
        llm = LLMClient(memory_tracing.telemetry, retry=RetryPolicy(max_attempts=max_attempts), sleep=no_sleep)
        return build_session(script, tools=tools, telemetry=memory_tracing.telemetry, llm=llm, **session_kwargs)

    return make


@pytest.fixture
def span_tree(memory_tracing):
    return lambda: SpanTree(memory_tracing.spans())
