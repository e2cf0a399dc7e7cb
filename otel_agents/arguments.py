"""Argument checks every layer's public classes share: one TypeError or ValueError naming the argument."""

from __future__ import annotations

import inspect
from typing import Any, Iterable, Mapping

from pydantic import BaseModel, ValidationError


def kind_of(value: Any) -> str:
    return type(value).__name__


def is_whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def number_or_refuse(value: Any, *, integer: bool = False) -> Any:
    """A model field's value, refused (ValueError) where pydantic's lax mode would misread it: a boolean
    taken as 1, a string as its number, NaN reported as out of range (it compares false with every bound)."""
    kind = "an integer" if integer else "a number"
    if isinstance(value, (bool, str)):
        raise ValueError(f"must be {kind}, not {'a boolean' if isinstance(value, bool) else 'a string'}")
    if isinstance(value, float) and value != value:
        raise ValueError("must be a number, not NaN")
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        raise ValueError(f"must be a finite number, not {value}")
    return value


def check_required_text(owner: str, argument: str, value: Any) -> None:
    """A non-empty string (an agent's name, a session id, a fork's ``at``)."""
    if not isinstance(value, str):
        raise TypeError(f"{owner}: {argument} must be a non-empty string, not {kind_of(value)}")
    if not value.strip():
        raise ValueError(f"{owner}: {argument} must be a non-empty string, not {value!r}")
    check_storable(owner, argument, value)


SENDER_LIMIT = 200  # characters of an outside event's sender: it is a label, not a payload


def check_sender(owner: str, argument: str, value: Any) -> None:
    """None, or who sent an outside event (``send --source``): one printable line, as it lands in records,
    spans and console lines (``external:<sender>``)."""
    if value is None:
        return
    if not isinstance(value, str):
        raise TypeError(f"{owner}: {argument} must be a string, not {kind_of(value)}")
    if not value.strip() or len(value) > SENDER_LIMIT or not value.isprintable():
        raise ValueError(f"{owner}: {argument} must be one printable line of 1 to {SENDER_LIMIT} characters, "
                         f"not {value[:40]!r}")


def check_storable(owner: str, argument: str, value: str) -> None:
    """Text UTF-8 can hold: a lone surrogate (``"\\ud83d"``, half of an emoji's pair; an undecodable
    byte read with ``surrogateescape``) could be neither saved nor sent, so it is refused where given."""
    index = next((i for i, c in enumerate(value) if "\ud800" <= c <= "\udfff"), None) if not value.isascii() else None
    if index is not None:
        raise ValueError(f"{owner}: {argument} holds a lone surrogate {value[index]!r} at character {index}, "
                         "which is not text UTF-8 can hold (half of a character's pair, or an undecodable byte)")


def agent_name_problem(name: str) -> str | None:
    """What is wrong with ``name`` as an agent's name, or None: call paths and labels join names with
    '/' (``main/Jack``), and views, console lines and session listings show them on one line."""
    if not name.strip():
        return "must not be empty"
    if "/" in name:
        return "may not contain '/' (it joins agent names in call paths)"
    odd = next((c for c in name if not c.isprintable()), None)
    if odd is not None:
        return f"may not contain {odd!r} (a name is one line of printable characters)"
    return None


def check_agent_name(owner: str, argument: str, value: Any) -> None:
    """A usable agent name (``agent_name_problem``): a string, else TypeError; else ValueError."""
    check_required_text(owner, argument, value)
    problem = agent_name_problem(value)
    if problem is not None:
        raise ValueError(f"{owner}: {argument} {problem}")


def check_optional(owner: str, argument: str, value: Any, kind: type | tuple[type, ...], what: str) -> None:
    """``value`` is None or of ``kind`` (``what`` says which in the error)."""
    if value is not None and not isinstance(value, kind):
        raise TypeError(f"{owner}: {argument}= takes {what}, not {kind_of(value)}")


