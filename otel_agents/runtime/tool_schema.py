"""A tool's arguments as a pydantic model: the JSON schema the model sees, and the check of each call.

The model is built from the function's signature (annotations, defaults, docstring
descriptions), the same approach as openai-agents-python's function schemas. Validation
is strict (see ``STRICT_CONFIG``) so a model's mistake comes back to it as an error
result instead of being quietly coerced: ``{"name": 7}`` is not the name ``"7"``.
"""

from __future__ import annotations

import inspect
import json
from typing import Any, Callable, NamedTuple, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

# strict: JSON already carries types, so 7 is not "7", "1" is not 1 and 1 is not true.
#   Pydantic's strict mode still accepts an int for a float, and in JSON mode a string
#   for an enum, Literal, date or UUID, an array for a tuple and an object for a nested
#   model or dataclass: that is how those values travel in JSON. Validation also passes
#   strict=True, so nested models are strict whatever their own config says.
# extra="forbid": a misspelt optional argument would otherwise be dropped in silence.
# allow_inf_nan=False: NaN and 1e999 are never a number a tool means.
STRICT_CONFIG = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)

# Schema keywords whose values are schemas (the others, like default and enum, hold data).
_SUBSCHEMA = {"items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else"}
_SUBSCHEMA_LISTS = {"anyOf", "oneOf", "allOf", "prefixItems"}
_SUBSCHEMA_MAPS = {"properties", "$defs", "patternProperties", "dependentSchemas"}

_SHORT_MESSAGES = {
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "int_from_float": "must be an integer",
    "int_parsing": "must be an integer",
    "float_parsing": "must be a number",
    "bool_parsing": "must be true or false",
    "float_type": "must be a number",
    "finite_number": "must be a finite number",
    "bool_type": "must be true or false",
    "list_type": "must be an array",
    "tuple_type": "must be an array",
    "set_type": "must be an array",
    "frozen_set_type": "must be an array",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "dataclass_type": "must be an object",
    "none_required": "must be null",
    "missing": "is required",
    "extra_forbidden": "is not an argument of this tool",
}
_MAX_REPORTED = 3  # problems named in one error line; the model fixes those and tries again


class InvalidToolArguments(ValueError):
    """The call's arguments do not fit the tool; ``str()`` is the tool result the model sees."""

    def __init__(self, tool_name: str, problem: str):
        super().__init__(f"Error: invalid arguments for {tool_name}: {' '.join(problem.split())}")


class ToolArguments(NamedTuple):
    sent: dict[str, Any]  # the JSON object as the model sent it (what approval hooks judge)
    values: dict[str, Any]  # validated, typed keyword arguments for the function


def arguments_model(
    func: Callable[..., Any], hints: dict[str, Any], param_docs: dict[str, str], skip: str | None
) -> type[BaseModel]:
    """A pydantic model with one field per parameter of ``func`` except ``skip`` (the ToolContext)."""
    fields: dict[str, Any] = {}
    for index, (pname, param) in enumerate(inspect.signature(func).parameters.items()):
        if pname == skip:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {func.__name__}: *{pname} cannot be described to a model; name each parameter")
        annotation = hints.get(pname, Any if param.annotation is param.empty else param.annotation)
        default = ... if param.default is param.empty else param.default
        if default is None:
            annotation = Optional[annotation]  # ``x: dict = None``: null is what leaving it out means
        # Field names are positional so any parameter name works (``json``, ``_x``, ``model_config``);
        # the alias is what the model sees and sends.
        fields[f"p{index}"] = (annotation, Field(default, alias=pname, description=param_docs.get(pname)))
    return create_model(f"{func.__name__}_arguments", __config__=STRICT_CONFIG, **fields)


