"""Span names, attribute keys and event names: the contract between layers.

The runtime writes these; persistence, views and resume read them back, also
from traces that travelled through a Collector or Jaeger. GenAI names follow the
OpenTelemetry GenAI semantic conventions (newest names; the deprecated
``gen_ai.system`` and ``gen_ai.usage.prompt_tokens``/``completion_tokens`` are
never emitted; tests/data/semconv_genai.json is the registry snapshot the
conformance test checks against). Project-specific facts live under ``otel_agents.*``.
"""

from __future__ import annotations

# --- span names (operation name + subject, as the conventions recommend) ---
OP_INVOKE_AGENT = "invoke_agent"
OP_CREATE_AGENT = "create_agent"
OP_CHAT = "chat"
OP_EXECUTE_TOOL = "execute_tool"
OP_TURN = "turn"  # not a GenAI operation: one iteration of an agent's loop
OP_EXTERNAL_INPUT = "external_input"  # not a GenAI operation: an outside event outside any run


def span_name(operation: str, subject: str | None = None) -> str:
    return f"{operation} {subject}" if subject else operation


# --- GenAI semantic-convention attributes ---
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_RESPONSE_ID = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_USAGE_CACHE_WRITE = GEN_AI_USAGE_CACHE_CREATION  # the name this project used before
# Emitted by otel-agents before it followed the registry; import still reads it from old traces.
LEGACY_GEN_AI_USAGE_CACHE_WRITE = "gen_ai.usage.cache_write.input_tokens"
GEN_AI_USAGE_REASONING = "gen_ai.usage.reasoning.output_tokens"
GEN_AI_USAGE_COST = "gen_ai.usage.cost"  # USD
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_AGENT_ID = "gen_ai.agent.id"
GEN_AI_AGENT_DESCRIPTION = "gen_ai.agent.description"
GEN_AI_OUTPUT_TYPE = "gen_ai.output.type"  # text: the client asks for no other format
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE = "gen_ai.tool.type"
GEN_AI_TOOL_DESCRIPTION = "gen_ai.tool.description"
# Names of the tools sent, always; with content capture on, also their descriptions and parameters.
GEN_AI_TOOL_DEFINITIONS = "gen_ai.tool.definitions"
# Opt-in content (tracing/content_capture.py), the registry's parts-based JSON as text.
GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"  # the whole context on every chat span: quadratic
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
GEN_AI_CONTENT_ATTRIBUTES = frozenset(
    {GEN_AI_INPUT_MESSAGES, GEN_AI_OUTPUT_MESSAGES, GEN_AI_SYSTEM_INSTRUCTIONS, GEN_AI_TOOL_CALL_ARGUMENTS,
     GEN_AI_TOOL_CALL_RESULT}
)
# Request parameters, only those the request set (llm/model_settings.py).
GEN_AI_REQUEST_TEMPERATURE = "gen_ai.request.temperature"  # double
GEN_AI_REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"  # int
GEN_AI_REQUEST_TOP_P = "gen_ai.request.top_p"  # double
GEN_AI_REQUEST_STOP_SEQUENCES = "gen_ai.request.stop_sequences"  # string[]
GEN_AI_REQUEST_SEED = "gen_ai.request.seed"  # int
GEN_AI_REQUEST_STREAM = "gen_ai.request.stream"  # boolean, on every chat span
GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"  # double, seconds (streaming)
ERROR_TYPE = "error.type"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"

DEPRECATED_ATTRIBUTES = frozenset(
    {"gen_ai.system", "gen_ai.usage.prompt_tokens", "gen_ai.usage.completion_tokens"}
)
# gen_ai.* names we emit that the registry does not define, each kept on purpose (docs/spans.md).
NON_STANDARD_GEN_AI = {
    GEN_AI_USAGE_COST: "cost in USD of the attempt; the registry has no cost attribute, and several "
    "backends (Langfuse, Phoenix, OpenLIT) read this name",
}