def check_text(owner: str, argument: str, value: Any) -> None:
    """None or a non-empty string (a model, a session id, an API base)."""
    check_optional(owner, argument, value, str, "a string")
    if value is not None and not value.strip():
        raise ValueError(f"{owner}: {argument}= is empty")


def check_count(owner: str, argument: str, value: Any, *, optional: bool = False, least: int = 1) -> None:
    """A whole number of at least ``least`` (None too when ``optional``)."""
    if value is None and optional:
        return
    if not is_whole(value):
        raise TypeError(f"{owner}: {argument}= takes a whole number, not {kind_of(value)}")
    if value < least:
        raise ValueError(f"{owner}: {argument}= must be at least {least}, not {value}")


def check_seconds(owner: str, argument: str, value: Any, *, optional: bool = False) -> None:
    """A positive, finite number of seconds (None too when ``optional``)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{owner}: {argument}= takes seconds as a number, not {kind_of(value)}")
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{owner}: {argument}= must be a positive number of seconds, not {value}")


def check_flag(owner: str, argument: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{owner}: {argument}= takes True or False, not {kind_of(value)}")


def can_take(func: Any, count: int) -> bool:
    """Whether ``func`` can be called with ``count`` positional arguments (True when it cannot be told:
    some built-ins have no signature to read, and are judged when called)."""
    try:
        inspect.signature(func).bind(*range(count))
    except TypeError:
        return False
    except ValueError:
        return True
    return True


def names_of(owner: str, argument: str, values: Any, *, agent_names: bool = False) -> frozenset[str] | None:
    """None, or a list of non-empty names as a frozenset. A lone string is refused: iterated, ``"task"``
    would be the names ``t``, ``a``, ``s``, ``k`` and the hook would never apply. ``agent_names``: each
    must be a name an agent can have (``agent_name_problem``), or the hook could never act on it."""
    if values is None:
        return None
    if isinstance(values, str):
        raise TypeError(f"{owner}: {argument}= takes a list of names, not one string: {argument}=[{values!r}]")
    if isinstance(values, (bytes, Mapping)) or not isinstance(values, Iterable):
        raise TypeError(f"{owner}: {argument}= takes a list of names, not {kind_of(values)}")
    listed = tuple(values)
    for index, name in enumerate(listed):
        check_required_text(owner, f"{argument}[{index}]", name)
        problem = agent_name_problem(name) if agent_names else None
        if problem is not None:
            raise ValueError(f"{owner}: {argument}[{index}] {problem}")
    return frozenset(listed)


class _RefusesInOneLine(type(BaseModel)):  # pydantic's model metaclass, named without its private module
    """Constructing a model (``Budget(...)``) refuses a wrong value in one ValueError naming the field.
    On the metaclass, not ``__init__``: pydantic's own ``model_validate`` would call an ``__init__``
    and wrap its error again, and the callers that read pydantic's errors field by field keep them."""

    def __call__(cls, *args: Any, **data: Any) -> Any:
        if args:  # pydantic's own words name BaseModel.__init__ and a count, not the fields to give
            fields = ", ".join(f"{field}=" for field in cls.model_fields)
            raise TypeError(f"{cls.__name__} takes keyword arguments only ({fields})")
        try:
            return super().__call__(*args, **data)
        except ValidationError as exc:
            raise ValueError(f"{cls.__name__}: {validation_error_line(exc)}") from None


class CheckedModel(BaseModel, metaclass=_RefusesInOneLine):
    """A public pydantic model (a budget, request settings, an eviction policy) whose constructor refuses
    a wrong value in one ValueError naming the field, not pydantic's multi-line report with a URL."""


def validation_error_line(exc: ValidationError) -> str:
    """The first error of a pydantic report as ``field=value: what is wrong`` (the others follow from a fix)."""
    error = exc.errors()[0]
    field = ".".join(str(part) for part in error["loc"])
    message = error["msg"].removeprefix("Value error, ")  # a validator's own words need no prefix
    message = message[:1].lower() + message[1:]
    more = exc.error_count() - 1
    return f"{field}={error['input']!r}: {message}" + (f" (and {more} more)" if more else "")
