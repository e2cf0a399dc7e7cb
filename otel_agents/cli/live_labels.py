"""Path labels for live spans, assigned when each span starts.

Console lines need the tree position of a span the moment it starts, and
rebuilding the tree per line would be quadratic. This processor applies the
tree's own numbering rules (see :mod:`otel_agents.persistence.tree_paths`) in start
order: turns of a session by order, operations of a turn ``t-k``, operations
outside any turn ``0-k``, nested operations ``…-k``, and ``.`` into the child
session of a sub-agent invocation. Tests check it against ``build_tree``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otel_agents.persistence.tree_paths import Position, label_of
from otel_agents.tracing import semconv as sc

RUN_LABEL = "run"  # a run's root: the whole trace, not an operation inside it


@dataclass
class _Node:
    kind: str  # session | turn | op
    prefix: Position
    segment: tuple[int, ...] = ()
    turns: int = 0
    outside_ops: int = 0
    ops: int = 0


def _operation(span: Span) -> str:
    attributes = span.attributes or {}
    return str(attributes.get(sc.GEN_AI_OPERATION_NAME) or span.name.split(" ", 1)[0])


@dataclass
class LivePathLabels(SpanProcessor):
    _nodes: dict[int, _Node] = field(default_factory=dict)
    # span id -> tree position (None: a run's root); turned into a label only when a line asks
    _positions: dict[int, Position | None] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def label_of(self, span_id_hex: str) -> str | None:
        try:
            position = self._positions[int(span_id_hex, 16)]
        except (KeyError, ValueError):
            return None
        return RUN_LABEL if position is None else label_of(position)

    def on_start(self, span: Span, parent_context=None) -> None:
        span_id = span.context.span_id
        operation = _operation(span)
        with self._lock:
            parent = self._nodes.get(span.parent.span_id) if span.parent is not None else None
            if parent is None:
                if operation == sc.OP_INVOKE_AGENT:
                    self._nodes[span_id] = _Node("session", ())
                    self._positions[span_id] = None
                return
            if parent.kind == "session" and operation == sc.OP_TURN:
                parent.turns += 1
                node = _Node("turn", parent.prefix, (parent.turns,))
                self._nodes[span_id] = node
                self._positions[span_id] = parent.prefix + ((parent.turns,),)
                return
            if parent.kind == "session":
                parent.outside_ops += 1
                segment = (0, parent.outside_ops)
            else:
                parent.ops += 1
                segment = parent.segment + (parent.ops,)
            self._positions[span_id] = parent.prefix + (segment,)
            if operation == sc.OP_INVOKE_AGENT:
                self._nodes[span_id] = _Node("session", parent.prefix + (segment,))
            else:
                self._nodes[span_id] = _Node("op", parent.prefix, segment)

    def on_end(self, span: ReadableSpan) -> None:
        # Children start before their parent ends; the structure can go, the label stays.
        with self._lock:
            self._nodes.pop(span.context.span_id, None)