# --- project attributes ---
SESSION_ID = "otel_agents.session.id"
RUN_INDEX = "otel_agents.run.index"
RUN_SOURCE = "otel_agents.run.source"  # ingress metadata: cli | api | resume | import
RUN_SCRIPT = "otel_agents.run.script"  # scripted scenario name or path, for resume
RUN_MODEL = "otel_agents.run.model"  # model override given on the command line
RUN_PARAMS = "otel_agents.run.params"  # JSON of the request parameters every agent was given (--param), for resume
RUN_APP = "otel_agents.run.app"  # `run --app` reference (module:factory), re-imported by resume
# --api-base the run's LLM calls went to (secrets redacted, llm/api_base.py): resume, send and fork go on with it
RUN_API_BASE = "otel_agents.run.api_base"
RUN_MODEL_CHANGES = "otel_agents.run.model_changes"  # resume: "<old> -> <new> for N agents", one per change
RUN_AGENTS_EVICTED = "otel_agents.run.agents_evicted"  # agents evicted from memory since the last run ended
RUN_AGENTS_REVIVED = "otel_agents.run.agents_revived"  # evicted agents rebuilt from the saved records, likewise
# names of the hooks installed when the run started (possibly none): a resume without one of them warns
RUN_HOOKS = "otel_agents.run.hooks"
RUN_REDACTED_SAVE = "otel_agents.run.redacted_save"  # message contents were not saved (--redacted-save)
# On the network copy only (tracing/export_rules.py): how many of the span's values the export cut, and events it
# dropped, to its caps or to the standard OTEL_*_LIMIT variables.
# A session collect or import builds from such spans holds markers or cut text, not the values: never resumed.
EXPORT_TRUNCATED = "otel_agents.export.truncated"
RUN_FORK_SESSION = "otel_agents.run.fork.session"  # fork: the source session's id (on the fork's first run)
RUN_FORK_MESSAGE = "otel_agents.run.fork.message"  # fork: the source message the fork starts just after
SESSION_TXN = "otel_agents.session.txn"  # console id of the whole session: its first run's trace id prefix
# Ingress metadata (seed 002): where a run came from, on its root span and in meta.json's last_run.
INGRESS_CWD = "otel_agents.ingress.cwd"
INGRESS_ARGV = "otel_agents.ingress.argv"  # redacted (tracing/redaction.py)
INGRESS_PID = "otel_agents.ingress.pid"
INGRESS_USER = "otel_agents.ingress.user"
INGRESS_HOST = "otel_agents.ingress.host"
INGRESS_VERSION = "otel_agents.ingress.version"  # otel-agents version
INGRESS_SENDER = "otel_agents.ingress.sender"  # `send --source`, `run --watch` path: who delivered the event
INGRESS_KEYS = (INGRESS_CWD, INGRESS_ARGV, INGRESS_PID, INGRESS_USER, INGRESS_HOST, INGRESS_VERSION, INGRESS_SENDER)
RUN_BUDGET = "otel_agents.run.budget"  # JSON of the session's limits in force (--max-cost-usd ...)
# JSON of the limits a later resume carries on, on a run whose own (RUN_BUDGET) were for it alone (--budget-scope run)
RUN_BUDGET_CARRIED = "otel_agents.run.budget_carried"
RESUMED_FROM = "otel_agents.resumed_from"  # "<trace_id>:<span_id>" of the previous run root
AGENT_ID = "otel_agents.agent.id"
AGENT_PARENT_ID = "otel_agents.agent.parent_id"
AGENT_MODEL = "otel_agents.agent.model"
AGENT_TOOLS = "otel_agents.agent.tools"
CALL_PATH = "otel_agents.call_path"  # agent names from the root, "main/Jill/Inner"
TURN_INDEX = "otel_agents.turn.index"
# The model string as given to litellm (``openai/gpt-4o-mini``): gen_ai.request.model is the name the
# provider knows (``gpt-4o-mini``); resume, pricing and the ledger need the routing string.
LLM_MODEL = "otel_agents.llm.model"
LLM_ATTEMPT = "otel_agents.llm.attempt"
LLM_MAX_ATTEMPTS = "otel_agents.llm.max_attempts"
LLM_LATENCY_MS = "otel_agents.llm.latency_ms"
LLM_PRICE_SOURCE = "otel_agents.llm.price_source"  # config | litellm | unpriced
LLM_RETRYABLE = "otel_agents.llm.retryable"
# The wait a failed attempt's response asked for (Retry-After, seconds): a replay of it asks for it again
LLM_RETRY_AFTER = "otel_agents.llm.retry_after"
# What the endpoint reported (the registry has neither): the provider that actually served the call
# (a router's choice, e.g. OpenRouter's), its charge for the call in USD, and for bring-your-own-key
# calls the serving provider's own charge (llm/served.py).
LLM_SERVED_PROVIDER = "otel_agents.llm.served_provider"
LLM_UPSTREAM_COST = "otel_agents.llm.upstream_cost_usd"
LLM_UPSTREAM_INFERENCE_COST = "otel_agents.llm.upstream_inference_cost_usd"
# The price used: an id of the (table, entry) pair on every priced chat span, and the entry itself
# (JSON: model, price_source, table, date, rates) once per trace and id; the session keeps the
# entries in pricing.json, so a ledger line is re-derived from the session alone.
# The provider sent no usage with the reply: its token counts (and so its cost) are litellm's estimate,
# streamed or not (llm/responses.py). Only on such attempts.
LLM_USAGE_ESTIMATED = "otel_agents.llm.usage_estimated"
LLM_PRICE_ID = "otel_agents.llm.price_id"
LLM_PRICE_ENTRY = "otel_agents.llm.price_entry"
# A streamed attempt cut short: what had arrived before the stream ended (text and its length).
LLM_PARTIAL_OUTPUT = "otel_agents.llm.partial_output"
LLM_PARTIAL_CHARS = "otel_agents.llm.partial_chars"
LLM_STREAM_CHUNKS = "otel_agents.llm.stream_chunks"  # chunks a streamed attempt received
# The request context is the agent's transcript; refer to it instead of repeating it.
CONTEXT_AGENT_ID = "otel_agents.context.agent_id"
CONTEXT_MESSAGE_COUNT = "otel_agents.context.message_count"
CONTEXT_LAST_MESSAGE_ID = "otel_agents.context.last_message_id"
CONTEXT_CHARS = "otel_agents.context.chars"
REQUEST_TOOLS = "otel_agents.request.tools"  # JSON of the tool schemas sent: once per trace and id
REQUEST_TOOLS_ID = "otel_agents.request.tools_id"  # content id of those schemas, on every chat span
RESPONSE_MESSAGE_ID = "otel_agents.response.message_id"
RESPONSE_CHARS = "otel_agents.response.chars"
TOOL_CHARS_IN = "otel_agents.tool.chars_in"
TOOL_CHARS_OUT = "otel_agents.tool.chars_out"
TOOL_LATENCY_MS = "otel_agents.tool.latency_ms"
TOOL_CALL_MESSAGE_ID = "otel_agents.tool.call_message_id"
TOOL_RESULT_MESSAGE_ID = "otel_agents.tool.result_message_id"
TOOL_STATUS = "otel_agents.tool.status"  # ok | failed | denied
TOOL_PROVIDER = "otel_agents.tool.provider"  # the tool's server or provider label (@tool(provider=...)), if given
# The span never ended: the process writing its session died first (persistence/interrupted.py).
INTERRUPTED = "otel_agents.interrupted"
CANCELLED = "otel_agents.cancelled"  # the span ended because the run was interrupted (Ctrl-C, cancellation)

