"""A local, loopback-only OpenAI-compatible HTTP server for tests.

It lets tests drive the *real* litellm HTTP path (``model="openai/<name>"`` with
``api_base=server.api_base``) and inject faults deterministically.

Usage::

    with OpenAIServer() as server:
        server.plan(
            Reply.error(429, retry_after=1),
            Reply(content="hi", prompt_tokens=10, completion_tokens=2),
            Reply(tool_calls=[("get_weather", {"city": "Oslo"})]),
        )
        await litellm.acompletion(
            model="openai/test-model", api_base=server.api_base, api_key="sk-test",
            messages=[...], num_retries=0, max_retries=0,
        )
        headers, body = server.requests[0]

Every ``POST /v1/chat/completions`` pops one planned :class:`Reply` (FIFO); when
the queue is empty the default reply (``content="ok"``) is used.  Requests whose
body has ``"stream": true`` get an SSE stream for ordinary replies; fault replies
(errors, reset, malformed, ...) behave the same for streaming and non-streaming
requests, except ``Reply.cut_stream()`` which always answers with a truncated SSE
stream.
"""

from __future__ import annotations

import itertools
import json
import socket
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["OpenAIServer", "Reply"]

CONTEXT_WINDOW_MESSAGE = (
    "This model's maximum context length is 8192 tokens. However, your messages "
    "resulted in 10000 tokens. Please reduce the length of the messages."
)

# Default OpenAI-style error bodies per status code: (message, type, code).
# Messages are chosen so that litellm's string-sniffing exception mapper falls
# through to the status-code branch (e.g. no "rate limit" wording or a bare
# "429" in non-429 errors).
_DEFAULT_ERRORS: dict[int, tuple[str, str, str | None]] = {
    400: ("Invalid request (test server).", "invalid_request_error", None),
    401: (
        "Incorrect API key provided: sk-test***. You can find your API key at "
        "https://platform.openai.com/account/api-keys.",
        "invalid_request_error",
        "invalid_api_key",
    ),
    403: ("Forbidden (test server).", "permission_error", None),
    404: ("The model does not exist (test server).", "invalid_request_error", None),
    429: (
        "Rate limit reached for test-model on requests per min (RPM): Limit 1, Used 1, Requested 1.",
        "requests",
        "rate_limit_exceeded",
    ),
    500: ("Internal failure in the test server.", "server_error", None),
    502: ("Bad gateway (test server).", "server_error", None),
    503: ("Service unavailable (test server).", "server_error", None),
}


