"""A message id as the user gave it: the whole id, or a unique prefix of one (as ids are copied short)."""

from __future__ import annotations

from typing import Iterable, Mapping

from otel_agents.views.errors import AmbiguousMessage, UnknownMessage

_LIST_LIMIT = 5  # candidates named in an "ambiguous" message


def resolve_message_id(by_id: Mapping[str, object], given: str) -> str:
    """``given`` if it is a message id, else the one id it begins; UnknownMessage for none, AmbiguousMessage for several."""
    if given in by_id:
        return given
    if not given:
        raise UnknownMessage("unknown message ''")
    matches = _starting_with(by_id, given)
    if not matches:
        raise UnknownMessage(f"unknown message {given!r}")
    if len(matches) == 1:
        return matches[0]
    listed = ", ".join(matches[:_LIST_LIMIT]) + (", ..." if len(matches) > _LIST_LIMIT else "")
    raise AmbiguousMessage(f"message id {given!r} is the start of {len(matches)} ids ({listed}); give more of it")


def _starting_with(ids: Iterable[object], prefix: str) -> list[str]:
    # Iterating the keys parses no record (views.cache's RecordsById keeps the ids apart); one pass.
    return [i for i in ids if isinstance(i, str) and i.startswith(prefix)]
