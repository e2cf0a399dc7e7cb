"""Other instrumentations' GenAI traces in the shape the session tree reads: aliases mapped, agents made runs.

Three steps, all pure and deterministic (re-importing a file gives the same spans):

- attributes: OpenInference (``openinference.span.kind``, ``llm.token_count.*``,
  ``llm.model_name``), OpenLLMetry (``traceloop.span.kind``, ``llm.request.type``,
  the deprecated ``gen_ai.system`` and ``gen_ai.usage.prompt_tokens``) and older
  GenAI names gain the current GenAI key beside them; an existing key always wins
  and no original key is removed;
- agents: the outermost ``invoke_agent`` spans of a trace become its runs, wherever
  they sat (under an HTTP server span, a workflow span); the parent they had is kept
  under ``otel_agents.import.original_parent_span_id``;
- a trace with ``chat`` or ``execute_tool`` spans and no agent span at all gets a
  synthetic root agent named after the service (``service.name``), marked
  ``otel_agents.import.synthetic``, holding the outermost of those spans; an agent
  span that carries usage and has no ``chat`` span under it (the OpenAI Agents SDK's
  shape) gets a synthetic ``chat`` child carrying that usage, so it is billed once.

otel-agents' own spans (each names its agent or session) are never re-parented or given
synthetic spans: a file holding part of one of our traces (a Collector's rotated files)
lacks spans that another part brings, and the whole must give the live session's tree.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.decoding import derived_id
from otel_agents.tracing.spandata import SpanData

ORIGINAL_PARENT_SPAN_ID = "otel_agents.import.original_parent_span_id"
SYNTHETIC = "otel_agents.import.synthetic"  # a span no instrumentation sent: made by import
# Operations that are one call to a model (the conventions' inference operations).
LLM_OPERATIONS = frozenset({sc.OP_CHAT, "text_completion", "generate_content"})
_GENAI_OPERATIONS = LLM_OPERATIONS | {sc.OP_EXECUTE_TOOL}

# OpenInference's span kinds and OpenLLMetry's (traceloop.span.kind) as GenAI operations.
_KIND_OPERATIONS = {
    "openinference.span.kind": {"LLM": sc.OP_CHAT, "TOOL": sc.OP_EXECUTE_TOOL, "AGENT": sc.OP_INVOKE_AGENT},
    "traceloop.span.kind": {"agent": sc.OP_INVOKE_AGENT, "tool": sc.OP_EXECUTE_TOOL},
}
# OpenLLMetry's request type on its LLM spans.
_REQUEST_TYPES = {"chat": sc.OP_CHAT, "completion": "text_completion"}

# The current GenAI key <- the keys other instrumentations (or older conventions) use, in preference order.
_ALIASES: dict[str, tuple[str, ...]] = {
    sc.GEN_AI_REQUEST_MODEL: ("llm.model_name", "llm.request.model"),
    sc.GEN_AI_RESPONSE_MODEL: ("llm.response.model",),
    sc.GEN_AI_PROVIDER_NAME: ("gen_ai.system", "llm.provider", "llm.system"),
    sc.GEN_AI_USAGE_INPUT_TOKENS: ("gen_ai.usage.prompt_tokens", "llm.token_count.prompt", "llm.usage.prompt_tokens"),
    sc.GEN_AI_USAGE_OUTPUT_TOKENS: (
        "gen_ai.usage.completion_tokens", "llm.token_count.completion", "llm.usage.completion_tokens",
    ),
    sc.GEN_AI_USAGE_CACHE_READ: (
        "gen_ai.usage.cache_read_input_tokens", "llm.token_count.prompt_details.cache_read",
    ),
    sc.GEN_AI_USAGE_CACHE_WRITE: (
        "gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_creation_input_tokens",
        "llm.token_count.prompt_details.cache_write",
    ),
    sc.GEN_AI_USAGE_REASONING: ("llm.token_count.completion_details.reasoning",),
    sc.GEN_AI_CONVERSATION_ID: ("session.id",),
    sc.GEN_AI_TOOL_NAME: ("tool.name",),
    sc.GEN_AI_AGENT_NAME: ("agent.name",),
}
USAGE_KEYS = (
    sc.GEN_AI_USAGE_INPUT_TOKENS, sc.GEN_AI_USAGE_OUTPUT_TOKENS, sc.GEN_AI_USAGE_CACHE_READ,
    sc.GEN_AI_USAGE_CACHE_WRITE, sc.GEN_AI_USAGE_REASONING,
)


def operation_of(span: SpanData) -> str:
    """The GenAI operation of a span: its ``gen_ai.operation.name``, else its name's first word."""
    return str(span.attributes.get(sc.GEN_AI_OPERATION_NAME) or span.name.split(" ", 1)[0])


def has_usage(attributes: Mapping[str, Any]) -> bool:
    return any(_is_count(attributes.get(key)) for key in (sc.GEN_AI_USAGE_INPUT_TOKENS, sc.GEN_AI_USAGE_OUTPUT_TOKENS))