@dataclass
class Reply:
    """One planned server reply.

    Ordinary replies: ``content`` and/or ``tool_calls``.  ``tool_calls`` items are
    either ``(name, arguments)`` tuples (arguments: dict -> JSON, or str verbatim)
    or dicts ``{"name":..., "arguments":..., "id":...}`` (id optional).
    If neither content nor tool_calls is given, content defaults to ``"ok"``.

    Usage fields left as ``None`` are computed from text length (chars // 4, min 1).
    """

    content: str | None = None
    tool_calls: list[Any] = field(default_factory=list)
    reasoning_content: str | None = None
    finish_reason: str | None = None  # default: "tool_calls" if tool_calls else "stop"
    model: str | None = None  # default: echo the request's model
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    prompt_details: dict[str, int] = field(default_factory=dict)  # more prompt_tokens_details (cache writes, audio)
    headers: dict[str, str] = field(default_factory=dict)  # extra response headers
    # OpenRouter's extras: the provider that served the call (top-level ``provider``) and what it
    # charged (``usage.cost``, with ``usage.cost_details.upstream_inference_cost``).
    provider: str | None = None
    cost: float | None = None
    upstream_cost: float | None = None
    send_usage: bool = True  # False: no ``usage`` at all, as some OpenAI-compatible servers answer
    # Top-level fields replacing the built reply's (a malformed 200: ``{"choices": []}``); not for streams.
    patch: dict[str, Any] = field(default_factory=dict)
    chunk_delay: float = 0.0  # streams: seconds before each chunk after the first (a slow trickle)

    # Fault injection (use the constructors below).
    kind: str = "ok"  # ok | error | slow | reset | malformed | cut_stream
    status: int = 200
    error_message: str | None = None
    error_type: str | None = None
    error_code: str | None = None
    error_param: str | None = None
    delay: float = 0.0
    then: Reply | None = None
    cut_after: int = 2  # cut_stream: number of content chunks sent before the cut
    abrupt: bool = True  # cut_stream: drop the TCP connection (vs. clean end without [DONE])
    escape_slashes: bool = False  # error: "/" written "\\/" in the body, as many servers' JSON does

    # ---------------------------------------------------------------- builders
    @classmethod
    def error(
        cls,
        status: int,
        message: str | None = None,
        *,
        type: str | None = None,  # noqa: A002 - mirrors the OpenAI field name
        code: str | None = None,
        param: str | None = None,
        retry_after: float | None = None,
        headers: dict[str, str] | None = None,
        escape_slashes: bool = False,
    ) -> Reply:
        d_msg, d_type, d_code = _DEFAULT_ERRORS.get(status, (f"Test server error {status}.", "api_error", None))
        hdrs = dict(headers or {})
        if retry_after is not None:
            ra = int(retry_after) if float(retry_after).is_integer() else retry_after
            hdrs["Retry-After"] = str(ra)
        return cls(
            kind="error",
            status=status,
            error_message=message if message is not None else d_msg,
            error_type=type if type is not None else d_type,
            error_code=code if code is not None else d_code,
            error_param=param,
            headers=hdrs,
            escape_slashes=escape_slashes,
        )

    @classmethod
    def context_window(cls) -> Reply:
        """400 ``context_length_exceeded`` -> litellm.ContextWindowExceededError."""
        return cls.error(
            400,
            CONTEXT_WINDOW_MESSAGE,
            type="invalid_request_error",
            code="context_length_exceeded",
            param="messages",
        )

    @classmethod
    def slow(cls, seconds: float, then: Reply | None = None) -> Reply:
        """Sleep ``seconds`` before answering with ``then`` (default reply if None)."""
        return cls(kind="slow", delay=seconds, then=then)

    @classmethod
    def reset(cls) -> Reply:
        """Read the request, then drop the connection (TCP RST) without any response."""
        return cls(kind="reset")

    @classmethod
    def malformed(cls) -> Reply:
        """200 with ``Content-Type: application/json`` and an invalid JSON body."""
        return cls(kind="malformed")

    @classmethod
    def cut_stream(cls, content: str = "partial answer that never ends", *, after: int = 2, abrupt: bool = True) -> Reply:
        """SSE stream sending ``after`` content chunks, then stopping before ``[DONE]``.

        ``abrupt=True`` closes the connection mid chunked body (no terminating
        zero-length chunk); ``abrupt=False`` terminates the HTTP body cleanly but
        never sends a finish chunk nor ``[DONE]``.
        """
        return cls(kind="cut_stream", content=content, cut_after=after, abrupt=abrupt)

    @classmethod
    def coerce(cls, value: Reply | dict[str, Any] | str) -> Reply:
        if isinstance(value, Reply):
            return value
        if isinstance(value, str):
            return cls(content=value)
        if isinstance(value, dict):
            return cls(**value)
        raise TypeError(f"cannot plan a reply from {value!r}")