def parameters_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema cleaned for function calling: no titles, optionals shown as their type."""
    schema = model.model_json_schema()
    _clean(schema)
    ordered = {"type": "object", "properties": schema.get("properties", {}), "required": schema.get("required", [])}
    ordered.update({k: v for k, v in schema.items() if k not in ordered})
    return ordered


def _clean(schema: dict[str, Any]) -> None:
    schema.pop("title", None)
    for key, value in schema.items():
        if key in _SUBSCHEMA and isinstance(value, dict):
            _clean(value)
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            for sub in value:
                _clean(sub)
        elif key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            for sub in value.values():
                _clean(sub)
            if key == "properties":
                for name, sub in value.items():
                    value[name] = _optional_as_its_type(sub)


def _optional_as_its_type(schema: dict[str, Any]) -> dict[str, Any]:
    """``anyOf [T, null]`` with default null is shown as T: leaving it out means null."""
    options = schema.get("anyOf")
    if schema.get("default", 0) is not None or not isinstance(options, list) or len(options) != 2:
        return schema
    others = [o for o in options if o != {"type": "null"}]
    if len(others) != 1:
        return schema
    rest = {k: v for k, v in schema.items() if k != "anyOf"}
    return {**others[0], **rest}


def validate_arguments(tool_name: str, model: type[BaseModel], raw: str) -> ToolArguments:
    """Check a call's JSON text against the model; raise :class:`InvalidToolArguments` if it does not fit."""
    text = raw if raw.strip() else "{}"
    try:
        sent = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InvalidToolArguments(tool_name, f"not valid JSON ({exc})") from None
    if not isinstance(sent, dict):
        raise InvalidToolArguments(tool_name, f"arguments must be a JSON object, not {_json_kind(sent)}")
    try:
        checked = model.model_validate_json(text, strict=True)
    except ValidationError as exc:
        raise InvalidToolArguments(tool_name, describe_errors(exc, sent)) from None
    fields = type(checked).model_fields
    # Only what was sent: the function's own defaults apply to the rest, as in a plain call.
    return ToolArguments(sent, {fields[f].alias or f: getattr(checked, f) for f in checked.model_fields_set})


def describe_errors(error: ValidationError, sent: Any) -> str:
    """Pydantic's errors as ``path message`` phrases, grouped by path; alternatives joined with ``or``."""
    by_path: dict[str, list[str]] = {}
    for item in error.errors(include_url=False, include_input=False):
        path = _path_in(sent, item["loc"], keep_last=item["type"] in ("missing", "extra_forbidden"))
        by_path.setdefault(path, [])
        message = _short_message(item)
        if message not in by_path[path]:
            by_path[path].append(message)
    phrases = [_phrase(path, messages) for path, messages in by_path.items()]
    extra = len(phrases) - _MAX_REPORTED
    return "; ".join(phrases[:_MAX_REPORTED]) + (f"; and {extra} more" if extra > 0 else "")


def _path_in(sent: Any, loc: tuple[Any, ...], keep_last: bool) -> str:
    """The location as a path into the sent JSON (``points[2].x``), without pydantic's union-member tags."""
    path, node = "", sent
    for position, part in enumerate(loc):
        last = position == len(loc) - 1
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        elif not (last and keep_last):
            continue  # a tag such as 'int' or 'Point' naming the union member that was tried
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "arguments"


def _short_message(item: Any) -> str:
    if item["type"] == "string_too_short" and item.get("ctx", {}).get("min_length") == 1:
        return "must not be empty"
    if item["type"] in _SHORT_MESSAGES:
        return _SHORT_MESSAGES[item["type"]]
    message = str(item["msg"])
    if message.startswith("Input should be "):
        return "must be " + message[len("Input should be "):]
    return ": " + message


def _phrase(path: str, messages: list[str]) -> str:
    alternatives = [m[len("must be "):] for m in messages if m.startswith("must be ")]
    if len(alternatives) == len(messages) > 1:
        return f"{path} must be {' or '.join(alternatives)}"
    first = messages[0]
    return f"{path}{first}" if first.startswith(":") else f"{path} {first}"


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "a string" if isinstance(value, str) else "an array"