def _is_count(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def mapped_attributes(span: SpanData) -> dict[str, Any]:
    """The span's attributes plus the current GenAI keys its other-convention keys imply."""
    attrs = span.attributes
    added: dict[str, Any] = {}
    for key, aliases in _ALIASES.items():
        if key in attrs:
            continue
        if key in USAGE_KEYS:
            # The first alias present is the count, checked like the key itself (import_checks.py refuses a bad
            # one): skipping it for the next alias, or for none, would bill fewer tokens than the trace says.
            # Mapped only if valid, for a caller that skipped the checks.
            alias = usage_alias(attrs, key)
            if alias is not None and _is_token_count(attrs[alias]):
                added[key] = attrs[alias]
            continue
        for alias in aliases:
            if alias in attrs and _is_name(attrs[alias]):
                added[key] = attrs[alias]
                break
    if sc.GEN_AI_OPERATION_NAME not in attrs:
        operation = _operation_from_kinds(attrs)
        if operation is not None:
            added[sc.GEN_AI_OPERATION_NAME] = operation
    operation = added.get(sc.GEN_AI_OPERATION_NAME) or operation_of(span)
    entity = attrs.get("traceloop.entity.name") or span.name
    if operation == sc.OP_INVOKE_AGENT and sc.GEN_AI_AGENT_NAME not in attrs and sc.GEN_AI_AGENT_NAME not in added:
        if " " not in span.name or attrs.get("traceloop.entity.name"):  # "invoke_agent X" names X already
            added[sc.GEN_AI_AGENT_NAME] = entity
    if operation == sc.OP_EXECUTE_TOOL and sc.GEN_AI_TOOL_NAME not in attrs and sc.GEN_AI_TOOL_NAME not in added:
        if " " not in span.name or attrs.get("traceloop.entity.name"):
            added[sc.GEN_AI_TOOL_NAME] = entity
    return {**attrs, **added} if added else attrs


def usage_alias(attributes: Mapping[str, Any], key: str) -> str | None:
    """The other-convention key whose value becomes the token count ``key``: the first one present, when
    ``key`` itself is absent (import_checks.py holds it to ``key``'s rule), else None."""
    if key in attributes:
        return None
    return next((alias for alias in _ALIASES[key] if alias in attributes), None)


def _is_token_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


def _is_name(value: Any) -> bool:
    """A name or id another convention gives is mapped only when it is a non-empty string (one that is not
    stays where it was, under its own key: no count is read from it)."""
    return isinstance(value, str) and value != ""


def _operation_from_kinds(attrs: Mapping[str, Any]) -> str | None:
    for key, operations in _KIND_OPERATIONS.items():
        operation = operations.get(str(attrs.get(key)))
        if operation is not None:
            return operation
    request_type = attrs.get("llm.request.type")
    if request_type is not None:
        return _REQUEST_TYPES.get(str(request_type))
    return None


def understood(spans: Iterable[SpanData]) -> list[SpanData]:
    """The spans in the session tree's shape, in the same order, then any synthetic spans.

    Spans already in our shape come back unchanged (their runs are trace roots, their
    keys are the current ones, and an agent of ours is never lifted: in part of a trace,
    one whose parent agent is missing is a sub-agent, not a run).
    """
    mapped = [_with_attributes(span, mapped_attributes(span)) for span in spans]
    by_trace: dict[str, list[int]] = {}
    for position, span in enumerate(mapped):
        by_trace.setdefault(span.trace_id, []).append(position)
    extra: list[SpanData] = []
    for positions in by_trace.values():
        extra.extend(_shape_trace(mapped, positions))
    return mapped + extra


def _with_attributes(span: SpanData, attributes: dict[str, Any]) -> SpanData:
    return span if attributes is span.attributes else dataclasses.replace(span, attributes=attributes)


def _shape_trace(spans: list[SpanData], positions: list[int]) -> list[SpanData]:
    """Re-parent the trace's outermost agents (in place in ``spans``); the synthetic spans it needs."""
    index = {spans[p].span_id: p for p in positions}
    agents = [p for p in positions if operation_of(spans[p]) == sc.OP_INVOKE_AGENT]
    if agents:
        inside_agent = _inside(spans, positions, index, {sc.OP_INVOKE_AGENT})
        for p in agents:
            # Ours are never lifted: our runs are trace roots already, and one of our agents under no
            # agent is a sub-agent whose parent agent is in a part of the trace not read yet.
            if spans[p].parent_span_id in index and not inside_agent[p] and not _ours(spans[p]):
                spans[p] = _lifted(spans[p], None)
        return _usage_children(spans, positions, index)
    work = [p for p in positions if operation_of(spans[p]) in _GENAI_OPERATIONS]
    if not work or any(_ours(spans[p]) for p in positions):
        return []  # ours without an agent: part of a run whose agent spans are in a part not read yet
    inside_work = _inside(spans, positions, index, _GENAI_OPERATIONS)
    outermost = [p for p in work if not inside_work[p]]
    root = _synthetic_root(spans, positions, outermost)
    for p in outermost:
        spans[p] = _lifted(spans[p], root.span_id)
    return [root]


def _ours(span: SpanData) -> bool:
    """A span otel-agents made (every one names its agent or its session)."""
    return sc.AGENT_ID in span.attributes or sc.SESSION_ID in span.attributes


def _inside(spans: list[SpanData], positions: list[int], index: dict[str, int], operations: set | frozenset) -> dict[int, bool]:
    """Whether each span has an ancestor doing one of ``operations``: one walk per chain, remembered,
    so a 100,000-span trace costs its size, not its size times its depth."""
    known: dict[int, bool] = {}
    for start in positions:
        path: list[int] = []
        on_path: set[int] = set()
        p: int | None = start
        answer = False
        while p is not None and p not in known:
            path.append(p)
            on_path.add(p)
            parent = index.get(spans[p].parent_span_id) if spans[p].parent_span_id else None
            if parent is not None and operation_of(spans[parent]) in operations:
                answer = True
                break
            if parent is not None and parent in on_path:  # decoded sets have no cycles; never loop anyway
                break
            p = parent
        else:
            if p is not None:
                answer = known[p] or operation_of(spans[p]) in operations
        # Every span on the path shares the answer once a doing ancestor is above them all.
        for q in path:
            known[q] = answer
    return known


def _lifted(span: SpanData, parent: str | None) -> SpanData:
    """The span under ``parent``; the parent it had is kept (a trace root had none to keep)."""
    attributes = span.attributes
    if span.parent_span_id is not None and ORIGINAL_PARENT_SPAN_ID not in attributes:
        attributes = {**attributes, ORIGINAL_PARENT_SPAN_ID: span.parent_span_id}
    return dataclasses.replace(span, parent_span_id=parent, attributes=attributes)


def _synthetic_root(spans: list[SpanData], positions: list[int], held: list[int]) -> SpanData:
    """An ``invoke_agent <service>`` span over the trace's GenAI spans, its id derived from the trace's."""
    first = spans[held[0]]
    service = next((str(spans[p].resource.get("service.name")) for p in held if spans[p].resource.get("service.name")), "")
    name = service or "agent"
    ends = [spans[p].end_ns for p in held]
    return SpanData(
        trace_id=first.trace_id,
        span_id=derived_id(f"{first.trace_id}:synthetic-agent", 8),
        parent_span_id=None,
        name=sc.span_name(sc.OP_INVOKE_AGENT, name),
        kind="INTERNAL",
        start_ns=min(spans[p].start_ns for p in held),
        end_ns=None if None in ends else max(ends),
        attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.GEN_AI_AGENT_NAME: name, SYNTHETIC: True},
        status="UNSET",  # a failed call may have been retried: the agent's outcome is not known
        resource=dict(first.resource),
        scope=first.scope,
    )


