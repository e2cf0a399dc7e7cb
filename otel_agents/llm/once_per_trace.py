"""What a chat span carries once per trace (tool definitions, a price entry): whole in a trace fetched alone."""

from __future__ import annotations

# Traces remembered (a run is one trace; the oldest is forgotten when more arrive: its run is done).
_TRACES_REMEMBERED = 16


class OncePerTrace:
    """Which keys the spans of the latest traces already carry."""

    def __init__(self) -> None:
        self._sent: dict[int, set[str]] = {}  # trace id -> keys already on a span of it

    def first(self, trace_id: int, key: str) -> bool:
        """True the first time ``key`` is asked for in the trace (the span asking carries it), False after."""
        sent = self._sent.get(trace_id)
        if sent is None:
            if len(self._sent) >= _TRACES_REMEMBERED:
                del self._sent[next(iter(self._sent))]
            sent = self._sent[trace_id] = set()
        if key in sent:
            return False
        sent.add(key)
        return True
