"""Tools the model can call: a decorator that derives the JSON schema from a plain function.

    @tool
    def get_weather(city: str, unit: str = "C") -> str:
        '''Current weather for a city.

        city: the city name
        unit: C or F
        '''

Sync and async functions both work. A parameter annotated ``ToolContext`` is not
shown to the model; it receives the calling agent and the call's ids.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Union, get_args, get_origin

if TYPE_CHECKING:
    from otel_agents.runtime.agent import Agent

_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


@dataclass
class ToolContext:
    """What a tool may know about its call. ``reply`` appends a tool result at once."""

    agent: "Agent"
    tool_call_id: str
    call_message_id: str
    name: str = ""
    replies: list[str] = field(default_factory=list)

    def reply(self, content: str) -> str:
        """Append a tool result to the caller's transcript now (seed 001 discuss does this per utterance)."""
        self.replies.append(content)
        return self.agent.harken_tool_result(self.tool_call_id, self.name, content)


@dataclass
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    func: Callable[..., Any]
    context_param: str | None = None
    tool_type: str = "function"  # gen_ai.tool.type: function | extension

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    async def invoke(self, ctx: ToolContext, arguments: dict[str, Any]) -> Any:
        kwargs = dict(arguments)
        if self.context_param:
            kwargs[self.context_param] = ctx
        result = self.func(**kwargs)
        if inspect.isawaitable(result):
            result = await typing.cast(Awaitable[Any], result)
        return result


def _json_schema(annotation: Any) -> dict[str, Any]:
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
        return _json_schema(options[0]) if len(options) == 1 else {"anyOf": [_json_schema(a) for a in options]}
    if origin in (list, tuple, set):
        args = get_args(annotation)
        return {"type": "array", "items": _json_schema(args[0]) if args else {}}
    if origin is dict or annotation is dict:
        return {"type": "object"}
    if origin is typing.Literal:
        return {"enum": list(get_args(annotation))}
    if annotation is list:
        return {"type": "array"}
    return {"type": _JSON_TYPES[annotation]} if annotation in _JSON_TYPES else {}


def _docstring_parts(doc: str) -> tuple[str, dict[str, str]]:
    """Summary, and ``name: description`` lines (also Google-style ``Args:`` blocks)."""
    summary_lines, params = [], {}
    in_params = False
    for line in inspect.cleandoc(doc or "").splitlines():
        stripped = line.strip()
        if stripped.lower() in {"args:", "arguments:", "parameters:"}:
            in_params = True
            continue
        match = re.match(r"^(\w+)\s*(?:\([^)]*\))?\s*:\s*(.+)$", stripped)
        if match and (in_params or not summary_lines or summary_lines[-1] == ""):
            params[match.group(1)] = match.group(2)
            in_params = True
            continue
        if not in_params:
            summary_lines.append(stripped)
    return " ".join(s for s in summary_lines if s).strip(), params


def make_tool(func: Callable[..., Any], name: str | None = None, description: str | None = None) -> Tool:
    summary, param_docs = _docstring_parts(func.__doc__ or "")
    hints = typing.get_type_hints(func)
    properties: dict[str, Any] = {}
    required: list[str] = []
    context_param = None
    for pname, param in inspect.signature(func).parameters.items():
        annotation = hints.get(pname, param.annotation)
        if annotation is ToolContext or pname == "ctx":
            context_param = pname
            continue
        schema = _json_schema(annotation)
        if pname in param_docs:
            schema["description"] = param_docs[pname]
        properties[pname] = schema
        if param.default is inspect.Parameter.empty:
            required.append(pname)
        else:
            schema["default"] = param.default
    parameters = {"type": "object", "properties": properties, "required": required}
    return Tool(name or func.__name__, description or summary or func.__name__, parameters, func, context_param)


def tool(func: Callable[..., Any] | None = None, *, name: str | None = None, description: str | None = None):
    """Decorator: ``@tool`` or ``@tool(name=..., description=...)``; returns a :class:`Tool`."""
    if func is None:
        return lambda f: make_tool(f, name, description)
    return make_tool(func, name, description)