# Totals on turn and invoke_agent spans: self (this node's own LLM attempts) and
# inclusive (everything nested, sub-agents included). Each attempt is counted once
# per level, never twice.
TOTAL_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "llm_calls",
    "tool_calls",
    "cost_usd",
    "unpriced_calls",
)


def total_attr(scope: str, key: str) -> str:
    """``otel_agents.totals.self.cost_usd`` / ``otel_agents.totals.inclusive.cost_usd``."""
    return f"otel_agents.totals.{scope}.{key}"


# --- span events ---
# The seed-001 event stream: each record (its ``event_type`` below, as in events.jsonl) is also a
# span event named ``otel_agents.<event_type>``, with every field under the ``otel_agents.event.`` prefix.
EVENT_AGENT_CREATED = "agent_created"
EVENT_TRANSCRIPT_ENTRY = "transcript_entry"
EVENT_PIECE_OF_TEXT = "piece_of_text"
EVENT_TRANSCRIPT_TRUNCATED = "transcript_truncated"
# What the harness tells the user and never the model (seed 004's ``host`` sender): retries, denials,
# budget warnings, truncations. Recorded on the span that caused it; never in any model request.
EVENT_HOST_NOTICE = "host_notice"
SESSION_EVENT_TYPES = frozenset(
    {EVENT_AGENT_CREATED, EVENT_TRANSCRIPT_ENTRY, EVENT_PIECE_OF_TEXT, EVENT_TRANSCRIPT_TRUNCATED, EVENT_HOST_NOTICE}
)
HOST_NOTICE_KINDS = ("retry", "denial", "budget", "budget_warning", "truncation")