def _usage_children(spans: list[SpanData], positions: list[int], index: dict[str, int]) -> list[SpanData]:
    """A synthetic ``chat`` child for each agent span with usage and no model call under it."""
    has_llm_below: set[str] = set()
    for p in positions:
        if operation_of(spans[p]) in LLM_OPERATIONS:
            parent = spans[p].parent_span_id
            # Stop at a span already marked: everything above it is marked too (linear overall).
            while parent in index and parent not in has_llm_below:
                has_llm_below.add(parent)
                parent = spans[index[parent]].parent_span_id
    out = []
    for p in positions:
        span = spans[p]
        if operation_of(span) != sc.OP_INVOKE_AGENT or span.span_id in has_llm_below or not has_usage(span.attributes):
            continue
        if _ours(span):  # our agents' usage is their chat spans' sum: those are in a part not read yet
            continue
        model = span.attributes.get(sc.GEN_AI_REQUEST_MODEL)
        carried = (*USAGE_KEYS, sc.GEN_AI_REQUEST_MODEL, sc.GEN_AI_RESPONSE_MODEL, sc.GEN_AI_PROVIDER_NAME,
                   sc.GEN_AI_RESPONSE_FINISH_REASONS, sc.GEN_AI_USAGE_COST, sc.LLM_PRICE_SOURCE)
        attributes = {k: span.attributes[k] for k in carried if k in span.attributes}
        attributes.update({sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT, SYNTHETIC: True})
        out.append(dataclasses.replace(
            span,
            span_id=derived_id(f"{span.trace_id}:{span.span_id}:synthetic-chat", 8),
            parent_span_id=span.span_id,
            name=sc.span_name(sc.OP_CHAT, str(model) if model else None),
            kind="CLIENT",
            attributes=attributes,
            events=(),
            links=(),
        ))
    return out