def _approx_tokens(text: str) -> int:
    return max(1, len(text) // 4)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, owner: OpenAIServer):
        self.owner = owner
        self.open_sockets: set[socket.socket] = set()
        self.sockets_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request_thread(self, request, client_address):  # type: ignore[override]
        with self.sockets_lock:
            self.open_sockets.add(request)
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.sockets_lock:
                self.open_sockets.discard(request)

    def handle_error(self, request, client_address):  # noqa: D401 - silence tracebacks
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    # ------------------------------------------------------------------ routes
    def do_GET(self) -> None:  # noqa: N802
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [{"id": "test-model", "object": "model"}]})
        else:
            self._send_json(404, {"error": {"message": "not found", "type": "invalid_request_error", "code": None}})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        owner = self.server.owner
        owner._record({k.lower(): v for k, v in self.headers.items()}, body)

        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(
                404,
                {"error": {"message": f"Unknown path {self.path}", "type": "invalid_request_error", "code": None}},
            )
            return

        reply = owner._next_reply()
        while reply.kind == "slow":
            if owner._stopping.wait(reply.delay):
                self._abort()
                return
            reply = reply.then if reply.then is not None else owner.default_reply
        try:
            self._dispatch(reply, body)
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    # --------------------------------------------------------------- replies
    def _dispatch(self, reply: Reply, body: dict[str, Any]) -> None:
        owner = self.server.owner
        if reply.kind == "error":
            err = {
                "error": {
                    "message": reply.error_message,
                    "type": reply.error_type,
                    "param": reply.error_param,
                    "code": reply.error_code,
                }
            }
            payload = json.dumps(err)
            if reply.escape_slashes:
                payload = payload.replace("/", "\\/")
            self._send_raw(reply.status, payload.encode(), "application/json", reply.headers)
        elif reply.kind == "reset":
            self._abort()
        elif reply.kind == "malformed":
            payload = b'{"id": "chatcmpl-broken", "object": "chat.completion", "choices": [{"mess'
            self._send_raw(200, payload, "application/json", reply.headers)
        elif reply.kind == "cut_stream":
            self._stream(reply, body, owner._new_id(), cut=True)
        elif body.get("stream"):
            self._stream(reply, body, owner._new_id(), cut=False)
        else:
            self._send_json(200, {**self._completion(reply, body, owner._new_id()), **reply.patch}, reply.headers)

    def _tool_calls(self, reply: Reply) -> list[dict[str, Any]]:
        owner = self.server.owner
        out = []
        for tc in reply.tool_calls:
            if isinstance(tc, dict):
                name, args, tc_id = tc["name"], tc.get("arguments", {}), tc.get("id")
            else:
                name, args = tc
                tc_id = None
            if not isinstance(args, str):
                args = json.dumps(args)
            out.append(
                {
                    "id": tc_id or owner._new_call_id(),
                    "type": "function",
                    "function": {"name": name, "arguments": args},
                }
            )
        return out

    @staticmethod
    def _content(reply: Reply) -> str | None:
        if reply.content is None and not reply.tool_calls:
            return "ok"
        return reply.content

    @staticmethod
    def _usage(reply: Reply, body: dict[str, Any], content: str | None, tool_calls: list[dict[str, Any]]) -> dict[str, Any]:
        if reply.prompt_tokens is not None:
            prompt = reply.prompt_tokens
        else:
            prompt = _approx_tokens(json.dumps(body.get("messages", []), sort_keys=True))
        if reply.completion_tokens is not None:
            completion = reply.completion_tokens
        else:
            text = (content or "") + (reply.reasoning_content or "")
            text += "".join(tc["function"]["name"] + tc["function"]["arguments"] for tc in tool_calls)
            completion = _approx_tokens(text) + reply.reasoning_tokens
        usage: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": reply.cached_tokens, **reply.prompt_details},
            "completion_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
        }
        if reply.cost is not None:
            usage["cost"] = reply.cost
        if reply.upstream_cost is not None:
            usage["cost_details"] = {"upstream_inference_cost": reply.upstream_cost}
        return usage

    def _completion(self, reply: Reply, body: dict[str, Any], resp_id: str) -> dict[str, Any]:
        content = self._content(reply)
        tool_calls = self._tool_calls(reply)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        if reply.reasoning_content is not None:
            message["reasoning_content"] = reply.reasoning_content
        finish = reply.finish_reason or ("tool_calls" if tool_calls else "stop")
        return {
            "id": resp_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": reply.model or body.get("model", "test-model"),
            "system_fingerprint": "fp_test",
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
            **({"usage": self._usage(reply, body, content, tool_calls)} if reply.send_usage else {}),
            **({"provider": reply.provider} if reply.provider is not None else {}),
        }

    def _stream(self, reply: Reply, body: dict[str, Any], resp_id: str, cut: bool) -> None:
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        content = self._content(reply)
        tool_calls = [] if cut else self._tool_calls(reply)
        base = {
            "id": resp_id,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": reply.model or body.get("model", "test-model"),
            "system_fingerprint": "fp_test",
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            c = dict(base, choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}])
            if include_usage:
                c["usage"] = None
            return c

        events: list[dict[str, Any]] = [chunk({"role": "assistant", "content": ""})]
        if reply.reasoning_content:
            for piece in _split(reply.reasoning_content):
                events.append(chunk({"reasoning_content": piece}))
        if content:
            for piece in _split(content):
                events.append(chunk({"content": piece}))
        for i, tc in enumerate(tool_calls):
            events.append(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": i,
                                "id": tc["id"],
                                "type": "function",
                                "function": {"name": tc["function"]["name"], "arguments": ""},
                            }
                        ]
                    }
                )
            )
            for piece in _split(tc["function"]["arguments"]):
                events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in reply.headers.items():
            self.send_header(k, v)
        self.end_headers()

        if cut:
            for ev in events[: 1 + max(0, reply.cut_after)]:
                self._write_chunk(_sse(ev))
            self.wfile.flush()
            if reply.abrupt:
                # FIN (not RST) mid chunked body: an RST could make the client's kernel
                # discard the chunks already sent, making the partial content flaky.
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
            else:
                self._write_chunk(b"")  # clean end of chunked body, no finish chunk, no [DONE]
                self.close_connection = True
            return

        finish = reply.finish_reason or ("tool_calls" if tool_calls else "stop")
        events.append(chunk({}, finish))
        if include_usage and reply.send_usage:
            usage_chunk = dict(base, choices=[], usage=self._usage(reply, body, content, tool_calls))
            events.append(usage_chunk)
        for i, ev in enumerate(events):
            if i and reply.chunk_delay and self.server.owner._stopping.wait(reply.chunk_delay):
                self._abort()
                return
            self._write_chunk(_sse(ev))
            self.wfile.flush()
        self._write_chunk(b"data: [DONE]\n\n")
        self._write_chunk(b"")
        self.wfile.flush()

    # --------------------------------------------------------------- low level
    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _send_raw(self, status: int, payload: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(obj).encode(), "application/json", headers)

    def _abort(self) -> None:
        """Close the TCP connection with RST (SO_LINGER 0), no HTTP response."""
        self.close_connection = True
        try:
            self.wfile.flush()
        except OSError:
            pass
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        try:
            self.connection.close()
        except OSError:
            pass


