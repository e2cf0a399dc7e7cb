"""Which failures are retried, Retry-After parsing, and the backoff schedule."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import httpx
import pytest

from otel_agents.llm.litellm_loader import load_litellm
from otel_agents.llm.retry import RetryPolicy, error_type, is_transient, retry_after_seconds

litellm = load_litellm()
ARGS = {"message": "boom", "llm_provider": "openai", "model": "openai/x"}


def response(status: int, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, headers=headers or {}, request=httpx.Request("POST", "http://test/v1"))


def transient_errors():
    return [
        litellm.RateLimitError(**ARGS, response=response(429)),
        litellm.InternalServerError(**ARGS, response=response(500)),
        litellm.ServiceUnavailableError(**ARGS, response=response(503)),
        litellm.BadGatewayError(**ARGS, response=response(502)),
        litellm.Timeout(**ARGS),
        litellm.APIConnectionError(**ARGS),
        TimeoutError("read timed out"),
        ConnectionResetError("reset by peer"),
    ]


def permanent_errors():
    return [
        litellm.AuthenticationError(**ARGS, response=response(401)),
        litellm.BadRequestError(**ARGS, response=response(400)),
        litellm.ContextWindowExceededError(**ARGS, response=response(400)),
        litellm.NotFoundError(**ARGS, response=response(404)),
        litellm.PermissionDeniedError(**ARGS, response=response(403)),
        ValueError("a bug, not the network"),
    ]


@pytest.mark.parametrize("exc", transient_errors(), ids=lambda e: type(e).__name__)
def test_transient_failures_are_retried(exc):
    assert is_transient(exc)


@pytest.mark.parametrize("exc", permanent_errors(), ids=lambda e: type(e).__name__)
def test_permanent_failures_are_not(exc):
    assert not is_transient(exc)


def test_status_code_decides_for_unknown_exception_classes():
    class ProviderError(Exception):
        def __init__(self, status_code):
            super().__init__(f"status {status_code}")
            self.status_code = status_code

    assert [is_transient(ProviderError(s)) for s in (408, 429, 500, 529, 400, 401, 404)] == [
        True, True, True, True, False, False, False,
    ]
    assert error_type(ProviderError(500)) == "ProviderError"


class WithHeaders(Exception):
    def __init__(self, **attrs):
        super().__init__("x")
        for key, value in attrs.items():
            setattr(self, key, value)


def test_retry_after_in_seconds_milliseconds_and_http_date():
    assert retry_after_seconds(WithHeaders(litellm_response_headers=httpx.Headers({"Retry-After": "7"}))) == 7.0
    assert retry_after_seconds(WithHeaders(litellm_response_headers={"retry-after-ms": "1500"})) == 1.5
    when = datetime.now(timezone.utc) + timedelta(seconds=30)
    seconds = retry_after_seconds(WithHeaders(headers={"retry-after": format_datetime(when, usegmt=True)}))
    assert 28 <= seconds <= 30
    past = format_datetime(datetime.now(timezone.utc) - timedelta(seconds=30), usegmt=True)
    assert retry_after_seconds(WithHeaders(headers={"retry-after": past})) == 0.0
    assert retry_after_seconds(WithHeaders(headers={"retry-after": "soon"})) is None
    assert retry_after_seconds(ValueError("no headers")) is None


def test_retry_after_from_a_real_litellm_exception():
    # litellm puts the provider's headers on litellm_response_headers; the response may carry none.
    exc = litellm.RateLimitError(**ARGS, response=response(429))
    exc.litellm_response_headers = httpx.Headers({"retry-after": "2"})
    assert retry_after_seconds(exc) == 2.0
    exc2 = litellm.RateLimitError(**ARGS, response=response(429, {"retry-after": "3"}))
    assert retry_after_seconds(exc2) == 3.0


def test_backoff_is_exponential_with_equal_jitter_and_capped():
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=5.0, rng=random.Random(1))
    plain = ValueError("no hint")
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 5.0), (9, 5.0)]:
        delays = [policy.delay(attempt, plain) for _ in range(50)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(set(delays)) > 1  # jitter
    # A Retry-After hint wins, but never beyond the cap.
    assert policy.delay(1, WithHeaders(headers={"retry-after": "3"})) == 3.0
    assert policy.delay(1, WithHeaders(headers={"retry-after": "300"})) == 5.0


def test_error_text_names_the_type_once_and_cuts_a_traceback():
    from litellm.exceptions import APIConnectionError, InternalServerError

    from otel_agents.llm.retry import error_text

    load_litellm()
    # as litellm's exception mapping makes it
    failed = InternalServerError("InternalServerError: OpenAIException - Connection error.", llm_provider="openai",
                                 model="m")
    assert str(failed).startswith("litellm.InternalServerError: InternalServerError: ")
    assert error_text(failed) == "InternalServerError: OpenAIException - Connection error."
    quoted = ("OpenAIException - Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n"
              "    raise ValueError('bad')\nValueError: bad\n\nreceived_args={}")
    cut = APIConnectionError(quoted, llm_provider="openai", model="m")
    assert error_text(cut) == "APIConnectionError: OpenAIException - ValueError: bad"
    assert error_text(ValueError("Traceback (most recent call last):\n  File \"x\"\nKeyError: 'k'")) == "ValueError: KeyError: 'k'"
    assert error_text(RuntimeError("plain: text")) == "RuntimeError: plain: text"
    assert error_text(TimeoutError()) == "TimeoutError"


def test_error_text_of_a_mid_stream_failure_says_the_error_it_wraps_once():
    from litellm.exceptions import APIConnectionError, MidStreamFallbackError

    from otel_agents.llm.retry import error_text

    load_litellm()
    broken = APIConnectionError("APIConnectionError: OpenAIException - Response payload is not completed",
                                llm_provider="openai", model="m")
    cut = MidStreamFallbackError(str(broken), model="m", llm_provider="openai", original_exception=broken)
    assert "Original exception: APIConnectionError" in str(cut)  # as litellm says it: every type twice or more
    assert error_text(cut) == "MidStreamFallbackError: OpenAIException - Response payload is not completed"
