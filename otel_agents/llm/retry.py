"""Which failures are retried, and how long to wait between attempts.

Classification works on exception class names and status codes so that this
module (and whatever imports it) does not pull litellm in.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from datetime import datetime, timezone
from typing import Any

_TRANSIENT_NAMES = frozenset(
    {
        "RateLimitError",
        "InternalServerError",
        "ServiceUnavailableError",
        "BadGatewayError",
        "APIConnectionError",
        "Timeout",
        "APITimeoutError",
        "TimeoutError",
        "ReadTimeout",
        "ConnectError",
        "ConnectionError",
        "ConnectionResetError",
        "RemoteProtocolError",
        "MidStreamFallbackError",
        "MalformedReply",
    }
)
_PERMANENT_NAMES = frozenset(
    {
        "AuthenticationError",
        "PermissionDeniedError",
        "BadRequestError",
        "ContextWindowExceededError",
        "ContentPolicyViolationError",
        "NotFoundError",
        "UnprocessableEntityError",
        "UnsupportedParamsError",
        "InvalidRequestError",
        "BudgetExceededError",
    }
)


def error_type(exc: BaseException) -> str:
    return type(exc).__name__


_TRACEBACK = "Traceback (most recent call last)"


def error_text(exc: BaseException) -> str:
    """``<type>: <message>`` naming the type once: litellm's messages repeat it
    (``litellm.InternalServerError: InternalServerError: OpenAIException - ...``), and a
    mid-stream failure repeats the error it wraps (``litellm.MidStreamFallbackError:
    litellm.APIConnectionError: APIConnectionError: ... Original exception: APIConnectionError: ...``).

    A traceback in the message (litellm quotes one for a reply it could not convert) is cut
    off: a one-line error keeps the text before it, or else the exception line it ends on.
    The same text is on the console, the span's status and the ledger.
    """
    name = error_type(exc)
    names = {cls.__name__ for cls in type(exc).__mro__}
    message = str(exc).strip()
    original = getattr(exc, "original_exception", None)
    if isinstance(original, BaseException):  # its text is in the message already, and again after this mark
        names |= {cls.__name__ for cls in type(original).__mro__}
        message = message.partition(" Original exception: ")[0].strip()
    wrong = configuration_error(exc)
    if wrong is not None and str(wrong) not in message:  # "Connection error." alone hides what to fix
        message = f"{message} ({error_type(wrong)}: {wrong})"
    while True:  # "litellm.X: X: ..." where X is the exception's type or one of its bases (or the wrapped one's)
        head, colon, rest = message.partition(":")
        if not colon or head.removeprefix("litellm.") not in names:
            break
        message = rest.strip()
    message = _before_traceback(message)
    return f"{name}: {message}" if message else name


def _before_traceback(message: str) -> str:
    head, found, tail = message.partition(_TRACEBACK)
    head = head.strip()
    if not found:
        return head
    # The exception line: the first one after the header that is not an indented frame line.
    raised = next((line.strip() for line in tail.splitlines()[1:] if line.strip() and not line[0].isspace()), "")
    if not head:
        return raised
    return f"{head} {raised}" if head.endswith(("-", ":")) and raised else head.rstrip(" -:")


# Raised by the provider's client before any request is sent (no key to send), yet wrapped by litellm as
# an InternalServerError: trying again cannot find a key, and each try was billed as a failed call.
_NO_CREDENTIALS = ("Missing credentials", "api_key client option must be set")


def _causes(exc: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    while exc is not None and exc not in found and len(found) < 16:
        found.append(exc)
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return found


def configuration_error(exc: BaseException) -> BaseException | None:
    """The error in the request's own making under a provider's wrapping, or None: a header or URL the
    transport refuses (an API key with a newline or non-ASCII character, credentials both in the URL and
    a header) is raised before anything is sent, and wrapped by the provider's client as a "Connection
    error" that litellm reports as an InternalServerError. Sending it again cannot go otherwise."""
    chain = _causes(exc)
    for cause in chain:
        if isinstance(cause, UnicodeEncodeError):  # encoding what is sent: never a reply's fault
            return cause
        # The provider SDK's connection error wraps only what sending raised; a ValueError there is the request's.
        if type(cause).__name__ == "APIConnectionError" and type(cause).__module__.startswith("openai"):
            root = chain[-1]
            if isinstance(root, (ValueError, TypeError)) and not isinstance(root, OSError) and root is not cause:
                return root
    return None


def is_transient(exc: BaseException) -> bool:
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & _PERMANENT_NAMES:
        return False
    if any(text in str(exc) for text in _NO_CREDENTIALS):
        return False
    if configuration_error(exc) is not None:
        return False
    if names & _TRANSIENT_NAMES:
        return True
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status == 429 or status >= 500 or status == 408
    return isinstance(exc, (TimeoutError, ConnectionError))


def _headers_of(exc: BaseException) -> list[Any]:
    found = []
    response = getattr(exc, "response", None)
    if response is not None and getattr(response, "headers", None) is not None:
        found.append(response.headers)
    for attr in ("litellm_response_headers", "headers"):
        value = getattr(exc, attr, None)
        if value is not None:
            found.append(value)
    return found


def retry_after_seconds(exc: BaseException) -> float | None:
    """Retry-After (seconds or HTTP date) or retry-after-ms from the failed response."""
    for headers in _headers_of(exc):
        try:
            ms = headers.get("retry-after-ms")
            if ms is not None:
                return max(0.0, float(ms) / 1000.0)
            value = headers.get("retry-after")
        except AttributeError:
            continue
        if value is None:
            continue
        try:
            return max(0.0, float(value))
        except (TypeError, ValueError):
            try:
                when = parsedate_to_datetime(str(value))
                return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())
            except (TypeError, ValueError):
                continue
    return None


@dataclass
class RetryPolicy:
    max_attempts: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    rng: random.Random = field(default_factory=random.Random, repr=False)

    def delay(self, attempt: int, exc: BaseException) -> float:
        """Wait before attempt ``attempt + 1``: Retry-After if given, else jittered exponential."""
        hinted = retry_after_seconds(exc)
        if hinted is not None:
            return min(hinted, self.max_delay_s)
        ceiling = min(self.max_delay_s, self.base_delay_s * (2 ** (attempt - 1)))
        return ceiling / 2 + self.rng.uniform(0, ceiling / 2)  # "equal jitter"
