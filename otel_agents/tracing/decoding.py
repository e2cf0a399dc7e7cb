"""What the trace decoders share: positions for one-line errors, typed reads of JSON values, ids derived from text.

Every error names the file, the line and the place inside the document
(``resourceSpans[0].scopeSpans[1].spans[3]``, rendered by json_location.py), so
a file is decoded whole or not at all.
"""

from __future__ import annotations

import functools
import hashlib
import re
from typing import Any

import orjson

from otel_agents.json_nesting import NestingTooDeep, check_nesting
from otel_agents.tracing.json_location import Keyed, render_path

# Kept on a span whose id had to be changed (non-hex Jaeger ids, conflicting duplicates).
ORIGINAL_SPAN_ID = "otel_agents.import.original_span_id"
ORIGINAL_TRACE_ID = "otel_agents.import.original_trace_id"

STATUSES = frozenset({"UNSET", "OK", "ERROR"})
HEX_ID = re.compile(r"^[0-9a-fA-F]+$")


class ImportFormatError(ValueError):
    """A trace file that cannot be imported; the message starts with ``file:line:``.

    ``where`` and ``detail`` (the message without its position) let the caller that
    holds the file's text name the exact line inside a multi-line document.
    """

    def __init__(self, message: str, where: "Where | None" = None, detail: str | None = None):
        super().__init__(message)
        self.where, self.detail = where, detail


class Where:
    """A position for error messages: file, line of the document, steps inside it, its format."""

    __slots__ = ("source", "line", "steps", "fmt")

    def __init__(self, source: str, line: int, steps: tuple = (), fmt: str = ""):
        self.source, self.line, self.steps, self.fmt = source, line, steps, fmt

    def at(self, *steps: str | int | Keyed) -> "Where":
        return Where(self.source, self.line, self.steps + steps, self.fmt)

    def as_format(self, fmt: str) -> "Where":
        return Where(self.source, self.line, self.steps, fmt)

    @property
    def path(self) -> str:
        return render_path(self.steps)

    def error(self, message: str) -> ImportFormatError:
        inside = f" {self.path}:" if self.steps else ""
        return ImportFormatError(f"{self.source}:{self.line}:{inside} {message}", self, message)


@functools.lru_cache(maxsize=64)
def _snake(camel: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", camel).lower()


def proto_field(obj: dict[str, Any], camel: str) -> Any:
    """``obj[camel]``, else protobuf's original snake_case name (both are valid proto JSON)."""
    if camel in obj:
        return obj[camel]
    return obj.get(_snake(camel))


def as_object(value: Any, where: Where, what: str = "an object") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise where.error(f"expected {what}, got {type_name(value)}")
    return value


def as_list(value: Any, where: Where, allow_missing: bool = True) -> list[Any]:
    if value is None and allow_missing:
        return []
    if not isinstance(value, list):
        raise where.error(f"expected a list, got {type_name(value)}")
    return value


def as_str(value: Any, where: Where, allow_missing: bool = True) -> str:
    if value is None and allow_missing:
        return ""
    if not isinstance(value, str):
        raise where.error(f"expected a string, got {type_name(value)}")
    return value


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(type(value), type(value).__name__)


def as_int(value: Any, where: Where) -> int:
    """An integer given as a number or a decimal string (64-bit values are strings in OTLP/JSON)."""
    if isinstance(value, bool):
        raise where.error("expected an integer, got a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        return int(value)
    raise where.error(f"expected an integer, got {value!r}")


def as_float(value: Any, where: Where) -> float:
    if isinstance(value, bool):
        raise where.error("expected a number, got a boolean")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)  # proto JSON writes "NaN", "Infinity" as strings
        except ValueError:
            pass
    raise where.error(f"expected a number, got {value!r}")


def as_bool(value: Any, where: Where) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in {"true", "false"}:
        return value.lower() == "true"
    raise where.error(f"expected a boolean, got {value!r}")


def derived_id(text: str, nbytes: int) -> str:
    digest = hashlib.blake2b(text.encode(), digest_size=nbytes).hexdigest()
    return digest if int(digest, 16) else "1".rjust(2 * nbytes, "0")


def loads_document(text: str | bytes, where: Where) -> Any:
    try:
        check_nesting(text, where.source)
    except NestingTooDeep as exc:
        raise ImportFormatError(str(exc)) from None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise where.error(f"invalid JSON: {exc}") from None

