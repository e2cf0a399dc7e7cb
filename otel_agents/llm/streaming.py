"""One streamed LLM attempt: chunks read as they arrive, text handed on, the response assembled.

litellm streams every provider in OpenAI's chunk shape (usage in the last chunk when
``stream_options.include_usage`` is asked); ``litellm.stream_chunk_builder`` assembles the
chunks into the same response object a non-streamed call returns, so everything after
the call (transcript, usage, price) is the same for both.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

STREAM_OPTIONS = {"include_usage": True}


@dataclass
class StreamProgress:
    """What a streamed attempt received so far: kept when the stream is cut short."""

    started: float  # perf_counter at the request
    first_chunk_s: float | None = None  # seconds from the request to the first chunk
    chunks: list[Any] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    usage_estimated: bool = False  # the provider sent no usage: the counts are litellm's estimate

    @property
    def partial_text(self) -> str:
        return "".join(self.text)


class StreamCutShort(Exception):
    """The stream ended with an error after some chunks; ``cause`` is the provider's error."""

    def __init__(self, cause: BaseException, progress: StreamProgress):
        super().__init__(str(cause))
        self.cause = cause
        self.progress = progress


def _delta_text(chunk: Any) -> str | None:
    choices = getattr(chunk, "choices", None) or []
    if not choices:
        return None
    delta = getattr(choices[0], "delta", None)
    return getattr(delta, "content", None) if delta is not None else None


async def read_stream(
    stream: Any, progress: StreamProgress, on_text: Callable[[str], None] | None = None
) -> list[Any]:
    """Every chunk of ``stream``; text deltas go to ``on_text`` as they arrive.

    An error after the first chunk is raised as ``StreamCutShort`` carrying what arrived.
    """
    try:
        async for chunk in stream:
            if progress.first_chunk_s is None:
                progress.first_chunk_s = time.perf_counter() - progress.started
            progress.chunks.append(chunk)
            text = _delta_text(chunk)
            if text:
                progress.text.append(text)
                if on_text is not None:
                    on_text(text)
    except Exception as exc:
        if progress.chunks:
            raise StreamCutShort(exc, progress) from exc
        # Before any chunk litellm wraps the provider's error (a 429 with its Retry-After, a 401)
        # as a mid-stream one: the original says what it was and whether to retry.
        original = getattr(exc, "original_exception", None)
        if isinstance(original, Exception):
            raise original from None
        raise
    return progress.chunks


def usage_sent(stream: Any, progress: StreamProgress) -> Any:
    """The provider's own chunk that carried usage, or None: litellm's wrapper keeps the provider's
    chunks, while the usage chunk it yields at the end may be its own estimate (and it quietly
    re-estimates counts that are not positive, so invalid ones are seen only here)."""
    sent = [chunk for chunk in getattr(stream, "chunks", progress.chunks) if getattr(chunk, "usage", None) is not None]
    return sent[-1] if sent else None


def assemble(litellm: Any, chunks: list[Any], messages: list[dict[str, Any]]) -> Any:
    """The chunks as one response (``ModelResponse``), usage included."""
    response = litellm.stream_chunk_builder(chunks, messages=messages)
    if response is None:  # no chunk at all: the provider answered nothing
        raise EmptyStream("the stream ended before its first chunk")
    return response


def text_listener(on_text: Callable[[Any, str], None] | None, request: Any,
                  log: Callable[[str, str], None]) -> Callable[[str], None] | None:
    """``on_text`` for one attempt. It is the caller's display, not the model: an error in it is a
    WRN line on the attempt (once), and the answer goes on without it rather than being retried."""
    if on_text is None:
        return None
    failed = False

    def hand_on(text: str) -> None:
        nonlocal failed
        if failed:
            return
        try:
            on_text(request, text)
        except Exception as exc:
            failed = True
            log("WRN", on_text_failure(exc))

    return hand_on


def on_text_failure(exc: Exception) -> str:
    """What is said when ``on_text`` raised: the client stops handing that answer to it."""
    return f"on_text raised {type(exc).__name__}: {exc}; the rest of this answer was not handed to it"


class EmptyStream(ConnectionError):
    """A stream that ended before any chunk: retried like a dropped connection."""
