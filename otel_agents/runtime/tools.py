"""Tools the model can call: a decorator that derives the JSON schema from a plain function.

    @tool
    def get_weather(city: str, unit: str = "C") -> str:
        '''Current weather for a city.

        city: the city name
        unit: C or F
        '''

Sync and async functions both work. A parameter annotated ``ToolContext`` (or
``ToolContext | None``, or named ``ctx``) is not shown to the model; it receives the calling agent and the call's ids.
Parameters may be str, int, float, bool, enums, Literal, lists, tuples, dicts, Optional,
unions, nested pydantic models and dataclasses; each call's arguments are validated
against them before the function runs (``tool_schema.py``).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import types
import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from pydantic import BaseModel, PydanticUserError

from otel_agents.runtime.logged_string import LoggedString, substance_of
from otel_agents.runtime.tool_schema import (
    InvalidToolArguments,
    ToolArguments,
    arguments_model,
    parameters_schema,
    validate_arguments,
)

if TYPE_CHECKING:
    from otel_agents.runtime.agent import Agent

__all__ = ["InvalidToolArguments", "Tool", "ToolArguments", "ToolContext", "make_tool", "tool"]


def plain_result(result: Any) -> Any:
    """A pydantic model or a dataclass instance as the JSON value it stands for (tools' arguments are
    pydantic models too); anything else as it is, for :func:`result_problem` to judge."""
    dump = getattr(result, "model_dump", None)
    if callable(dump) and not isinstance(result, type):
        return dump(mode="json")
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return dataclasses.asdict(result)
    return result


def result_problem(name: str, result: Any) -> str | None:
    """Why what a tool returned cannot be its result, or None: text is the result as it is, None an empty one,
    anything else JSON can hold its JSON. Anything else had been its repr quoted as a JSON string
    (``"<object object at 0x…>"``, ``"b'\\xff'"``), which told the model nothing and hid the mistake."""
    if result is None or isinstance(result, str):
        return None
    try:
        json.dumps(result, ensure_ascii=False, allow_nan=False)  # NaN is no JSON a provider takes
    except (TypeError, ValueError) as exc:  # a value JSON has no form for, or a container holding itself
        kind = type(result).__name__
        kind = f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind}"
        if isinstance(result, (dict, list, tuple)):
            return f"Error: tool {name!r} returned {kind} that is not JSON ({exc})"
        return f"Error: tool {name!r} returned {kind}, not text or JSON"
    return None


@dataclass
class ToolContext:
    """What a tool may know about its call. ``reply`` appends a tool result at once; ``tell`` passes text on to
    another agent with its substance (``piece_of_text`` records text to pass on to several)."""

    agent: "Agent"
    tool_call_id: str
    call_message_id: str
    name: str = ""
    replies: list[str] = field(default_factory=list)
    last_reply_id: str = field(default="", init=False)  # the message id remind hooks are told of
    ended: bool = field(default=False, init=False)  # the call has its result: nothing more may answer it

    def reply(self, content: str) -> str:
        """Append a tool result to the caller's transcript now (seed 001 discuss does this per utterance).

        Raises TypeError for anything but text (a record's content is text: a number saved as such
        made the session unreadable) and RuntimeError once the call has ended (a result after it
        would sit in the transcript answering no call, which providers refuse)."""
        if not isinstance(content, str):
            raise TypeError(f"ToolContext.reply takes text (str), not {type(content).__name__}")
        if self.ended:
            raise RuntimeError(f"ToolContext.reply: the call {self.tool_call_id} of tool {self.name!r} has ended; "
                               "reply while the tool runs, or return the result")
        self.replies.append(content)
        self.last_reply_id = self.agent.harken_tool_result(self.tool_call_id, self.name, content)
        return self.last_reply_id

    def piece_of_text(self, text: str) -> LoggedString:
        """Record ``text`` as a piece of text this call made (seed 001: in no transcript, its cause this call)
        and return it carrying its id: told to several agents with ``tell``, it is stored once, each entry's substance."""
        if not isinstance(text, str):
            raise TypeError(f"ToolContext.piece_of_text takes text (str), not {type(text).__name__}")
        session = self.agent.session
        return LoggedString(text, session.log_piece_of_text(self.agent.agent_id, str(text), cause=self.call_message_id))

    def tell(self, agent: "str | Agent", text: str) -> str | None:
        """Tell another agent (name, id, path of names, or the runtime agent) ``text``, as ``task`` and ``discuss``
        do: a user entry in its transcript whose substance is what ``text`` carries (a ``LoggedString``: a piece of
        text, an utterance), else a new piece of text caused by this call. Transform hooks may rewrite the words;
        the substance stays. Returns the entry's message id, or None while it is held as ``Session.external``
        holds an outside event: the agent has an LLM request in flight (the entry follows its answer, which was
        made without it), events held already, or a run's prompt not recorded yet. An agent waiting for its own
        tool calls' results (the caller among them) cannot take a message before them: ``RuntimeError``; a
        ``LoggedString`` naming a message this session has no record of: ``ValueError``."""
        if not isinstance(text, str):
            raise TypeError(f"ToolContext.tell takes text (str), not {type(text).__name__}")
        session = self.agent.session
        target = session.find_agent(agent) if isinstance(agent, str) else agent
        if target is None:
            raise ValueError(f"ToolContext.tell: no agent {agent!r} in session {session.id}")
        substance = substance_of(text)
        if substance is not None and not session.has_record(substance):  # a link no record answers
            raise ValueError(f"ToolContext.tell: the text's substance {substance} is no record of session {session.id}")
        if target.awaiting_tool_results():
            raise RuntimeError(f"ToolContext.tell: {target.name} ({target.agent_id}) waits for its tool calls' "
                               "results; a message now would come between a call and its result")
        said = text if substance else self.piece_of_text(text)
        delivered = LoggedString(session.hooks.transform(self.agent, target, str(said)), substance_of(said))
        return session.outside.tell(target, delivered, None)


TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass
class Tool:
    """A callable the model may use; ``arguments_model`` is both its JSON schema and its argument check."""

    name: str
    description: str
    arguments_model: type[BaseModel]
    func: Callable[..., Any]
    context_param: str | None = None
    tool_type: str = "function"  # gen_ai.tool.type: function | extension
    provider: str | None = None  # the server or provider behind it (an MCP server, an API), for the ledger
    parameters: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not TOOL_NAME.fullmatch(self.name):
            # What OpenAI's and Anthropic's APIs accept: refused here, not by the provider mid-run.
            raise ValueError(f"tool name {self.name!r}: use 1 to 64 letters, digits, '_' or '-' "
                             "(name a lambda with @tool(name=...))")
        self.parameters = parameters_schema(self.arguments_model)  # once: it is sent on every turn

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def parse_arguments(self, raw: str) -> ToolArguments:
        """The call's JSON text, validated; raises :class:`InvalidToolArguments` (its text is the result)."""
        return validate_arguments(self.name, self.arguments_model, raw)

    async def invoke(self, ctx: ToolContext, arguments: dict[str, Any]) -> Any:
        """Call the function with already validated keyword arguments (``parse_arguments().values``)."""
        kwargs = dict(arguments)
        if self.context_param:
            kwargs[self.context_param] = ctx
        result = self.func(**kwargs)
        if inspect.isawaitable(result):
            result = await typing.cast(Awaitable[Any], result)
        return result


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


def _is_context(hint: Any) -> bool:
    """``ToolContext``, also as ``Optional[ToolContext]``, ``ToolContext | None`` or ``Annotated[ToolContext, ...]``."""
    if hint is ToolContext:
        return True
    if typing.get_origin(hint) is typing.Annotated:
        return _is_context(typing.get_args(hint)[0])
    args = typing.get_args(hint)
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and ToolContext in args and all(
        a is ToolContext or a is type(None) for a in args)


def _check_texts(name: Any, description: Any) -> None:
    for argument, value in (("name", name), ("description", description)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"tool: {argument}= takes a string, not {type(value).__name__}")
    if name == "":  # else the function's own name was used, and an error named that one (``'<lambda>'``)
        raise ValueError("tool: name= is empty: give 1 to 64 letters, digits, '_' or '-', "
                         "or leave name= out for the function's own name")


def make_tool(
    func: Callable[..., Any], name: str | None = None, description: str | None = None, provider: str | None = None
) -> Tool:
    if not callable(func):
        raise TypeError(f"tool: takes a function, not {type(func).__name__}")
    _check_texts(name, description)
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):  # a built-in (int, len) may have none: its parameters cannot be told
        raise TypeError(f"tool: {getattr(func, '__name__', func)!r} has no signature to describe to a model; "
                        "wrap it in a function of your own with typed parameters") from None
    positional = [p.name for p in signature.parameters.values() if p.kind is inspect.Parameter.POSITIONAL_ONLY]
    if positional:  # a call passes the model's arguments by name: such a tool failed at every call
        raise TypeError(f"tool: {getattr(func, '__name__', func)!r} takes {', '.join(positional)} by position only; "
                        "a tool is called with its arguments by name: wrap it in a function of your own")
    summary, param_docs = _docstring_parts(func.__doc__ or "")
    hints = typing.get_type_hints(func, include_extras=True)  # extras: Annotated[..., Field(...)] constraints
    context_param = next((p for p in signature.parameters if _is_context(hints.get(p)) or p == "ctx"), None)
    try:
        model = arguments_model(func, hints, param_docs, skip=context_param)
        return Tool(name or func.__name__, description or summary or func.__name__, model, func, context_param,
                    provider=provider)
    except PydanticUserError as exc:  # a parameter type pydantic cannot validate or describe
        first_line = str(exc).splitlines()[0]
        raise TypeError(f"tool {func.__name__}: its parameters cannot be described to a model: {first_line}") from exc


def tool(
    func: Callable[..., Any] | None = None, *, name: str | None = None, description: str | None = None,
    provider: str | None = None,
):
    """Decorator: ``@tool`` or ``@tool(name=..., description=..., provider=...)``; returns a :class:`Tool`.

    ``provider`` labels the server or provider the tool calls (``"mcp:github"``, ``"weather-api"``):
    its spans carry it and the billing ledger's tool lines name it (default: none).
    """
    if provider is not None and (not isinstance(provider, str) or not provider.strip()):
        raise TypeError("tool provider must be a non-empty string")
    _check_texts(name, description)  # now, not when the decorator is applied
    if func is None:
        return lambda f: make_tool(f, name, description, provider)
    return make_tool(func, name, description, provider)
