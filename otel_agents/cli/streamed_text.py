"""The root agent's streamed text on stdout: scrubbed of credentials, control characters escaped, its lines ended."""

from __future__ import annotations

import sys
from typing import Any

from opentelemetry import trace

from otel_agents.terminal_text import shown
from otel_agents.tracing.credentials import StreamScrubber


class StreamedText(list):
    """The root agent's text as it arrived (``[]``: nothing streamed), and its writing to stdout,
    scrubbed of credentials as the printed utterance is (a tail held back until :meth:`end`) and its
    control characters shown as escapes (``shown``; a CR ending a piece waits: it may start a CRLF)."""

    def __init__(self) -> None:
        super().__init__()
        self.scrubber = StreamScrubber()
        self.gone = False  # stdout could not be written (`| head` went away): the run goes on unseen
        self.held_cr = ""

    def write(self, text: str, last: bool = False) -> None:
        text, self.held_cr = self.held_cr + text, ""
        if text.endswith("\r") and not last:
            text, self.held_cr = text[:-1], "\r"
        if text and not self.gone:
            try:
                sys.stdout.write(shown(text))
                sys.stdout.flush()
            except (OSError, ValueError):  # raised into the model call, it would fail a call that succeeded
                self.gone = True

    def end(self) -> None:
        """Write what was held back: the turn or the run ended."""
        self.write(self.scrubber.flush(), last=True)

    def end_line(self) -> None:
        """:meth:`end`, and end the line written, if any, unless it is ended."""
        self.end()
        if self and not self[-1].endswith("\n"):
            self.append("\n")
            self.write("\n")


def stream_root_text(session) -> StreamedText:
    """With streaming on, the root agent's text goes to stdout as it arrives; returns what was written."""
    written = StreamedText()
    if not session.llm.stream:
        return written
    turn: Any = None  # the LLM call (one per turn) whose text was written last
    attempt = 0  # the span id of its attempt

    def on_text(request, text: str) -> None:
        nonlocal turn, attempt
        root = session.root
        if root is None or request.agent_id != root.agent_id or written.gone:
            return
        span_id = trace.get_current_span().get_span_context().span_id  # a cut stream's retry is another attempt
        # A later turn of the same run (after its tool calls) starts a line of its own, as it would be a
        # separate utterance, and so does the retry of a cut stream (the cut text stays on stdout, and
        # must not read as the start of the retry's); the run's last line is ended once, by execute.
        if written and (request is not turn or span_id != attempt):
            written.end_line()
            if request is turn:
                session.llm.telemetry.log("WRN", "the streamed text above was cut off; the retry's answer follows")
        turn, attempt = request, span_id
        written.append(text)
        written.write(written.scrubber.feed(text))

    session.llm.on_text = on_text
    return written