def record_event_name(event_type: str) -> str:
    """The span event name of a record type: ``otel_agents.transcript_entry``."""
    return "otel_agents." + event_type


# Span event name -> record type; the bare names are what sessions and traces saved before the
# namespacing carry, and they still import, view and resume.
RECORD_TYPE_OF_EVENT = {
    **{record_event_name(t): t for t in SESSION_EVENT_TYPES},
    **{t: t for t in SESSION_EVENT_TYPES},
}
SESSION_EVENT_NAMES = frozenset(RECORD_TYPE_OF_EVENT)
EVENT_FIELD_PREFIX = "otel_agents.event."

# Seed-002 log lines attached to the operation they concern.
EVENT_LOG = "otel_agents.log"
LOG_LEVEL = "otel_agents.log.level"  # VRB WRN ERR TRC THK FIN
LOG_MESSAGE = "otel_agents.log.message"
LOG_LEVELS = ("VRB", "WRN", "ERR", "TRC", "THK", "FIN")

EVENT_HOOK = "otel_agents.hook"
HOOK_NAME = "otel_agents.hook.name"
HOOK_KIND = "otel_agents.hook.kind"  # approval | review | transform | remind
HOOK_DECISION = "otel_agents.hook.decision"  # allow | deny | accept | reject | rewrite | remind | error
HOOK_REASON = "otel_agents.hook.reason"
HOOK_MESSAGE_ID = "otel_agents.hook.message_id"  # remind: the entry it added; an agent's approval: its answer...
HOOK_CAUSE = "otel_agents.hook.cause"  # ...and the message that triggered it

# An LLM attempt not made because a budget is spent (docs/budgets.md), on the operation that wanted it.
EVENT_BUDGET_EXHAUSTED = "otel_agents.budget.exhausted"
BUDGET_OWNER = "otel_agents.budget.owner"  # the agent whose budget is spent, or "session"
BUDGET_KIND = "otel_agents.budget.kind"  # cost | tokens | llm_calls
BUDGET_DETAIL = "otel_agents.budget.detail"  # "$X of $Y spent"

# Content attributes: dropped from network exports when content export is off.
CONTENT_ATTRIBUTES = frozenset(
    {
        *GEN_AI_CONTENT_ATTRIBUTES,
        GEN_AI_AGENT_DESCRIPTION,  # from the agent's system prompt
        LLM_PARTIAL_OUTPUT,
        LOG_MESSAGE,
        HOOK_REASON,
        INGRESS_ARGV,  # the command line holds the prompts
    }
)
CONTENT_EVENT_FIELDS = frozenset({"content", "tool_calls", "reasoning_content", "thinking_blocks"})