def _split(text: str, parts: int = 3) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse(obj: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


class OpenAIServer:
    """Threaded OpenAI-compatible server on 127.0.0.1 (free port). See module doc."""

    def __init__(self, default_reply: Reply | None = None):
        self.default_reply = default_reply or Reply(content="ok")
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self._requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self._ids = itertools.count(1)
        self._call_ids = itertools.count(1)
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # ----------------------------------------------------------- lifecycle
    def start(self) -> OpenAIServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _Server(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="openai-test-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; bounded (~1 s worst case) even with sleeping handlers."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()  # wakes Reply.slow sleepers, which then abort
        httpd.shutdown()
        with httpd.sockets_lock:
            socks = list(httpd.open_sockets)
        for s in socks:  # unblock handlers waiting on idle keep-alive connections
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
            self._thread = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------- API
    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_base(self) -> str:
        return f"{self.base_url}/v1"

    def plan(self, *replies: Reply | dict[str, Any] | str) -> OpenAIServer:
        """Append planned replies (FIFO), consumed one per chat-completions request."""
        coerced = [Reply.coerce(r) for r in replies]
        with self._lock:
            self._queue.extend(coerced)
        return self

    @property
    def pending(self) -> int:
        """Number of planned replies not yet consumed."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[tuple[dict[str, str], dict[str, Any]]]:
        """Snapshot list of (headers with lower-cased names, parsed JSON body) for every POST."""
        with self._lock:
            return list(self._requests)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [b for _, b in self.requests]

    def reset_state(self) -> None:
        """Forget recorded requests and planned replies."""
        with self._lock:
            self._requests.clear()
            self._queue.clear()

    # ------------------------------------------------------------ internal
    def _record(self, headers: dict[str, str], body: dict[str, Any]) -> None:
        with self._lock:
            self._requests.append((headers, body))

    def _next_reply(self) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return replace(self.default_reply)

    def _new_id(self) -> str:
        with self._lock:
            return f"chatcmpl-{next(self._ids)}"

    def _new_call_id(self) -> str:
        with self._lock:
            return f"call_{next(self._call_ids)}"
