"""One LLM call = one or more attempts, each its own ``chat {model}`` CLIENT span.

Transient failures (429 honouring Retry-After, 5xx, timeouts, connection errors)
are retried with exponential backoff and jitter; others are not. The request
context is referred to by the transcript ids it consists of, not repeated.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable
from urllib.parse import unquote, urlparse

from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_agents.llm.api_base import sent_api_base
from otel_agents.llm.price_snapshot import PriceEntries
from otel_agents.llm.providers import provider_of, request_model_of
from otel_agents.llm.pricing import PRICE_SOURCE_UNPRICED, NonFiniteCost, PriceTable, Usage
from otel_agents.llm.responses import (IN_PROCESS_PREFIXES, MalformedReply, assistant_message, estimate_usage,
                                       usage_invalid, usage_missing, usage_of)
from otel_agents.llm.retry import RetryPolicy, error_text, error_type, is_transient, retry_after_seconds
from otel_agents.llm.served import served_attributes
from otel_agents.llm.accounting import charge_llm
from otel_agents.llm.budget import check as check_budgets, counted_cost, refusal as budget_refusal
from otel_agents.llm.budget import tell_warnings as tell_budget_warnings
from otel_agents.llm.model_settings import ModelSettings
from otel_agents.llm.tool_definitions import ToolDefinitions
from otel_agents.llm.streaming import (STREAM_OPTIONS, StreamCutShort, StreamProgress, assemble, read_stream, text_listener,
                                       usage_sent)
from otel_agents.tracing import content_capture, semconv as sc
from otel_agents.tracing.credentials import add_credential
from otel_agents.tracing.redaction import redact_text
from otel_agents.tracing.telemetry import RecordingLost, Telemetry, marks_cancellation

META_AGENT_NAME = "otel_agents_agent_name"
META_ATTEMPT = "otel_agents_attempt"
DEFAULT_TIMEOUT_S = 120.0

class LLMCallFailed(RuntimeError):
    """All attempts failed; says model, attempts and last cause."""

    def __init__(self, model: str, attempts: int, cause: BaseException):
        self.model = model
        self.attempts = attempts
        self.cause = cause
        plural = "s" if attempts != 1 else ""
        # Provider errors may quote the API key ("Incorrect API key provided: sk-..."); this text reaches stderr.
        super().__init__(
            redact_text(f"model {model!r} failed after {attempts} attempt{plural}: {_short(error_text(cause))}")
        )


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class ChatRequest:
    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    agent_name: str
    agent_id: str
    session_id: str
    context_last_message_id: str | None
    settings: ModelSettings | None = None  # request parameters; unset fields are not sent


@dataclass
class ChatResult:
    message: dict[str, Any]  # verbatim assistant message, as it enters the transcript
    usage: Usage
    cost_usd: float | None
    response_id: str | None
    attempts: int


@dataclass
class LLMClient:
    telemetry: Telemetry
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    prices: PriceTable = field(default_factory=PriceTable)
    timeout_s: float = DEFAULT_TIMEOUT_S
    api_base: str | None = None
    api_key: str | None = None
    capture_input_messages: bool = False
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    # Scripts the offline ``scripted`` provider answers from, handed to it at the first call:
    # a command imports litellm (about 3 s) only once it calls a model, after the recorder forked.
    scripts: list[Any] = field(default_factory=list)
    # Stream every call (stream_options.include_usage); ``on_text(request, text)`` sees each text delta.
    stream: bool = False
    on_text: Callable[[ChatRequest, str], None] | None = None
    log_budget_warnings: bool = False  # also on budget.LOGGER: a program's sessions have no console
    _tools_sent: ToolDefinitions = field(default_factory=ToolDefinitions, init=False, repr=False)  # once per trace
    _price_entries: PriceEntries = field(default_factory=PriceEntries, init=False, repr=False)  # once per trace
    _sent_base: tuple[str, dict[str, str]] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        add_credential(self.api_key)  # it travels in a header only: never in a span, file or line
        if self.api_base:  # the password of the URL's user-info is one too (``http://bob:pw@host``)
            add_credential(unquote(urlparse(self.api_base).password or ""))
            self._sent_base = sent_api_base(self.api_base)
            for value in self._sent_base[1].values():  # its Basic header as well
                add_credential(value.removeprefix("Basic "))

    def use_script(self, script: Any) -> str:
        """Answer ``scripted/<name>`` calls from ``script`` (an ``llm.scripts.Script``); returns that model."""
        self.scripts.append(script)
        return script.model

    async def prepare(self) -> None:
        """Load litellm now (seconds, once per process), before a run's spans start: inside the
        first attempt it would be timed as that turn's, in the tree, the views and Jaeger. The
        first import runs on a worker thread, so the event loop (an application's other sessions
        and tasks) goes on meanwhile instead of stalling for those seconds."""
        import sys

        from otel_agents.llm.litellm_loader import load_litellm

        if "litellm" in sys.modules:
            load_litellm()  # loaded: only its settings, which are cheap to check
        else:
            await asyncio.to_thread(load_litellm)

    async def complete(
        self, request: ChatRequest, on_message: Callable[[dict[str, Any]], str],
        on_notice: Callable[[str, str], Any] | None = None,
    ) -> ChatResult:
        """Call the model until an attempt succeeds; ``on_message`` records the reply
        inside the successful attempt's span and returns its message id; ``on_notice(kind, text)``
        records a host notice (a retry) inside the failed attempt's span."""
        if not request.model.startswith(IN_PROCESS_PREFIXES):  # before the first attempt's clock starts
            from otel_agents.llm.litellm_loader import warm_provider_path

            await warm_provider_path()
        attempt = 0
        while True:
            attempt += 1
            if request.session_id in self.telemetry.halted:  # nothing more it spends could be billed
                raise RecordingLost(f"session {request.session_id} stopped: {self.telemetry.halted[request.session_id]}")
            check_budgets(self.telemetry, on_notice)  # an attempt that would start past a limit is not made
            try:
                return await self._attempt(request, attempt, on_message, on_notice)
            except _AttemptFailed as failed:
                exc = failed.cause
                if not is_transient(exc) or attempt >= self.retry.max_attempts:
                    raise LLMCallFailed(request.model, attempt, exc) from exc
                # A retry the budget refuses is not announced nor waited for: check says why at once.
                delay = None if budget_refusal() else self.retry.delay(attempt, exc)
                self.telemetry.log("WRN", f"attempt {attempt} of {request.model} failed ({error_type(exc)}); "
                                   + ("the budget allows no retry" if delay is None else f"retrying in {delay:.2f}s"))
                if delay is not None:
                    await self.sleep(delay)

    def _start_attributes(self, request: ChatRequest, attempt: int) -> dict[str, Any]:
        attrs: dict[str, Any] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
            sc.GEN_AI_PROVIDER_NAME: provider_of(request.model),
            sc.GEN_AI_REQUEST_MODEL: request_model_of(request.model),
            sc.LLM_MODEL: request.model,
            sc.GEN_AI_OUTPUT_TYPE: "text",
            sc.GEN_AI_CONVERSATION_ID: request.session_id,
            sc.GEN_AI_AGENT_NAME: request.agent_name,
            sc.GEN_AI_AGENT_ID: request.agent_id,
            sc.AGENT_ID: request.agent_id,
            sc.LLM_ATTEMPT: attempt,
            sc.LLM_MAX_ATTEMPTS: self.retry.max_attempts,
            sc.CONTEXT_AGENT_ID: request.agent_id,
            sc.CONTEXT_MESSAGE_COUNT: len(request.messages),
            sc.CONTEXT_CHARS: sum(len(m.get("content") or "") for m in request.messages),
        }
        if request.context_last_message_id:
            attrs[sc.CONTEXT_LAST_MESSAGE_ID] = request.context_last_message_id
        if request.tools:
            attrs.update(self._tools_sent.attributes(request.tools, full=self.capture_input_messages))
        if self.api_base:
            parsed = urlparse(self.api_base)
            if parsed.hostname:
                attrs[sc.SERVER_ADDRESS] = parsed.hostname
            if parsed.port:
                attrs[sc.SERVER_PORT] = parsed.port
        if request.settings is not None:
            attrs.update(request.settings.span_attributes())
        if self.stream:
            attrs[sc.GEN_AI_REQUEST_STREAM] = True
        if self.capture_input_messages:
            instructions, history = content_capture.request_content(request.messages)
            if instructions:
                attrs[sc.GEN_AI_SYSTEM_INSTRUCTIONS] = content_capture.as_json(instructions)
            attrs[sc.GEN_AI_INPUT_MESSAGES] = content_capture.as_json(history)
        return attrs

    async def _attempt(
        self, request: ChatRequest, attempt: int, on_message: Callable[[dict[str, Any]], str],
        on_notice: Callable[[str, str], Any] | None = None,
    ) -> ChatResult:
        from otel_agents.llm.litellm_loader import load_litellm

        litellm = load_litellm()
        if request.model.startswith("scripted/"):
            from otel_agents.llm.scripted_provider import register_script  # registers the provider

            while self.scripts:
                register_script(self.scripts.pop(0))
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": list(request.messages),
            "metadata": {META_AGENT_NAME: request.agent_name, META_ATTEMPT: attempt},
            "timeout": self.timeout_s,
            "num_retries": 0,  # retries are ours: each attempt must be its own span
            "max_retries": 0,
        }
        if request.tools:
            kwargs["tools"] = request.tools
        if request.settings is not None:
            kwargs.update(request.settings.set_fields())
        if self.stream:
            kwargs["stream"] = True
            kwargs["stream_options"] = dict(STREAM_OPTIONS)
        if self._sent_base is not None:
            kwargs["api_base"], headers = self._sent_base
            if headers:  # the URL's user:password@, as a header: it replaces the key's bearer token
                kwargs["extra_headers"] = dict(headers)
        if self.api_key:
            kwargs["api_key"] = self.api_key

        name = sc.span_name(sc.OP_CHAT, request_model_of(request.model))
        tracer = self.telemetry.tracer
        with tracer.start_as_current_span(
            name, kind=SpanKind.CLIENT, attributes=self._start_attributes(request, attempt),
            record_exception=False, set_status_on_exception=False,
        ) as span, marks_cancellation(span):
            self.telemetry.request_sent(span, kwargs["messages"])
            started = time.perf_counter()
            progress = StreamProgress(started)
            try:
                response = await self._call(litellm, kwargs, request, progress)
            except Exception as exc:  # every failure is recorded on its attempt span
                latency_ms = (time.perf_counter() - started) * 1000
                self._record_stream(span, progress, failed=True)
                if isinstance(exc, StreamCutShort):
                    exc = exc.cause  # what arrived before the cut is kept on the failed attempt; the retry starts over
                transient = is_transient(exc)
                span.set_attributes(
                    {sc.ERROR_TYPE: error_type(exc), sc.LLM_LATENCY_MS: round(latency_ms, 3), sc.LLM_RETRYABLE: transient}
                )
                hinted = retry_after_seconds(exc)
                if hinted is not None:  # a replay of the attempt asks for the same wait
                    span.set_attribute(sc.LLM_RETRY_AFTER, round(hinted, 3))
                usage, cost = Usage(), None
                if isinstance(exc, MalformedReply):  # the provider counted what it used: recorded and billed
                    usage, cost = self._record_usage(span, request, exc.response, progress)
                else:
                    span.set_attribute(sc.LLM_PRICE_SOURCE, self.prices.lookup(request.model)[1])
                said = _short(error_text(exc))  # the console's line is the status and the ledger's error
                span.set_status(Status(StatusCode.ERROR, said))
                self.telemetry.log("WRN" if transient else "ERR", said, span=span)
                charge_llm(usage, cost, failed=True)  # first: a budget it spends refuses the retry
                if (on_notice is not None and transient and attempt < self.retry.max_attempts
                        and budget_refusal() is None):
                    on_notice("retry", f"attempt {attempt} of {request.model} failed ({error_type(exc)}); retrying")
                tell_budget_warnings(on_notice, self.log_budget_warnings)
                raise _AttemptFailed(exc) from exc
            except BaseException:  # cancelled: what streamed until then stays on the attempt
                self._record_stream(span, progress, failed=True)
                raise
            latency_ms = (time.perf_counter() - started) * 1000
            self._record_stream(span, progress)
            choice = response.choices[0]
            message = assistant_message(choice.message)
            usage, cost = self._record_usage(span, request, response, progress)
            finish = getattr(choice, "finish_reason", None)
            self.telemetry.set_attributes(
                span,
                {
                    sc.GEN_AI_RESPONSE_FINISH_REASONS: [finish] if finish else None,
                    sc.LLM_LATENCY_MS: round(latency_ms, 3),
                    sc.RESPONSE_CHARS: len(message.get("content") or "")
                    + sum(len(c["function"]["arguments"]) for c in message.get("tool_calls", [])),
                },
            )
            if self.capture_input_messages:
                self.telemetry.set_attributes(
                    span, {sc.GEN_AI_OUTPUT_MESSAGES: content_capture.as_json(content_capture.output_messages(message))}
                )
            if message.get("reasoning_content"):
                self.telemetry.log("THK", message["reasoning_content"], span=span)
            if finish == "length" and not (message.get("content") or "").strip() and not message.get("tool_calls"):
                # An empty answer is printed as an empty line: without this, nothing says why.
                self.telemetry.log("WRN", "the model stopped at max_tokens with no text (finish_reason length)",
                                   span=span)
            charge_llm(usage, cost, failed=False,
                       counted=counted_cost(request.model, str(request.agent_name), attempt, cost))
            message_id = on_message(message)
            tell_budget_warnings(on_notice, self.log_budget_warnings)  # after the reply it paid for, in record order
            span.set_attribute(sc.RESPONSE_MESSAGE_ID, message_id)
            return ChatResult(message, usage, cost, getattr(response, "id", None), attempt)

    def _record_usage(self, span: Any, request: ChatRequest, response: Any,
                      progress: StreamProgress) -> tuple[Usage, float | None]:
        """The reply's usage, priced, on its attempt span: a successful one's, or a malformed reply's."""
        usage = usage_of(response)
        # Priced over litellm's whole usage object: audio and image tokens have no attribute of
        # their own on the span, but are billed at their rates.
        overflowed = False
        try:
            cost, price_source = self.prices.cost(request.model, usage, provider_usage=getattr(response, "usage", None))
        except NonFiniteCost as exc:
            # The call happened and its reply is kept; a cost no number holds is recorded as unknown
            # (unpriced, null), said once here, never as infinity: `billing rebuild --reprice` prices it later.
            self.telemetry.log("WRN", f"{exc}: the call is recorded unpriced", span=span)
            cost, price_source, overflowed = None, PRICE_SOURCE_UNPRICED, True
        self.telemetry.set_attributes(span, {
            sc.GEN_AI_RESPONSE_ID: getattr(response, "id", None),
            sc.GEN_AI_RESPONSE_MODEL: getattr(response, "model", None),
            sc.GEN_AI_USAGE_INPUT_TOKENS: usage.input_tokens,
            sc.GEN_AI_USAGE_OUTPUT_TOKENS: usage.output_tokens,
            sc.GEN_AI_USAGE_CACHE_READ: usage.cache_read_tokens,
            sc.GEN_AI_USAGE_CACHE_CREATION: usage.cache_write_tokens,
            sc.GEN_AI_USAGE_REASONING: usage.reasoning_tokens,
            sc.GEN_AI_USAGE_COST: cost,
            sc.LLM_PRICE_SOURCE: price_source,
            **served_attributes(response),
            sc.LLM_USAGE_ESTIMATED: True if progress.usage_estimated else None,
            **(self._price_entries.attributes(self.prices, request.model, span.get_span_context().trace_id)
               if not overflowed else {}),
        })
        return usage, cost

    async def _call(self, litellm: Any, kwargs: dict[str, Any], request: ChatRequest,
                    progress: StreamProgress) -> Any:
        """One ``acompletion``; a streamed one read whole (text handed on as it arrives) and assembled,
        another's text handed on whole."""
        hand_on = text_listener(self.on_text, request, self.telemetry.log)
        # The whole attempt, a stream read to its end included, is bounded by the timeout (litellm's
        # bounds each wait for bytes only); a cut is a litellm Timeout, as when the first byte is late.
        try:
            async with asyncio.timeout(self.timeout_s):
                response = await litellm.acompletion(**kwargs)
                if self.stream:
                    await read_stream(response, progress, hand_on)
        except TimeoutError as exc:
            cut = litellm.Timeout(f"the attempt took longer than {self.timeout_s:g}s", model=kwargs["model"],
                                  llm_provider=provider_of(request.model))
            raise (StreamCutShort(cut, progress) if progress.chunks else cut) from exc
        # A reply without usage is estimated, never billed as zero tokens at $0 (the in-process
        # providers always count theirs); a stream's estimate is litellm's own, made the same way.
        sent = usage_sent(response, progress) if self.stream else response
        if self.stream:
            response = assemble(litellm, progress.chunks, kwargs["messages"])
        if not request.model.startswith(IN_PROCESS_PREFIXES):
            missing = sent is None or usage_missing(sent)
            invalid = None if missing else usage_invalid(sent)
            if invalid:  # a negative or absurd count is a provider's bug: never billed as it is
                self.telemetry.log("WRN", f"the provider sent invalid usage ({invalid}); its counts are estimated")
            if invalid or (missing and not self.stream):
                estimate_usage(litellm, response, kwargs["model"], kwargs["messages"])
            progress.usage_estimated = missing or invalid is not None
        if not response.choices:
            raise MalformedReply("the reply has no choices", response)
        text = getattr(response.choices[0].message, "content", None) if hand_on and not self.stream else None
        if text:
            hand_on(text)
        return response

    def _record_stream(self, span: Any, progress: StreamProgress, failed: bool = False) -> None:
        if not self.stream:
            return
        if progress.first_chunk_s is not None:
            span.set_attribute(sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, round(progress.first_chunk_s, 6))
        span.set_attribute(sc.LLM_STREAM_CHUNKS, len(progress.chunks))
        if failed and progress.text:  # what arrived before the attempt failed or was cancelled
            text = progress.partial_text
            span.set_attributes({sc.LLM_PARTIAL_OUTPUT: text, sc.LLM_PARTIAL_CHARS: len(text)})


class _AttemptFailed(Exception):
    def __init__(self, cause: BaseException):
        super().__init__(str(cause))
        self.cause = cause
