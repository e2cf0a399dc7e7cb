"""@tool: JSON schema from the signature and docstring; sync and async invocation."""

from __future__ import annotations

from typing import Literal, Optional

import pytest

from otel_agents.runtime.tools import Tool, ToolContext, make_tool, tool


def test_schema_from_signature_and_line_style_docstring():
    @tool
    def get_weather(city: str, unit: str = "C", days: int = 1, detailed: bool = False) -> str:
        """Current weather for a city.

        city: the city name
        unit: C or F
        """
        return f"{city} {unit} {days} {detailed}"

    assert isinstance(get_weather, Tool)
    assert get_weather.schema() == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "the city name"},
                    "unit": {"type": "string", "description": "C or F", "default": "C"},
                    "days": {"type": "integer", "default": 1},
                    "detailed": {"type": "boolean", "default": False},
                },
                "required": ["city"],
                "additionalProperties": False,  # unknown arguments are refused
            },
        },
    }


def test_google_style_args_optional_list_literal_dict():
    @tool(name="search", description="Search the notes.")
    async def find(
        query: str,
        tags: list[str],
        limit: Optional[int] = None,
        ratio: float | None = None,
        mode: Literal["fast", "exact"] = "fast",
        filters: dict = None,  # noqa: RUF013 - an untyped default is allowed
        ids: list = None,  # noqa: RUF013
    ) -> list[str]:
        """Ignored summary.

        Args:
            query (str): words to look for
            tags: only notes with these tags
            limit: at most this many

        Returns:
            the matching notes
        """
        return []

    params = find.schema()["function"]["parameters"]
    assert find.name == "search" and find.description == "Search the notes."
    props = params["properties"]
    assert props["query"] == {"type": "string", "description": "words to look for"}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}, "description": "only notes with these tags"}
    assert props["limit"] == {"type": "integer", "description": "at most this many", "default": None}
    assert props["ratio"] == {"type": "number", "default": None}
    assert props["mode"] == {"enum": ["fast", "exact"], "type": "string", "default": "fast"}
    assert props["filters"]["type"] == "object"
    assert props["ids"]["type"] == "array"
    assert params["required"] == ["query", "tags"]


def test_context_parameter_is_hidden_from_the_model():
    def with_ctx(ctx: ToolContext, x: int) -> int:
        """Uses the context."""
        return x

    def named_ctx(ctx, x: int) -> int:
        return x

    for func in (with_ctx, named_ctx):
        made = make_tool(func)
        assert list(made.parameters["properties"]) == ["x"]
        assert made.context_param == "ctx"
    assert make_tool(named_ctx).description == "named_ctx"  # no docstring: the name


class FakeAgent:
    name = "fake"


async def test_sync_and_async_tools_are_invoked_with_the_context():
    seen = []

    @tool
    def sync_tool(ctx: ToolContext, a: int) -> int:
        seen.append(ctx.tool_call_id)
        return a * 2

    @tool
    async def async_tool(b: str) -> str:
        return b.upper()

    ctx = ToolContext(FakeAgent(), "call_1", "msg_000001", "sync_tool")
    assert await sync_tool.invoke(ctx, {"a": 21}) == 42
    assert await async_tool.invoke(ctx, {"b": "hi"}) == "HI"
    assert seen == ["call_1"]
    with pytest.raises(TypeError):
        await async_tool.invoke(ctx, {"nope": 1})
