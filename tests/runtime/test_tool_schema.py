"""@tool: JSON schema and argument checks from the signature and docstring; sync and async invocation."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Literal, Optional

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.trace import StatusCode
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from otel_agents.runtime.tools import InvalidToolArguments, Tool, ToolContext, make_tool, tool
from otel_agents.tracing import semconv as sc


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


def test_the_docs_example_runs_as_written_and_has_the_schema_shown_beside_it():
    # docs/tools.md is copied from: its first snippet must run alone, and its schema be the one shown.
    doc = (Path(__file__).resolve().parents[2] / "docs" / "tools.md").read_text(encoding="utf-8")
    snippet = re.search(r"```python\n(.*?)```", doc, flags=re.S).group(1)
    schema = re.search(r"```json\n(.*?)```", doc, flags=re.S).group(1)
    namespace: dict = {}
    exec(compile(snippet, "docs/tools.md", "exec"), namespace)
    assert namespace["get_weather"].parameters == json.loads(schema)


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


# --- schemas of the common types (pydantic's, cleaned for function calling) ---


class Color(Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: int
    y: float = 0.0


@dataclass
class Box:
    label: str
    sizes: list[int] = field(default_factory=list)


def no_titles(schema) -> bool:
    """True when no schema node has a title (a property *named* title is data, not noise)."""
    if isinstance(schema, list):
        return all(no_titles(s) for s in schema)
    if not isinstance(schema, dict):
        return True
    if isinstance(schema.get("title"), str):
        return False
    return all(no_titles(v) for v in schema.values())


def test_schema_of_enums_models_dataclasses_and_containers():
    @tool
    def plot(
        color: Color,
        points: list[Point],
        box: Optional[Box] = None,
        labels: dict[str, int] | None = None,
        pair: tuple[int, str] | None = None,
        scale: float = 1.0,
        title: str = "",
    ) -> str:
        """Plot points."""
        return "ok"

    params = plot.parameters
    props = params["properties"]
    assert list(props) == ["color", "points", "box", "labels", "pair", "scale", "title"]
    assert params["required"] == ["color", "points"]
    assert params["additionalProperties"] is False
    assert no_titles(params)  # the parameter called "title" is still there
    defs = params["$defs"]
    assert props["color"] == {"$ref": "#/$defs/Color"} and defs["Color"] == {"enum": ["red", "blue"], "type": "string"}
    assert props["points"] == {"type": "array", "items": {"$ref": "#/$defs/Point"}}
    assert defs["Point"] == {
        "type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "number", "default": 0.0}},
        "required": ["x"],
    }
    # An optional with a null default is shown as its type: leaving it out means null.
    assert props["box"] == {"$ref": "#/$defs/Box", "default": None}
    assert defs["Box"]["properties"]["sizes"] == {"type": "array", "items": {"type": "integer"}}
    assert props["labels"] == {"type": "object", "additionalProperties": {"type": "integer"}, "default": None}
    assert props["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
    assert props["scale"] == {"type": "number", "default": 1.0}
    json.dumps(plot.schema())  # what is sent must be JSON


def test_a_required_optional_keeps_null_and_any_parameter_name_works():
    def odd(json: str, model_config: int, schema: int | None, _private: bool = False) -> str:
        """Parameter names that are BaseModel attributes, or private in a model."""
        return "ok"

    made = make_tool(odd)
    props = made.parameters["properties"]
    assert list(props) == ["json", "model_config", "schema", "_private"]
    assert props["schema"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert made.parameters["required"] == ["json", "model_config", "schema"]
    assert made.parse_arguments('{"json": "j", "model_config": 1, "schema": null, "_private": true}').values == {
        "json": "j", "model_config": 1, "schema": None, "_private": True,
    }


def test_star_parameters_are_refused_when_the_tool_is_made():
    def spread(*names: str) -> str:
        return ""

    with pytest.raises(TypeError, match=r"tool spread: \*names cannot be described"):
        make_tool(spread)


class Opaque:
    """A type pydantic can neither validate nor describe."""


def test_an_undescribable_parameter_type_is_refused_when_the_tool_is_made():
    def use(thing: Opaque) -> str:
        return ""

    with pytest.raises(TypeError, match=r"^tool use: its parameters cannot be described to a model: Unable to generate"):
        make_tool(use)


def test_a_context_parameter_may_have_any_name_when_annotated():
    def with_context(context: ToolContext, x: int) -> int:
        return x

    made = make_tool(with_context)
    assert made.context_param == "context" and list(made.parameters["properties"]) == ["x"]


def test_builtin_schemas_come_from_their_signatures():
    from otel_agents.runtime.builtins import BUILTIN_TOOLS

    task = BUILTIN_TOOLS["task"].parameters
    assert task["required"] == ["name"]
    assert task["properties"]["name"]["type"] == "string" and task["properties"]["name"]["minLength"] == 1
    assert task["properties"]["system_prompt"]["type"] == "string"
    discuss = BUILTIN_TOOLS["discuss"].parameters
    assert discuss["properties"]["speakers"] == {
        "type": "array", "items": {"type": "string"}, "description": "names of sub-agents who speak, in order",
    }
    assert all(t.parameters["additionalProperties"] is False for t in BUILTIN_TOOLS.values())


# --- validation of the model's arguments ---


@tool
def plot(color: Color, points: list[Point], box: Optional[Box] = None, scale: float = 1.0,
         mode: Literal["fast", "exact"] = "fast") -> str:
    """Plot points."""
    return "ok"


@pytest.mark.parametrize(("raw", "problem"), [
    ('{"color": "red", "points": [], "scale": "2"}', "scale must be a number"),
    ('{"color": "green", "points": []}', "color must be 'red' or 'blue'"),
    ('{"color": "red", "points": [{"x": 1}, {"x": "2"}]}', "points[1].x must be an integer"),
    ('{"color": "red", "points": [{"x": 1.5}]}', "points[0].x must be an integer"),
    ('{"color": "red", "points": {}}', "points must be an array"),
    ('{"color": "red", "points": [], "box": {"sizes": [1]}}', "box.label is required"),
    ('{"color": "red", "points": [], "box": "big"}', "box must be an object"),
    ('{"color": "red", "points": [], "mode": "slow"}', "mode must be 'fast' or 'exact'"),
    ('{"color": "red", "points": [], "colour": "red"}', "colour is not an argument of this tool"),
    ('{"points": []}', "color is required"),
    ('{"color": "red", "points": [], "scale": NaN}', "scale must be a finite number"),
    ('{"color": null, "points": null, "box": 1}',
     "color must be 'red' or 'blue'; points must be an array; box must be an object"),
    ('{"color": 1, "points": 2, "box": 3, "scale": "4"}',
     "color must be 'red' or 'blue'; points must be an array; box must be an object; and 1 more"),
    ("[1, 2]", "arguments must be a JSON object, not an array"),
    ('"red"', "arguments must be a JSON object, not a string"),
    ("null", "arguments must be a JSON object, not null"),
    ('{"color": "red",', "not valid JSON (Expecting property name enclosed in double quotes: line 1 column 17"),
    ("[" * 5000, "not valid JSON"),
])
def test_invalid_arguments_are_one_clear_line(raw, problem):
    with pytest.raises(InvalidToolArguments) as info:
        plot.parse_arguments(raw)
    message = str(info.value)
    assert message.startswith(f"Error: invalid arguments for plot: {problem}")
    assert "\n" not in message


def test_unions_name_every_alternative_at_the_path_the_model_sent():
    @tool
    def pick(choice: int | str, where: list[int | Point]) -> str:
        """Union parameters."""
        return "ok"

    with pytest.raises(InvalidToolArguments) as info:
        pick.parse_arguments('{"choice": [1], "where": [1, {"x": "no"}]}')
    assert str(info.value) == (
        "Error: invalid arguments for pick: choice must be an integer or a string; "
        "where[1] must be an integer; where[1].x must be an integer"
    )


def test_valid_arguments_arrive_typed_and_unsent_ones_keep_the_functions_defaults():
    sent = {"color": "blue", "points": [{"x": 1}, {"x": 2, "y": 3}], "box": {"label": "b", "sizes": [4]}, "scale": 2}
    arguments = plot.parse_arguments(json.dumps(sent))
    assert arguments.sent == sent  # what approval hooks judge: the JSON as the model sent it
    values = arguments.values
    assert values["color"] is Color.BLUE
    assert values["points"] == [Point(x=1), Point(x=2, y=3.0)] and type(values["points"][1].y) is float
    assert values["box"] == Box("b", [4])
    assert values["scale"] == 2.0 and type(values["scale"]) is float  # an int is a fine float
    assert "mode" not in values
    with pytest.raises(InvalidToolArguments, match="color is required; points is required"):
        plot.parse_arguments("  ")  # no arguments at all: an empty object


class LaxPoint(BaseModel):
    x: int  # a lax model of the user's: on its own it would take "2" for 2


def test_a_none_default_accepts_null_even_when_the_annotation_does_not_say_so():
    @tool
    def search(query: str, filters: dict = None) -> str:  # noqa: RUF013 - an implicit Optional, as people write
        """Search."""
        return "ok"

    assert search.parameters["properties"]["filters"] == {"type": "object", "additionalProperties": True,
                                                          "default": None}
    assert search.parse_arguments('{"query": "q", "filters": null}').values == {"query": "q", "filters": None}
    with pytest.raises(InvalidToolArguments, match="filters must be an object$"):
        search.parse_arguments('{"query": "q", "filters": []}')


def test_nested_models_are_strict_whatever_their_own_config():
    @tool
    def move(to: LaxPoint, steps: int = 1) -> str:
        """Move."""
        return "ok"

    assert LaxPoint.model_validate_json('{"x": "2"}').x == 2
    with pytest.raises(InvalidToolArguments, match=r"to\.x must be an integer$"):
        move.parse_arguments('{"to": {"x": "2"}}')
    with pytest.raises(InvalidToolArguments, match="steps must be an integer$"):
        move.parse_arguments('{"to": {"x": 2}, "steps": true}')


# --- the dispatcher: bad arguments and failing tools become error results ---


def execute_spans(span_tree):
    return [s for s in span_tree().spans if s.name.startswith("execute_tool ")]


async def test_invalid_arguments_never_reach_a_hook_or_the_tool(scripted, span_tree):
    from otel_agents.runtime.hooks import ApprovalHook, Decision

    ran, judged = [], []

    @tool
    def add(a: int, b: int = 0) -> int:
        """Add."""
        ran.append((a, b))
        return a + b

    calls = [{"name": "add", "arguments": {"a": "1"}}, {"name": "add", "arguments": {"a": 1, "c": 2}},
             {"name": "task", "arguments": {"name": 7, "system_prompt": None}}, {"name": "add", "arguments": {"a": 2}}]
    session = scripted({"agents": {"main": [{"tool_calls": calls}, "Done."]}}, tools=[add])
    watcher = ApprovalHook("Watcher", lambda request: judged.append(request.arguments) or Decision(True))
    session.hooks.approvers.append(watcher)
    assert await session.run("go") == "Done."
    results = [m["content"] for m in session.root.transcript if m["role"] == "tool"]
    assert results == [
        "Error: invalid arguments for add: a must be an integer",
        "Error: invalid arguments for add: c is not an argument of this tool",
        "Error: invalid arguments for task: name must be a string",
        "2",
    ]
    assert ran == [(2, 0)] and judged == [{"a": 2}]
    assert [a.name for a in session.agents.values()] == ["main"]  # no agent "7"
    spans = execute_spans(span_tree)
    failed = [s for s in spans if s.attributes[sc.TOOL_STATUS] == "failed"]
    assert len(failed) == 3 and len(spans) == 4
    for span, result in zip(failed, results):
        assert span.status.status_code == StatusCode.ERROR and span.status.description == result
        assert span.attributes[sc.ERROR_TYPE] == "tool_failed"
        assert span.attributes[sc.TOOL_RESULT_MESSAGE_ID]  # recorded like any other tool result


async def test_a_raising_tool_is_an_error_result_and_an_error_span(scripted, span_tree):
    @tool
    async def fetch(url: str) -> str:
        """Fetch."""
        raise ConnectionError(f"cannot reach {url}")

    session = scripted({"agents": {"main": [{"tool_calls": [{"name": "fetch", "arguments": {"url": "x"}}]}, "Down."]}},
                       tools=[fetch])
    assert await session.run("go") == "Down."
    (result,) = [m["content"] for m in session.root.transcript if m["role"] == "tool"]
    assert result == "Error: tool 'fetch' failed: ConnectionError: cannot reach x"
    (span,) = execute_spans(span_tree)
    assert span.status.status_code == StatusCode.ERROR and span.status.description == result
    assert span.attributes[sc.TOOL_STATUS] == "failed"


def test_cli_a_task_call_with_a_number_for_a_name_leaves_a_sound_session(home, tmp_path, monkeypatch):
    """Issue 16: {"name": 7} once created agent "7"; then view exited 2 and verify found 7 disagreements."""
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    script = tmp_path / "bad-task.json"
    script.write_text(json.dumps({"name": "bad-task", "agents": {"main": [
        {"tool_calls": [{"name": "task", "arguments": {"name": 7, "system_prompt": None}}]},
        "No helper, then.",
    ]}}))
    exe = [sys.executable, "-m", "otel_agents"]

    def cli(*args):
        return subprocess.run([*exe, *args], capture_output=True, text=True, timeout=120, cwd=tmp_path)

    ran = cli("run", "--script", str(script), "go")
    assert ran.returncode == 0 and ran.stdout == "No helper, then.\n", ran.stderr
    session_id = ran.stderr.strip().splitlines()[-1].split(": ", 1)[1]
    events = [json.loads(line) for line in (home / "sessions" / session_id / "events.jsonl").read_text().splitlines()]
    results = [e["content"] for e in events if e.get("role") == "tool"]
    assert results == ["Error: invalid arguments for task: name must be a string"]
    assert [e["name"] for e in events if e["event_type"] == "agent_created"] == ["main"]
    verified = cli("sessions", "verify", session_id)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    agents = cli("view", session_id, "agents")
    assert agents.returncode == 0, agents.stderr
    assert [line.split()[1] for line in agents.stdout.splitlines()[1:]] == ["main"]


# --- properties: any JSON from the model is a typed call or an "invalid arguments" result ---

PROPERTY = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

json_scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                | st.text(max_size=8) | st.sampled_from(["red", "fast", "7", "1.5", "true", ""]))
json_values = st.recursive(
    json_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)
# Values a lax validator would quietly coerce ("7" to 7, 1 to true, 2.0 to 2, 7 to "7"): they must be refused.
coercible = st.sampled_from(["7", "1.5", "true", "false", 0, 1, 2.0, "red", 7, ["1"], {"x": "2"}])
finite_numbers = st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False)


def arrived_as_sent(sent, got) -> bool:
    """What the tool got is what the model sent, uncoerced (objects may add their defaults)."""
    if isinstance(sent, dict):
        return isinstance(got, dict) and all(k in got and arrived_as_sent(v, got[k]) for k, v in sent.items())
    if isinstance(sent, list):
        return isinstance(got, list) and len(got) == len(sent) and all(map(arrived_as_sent, sent, got))
    return sent == got and (type(sent) is type(got) or (type(sent), type(got)) == (int, float))


def _is_int(value) -> bool:
    return type(value) is int  # a bool is not an int here


def _typed_scalars(v) -> bool:
    return (type(v["s"]) is str and _is_int(v["i"]) and type(v.get("f", 0.0)) is float
            and type(v.get("b", False)) is bool)


def _typed_collections(v) -> bool:
    tags, pair = v.get("tags"), v.get("pair")
    return (type(v["items"]) is list and all(map(_is_int, v["items"]))
            and (tags is None or all(type(k) is str and type(x) is str for k, x in tags.items()))
            and (pair is None or (type(pair) is tuple and _is_int(pair[0]) and type(pair[1]) is str)))


def _typed_structured(v) -> bool:
    point, box = v.get("point"), v.get("box")
    return (isinstance(v["color"], Color) and v.get("mode", "fast") in ("fast", "exact")
            and (point is None or (type(point) is Point and _is_int(point.x) and type(point.y) is float))
            and (box is None or (type(box) is Box and type(box.label) is str and all(map(_is_int, box.sizes)))))


# Each probe: (well-typed argument strategies: required, optional), and a check of what arrived.
PROBES = {
    "scalars": (({"s": st.text(max_size=8), "i": st.integers()},
                 {"f": finite_numbers, "b": st.booleans()}), _typed_scalars),
    "collections": (({"items": st.lists(st.integers(), max_size=3)},
                     {"tags": st.none() | st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2),
                      "pair": st.none() | st.tuples(st.integers(), st.text(max_size=4)).map(list)}),
                    _typed_collections),
    "structured": (({"color": st.sampled_from(["red", "blue"])},
                    {"mode": st.sampled_from(["fast", "exact"]),
                     "point": st.none() | st.fixed_dictionaries({"x": st.integers()}, optional={"y": finite_numbers}),
                     "box": st.none() | st.fixed_dictionaries(
                         {"label": st.text(max_size=4)}, optional={"sizes": st.lists(st.integers(), max_size=2)})}),
                   _typed_structured),
    "task": (({"name": st.text(min_size=1, max_size=6)},
              {"system_prompt": st.none() | st.text(max_size=8), "user_prompt": st.none() | st.text(max_size=8)}),
             None),
}


def probe_tools(received: dict[str, list]) -> list[Tool]:
    def scalars(s: str, i: int, f: float = 0.0, b: bool = False) -> str:
        received["scalars"].append(dict(s=s, i=i, f=f, b=b))
        return "ok"

    def collections(items: list[int], tags: dict[str, str] | None = None, pair: tuple[int, str] | None = None) -> str:
        received["collections"].append(dict(items=items, tags=tags, pair=pair))
        return "ok"

    def structured(color: Color, mode: Literal["fast", "exact"] = "fast", point: Optional[Point] = None,
                   box: Optional[Box] = None) -> str:
        received["structured"].append(dict(color=color, mode=mode, point=point, box=box))
        return "ok"

    return [make_tool(f) for f in (scalars, collections, structured)]


def arguments_for(name: str):
    (required, optional), _ = PROBES[name]
    names = [*required, *optional, "extra"]
    well_typed = st.fixed_dictionaries(required, optional=optional)
    arbitrary = st.dictionaries(st.sampled_from(names) | st.text(max_size=4), json_values, max_size=4)
    bad_value = st.dictionaries(st.sampled_from(names), coercible | json_values, min_size=1, max_size=1)
    one_bad_value = st.tuples(well_typed, bad_value)
    return well_typed | arbitrary | one_bad_value.map(lambda pair: {**pair[0], **pair[1]})


def test_any_json_arguments_are_a_typed_call_or_an_invalid_arguments_result(scripted):
    outcomes: set[tuple[str, bool]] = set()

    @PROPERTY
    @given(st.fixed_dictionaries({name: arguments_for(name) for name in PROBES}))
    def check(arguments):
        received = {name: [] for name in PROBES}
        calls = [{"name": name, "arguments": args} for name, args in arguments.items()]
        session = scripted({"agents": {"main": [{"tool_calls": calls}, "Done."]}}, tools=probe_tools(received))
        assert asyncio.run(session.run("go")) == "Done."  # nothing escaped the dispatcher
        results = {m["name"]: m["content"] for m in session.root.transcript if m["role"] == "tool"}
        for name, sent in arguments.items():
            invalid = results[name].startswith(f"Error: invalid arguments for {name}: ")
            outcomes.add((name, invalid))
            if invalid:
                assert "\n" not in results[name]
            if name == "task":
                made = [a for a in session.agents.values() if a is not session.root]
                assert [a.name for a in made] == ([] if invalid else [sent["name"]])
                continue
            assert len(received[name]) == (0 if invalid else 1), results[name]
            if not invalid:
                got = received[name][0]
                assert results[name] == "ok" and PROBES[name][1](got), got
                assert arrived_as_sent(sent, to_jsonable_python({k: got[k] for k in sent})), (sent, got)

    check()
    # Both answers were exercised for every tool.
    assert outcomes == {(name, invalid) for name in PROBES for invalid in (False, True)}


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["scalars", "collections", "structured"]).flatmap(
    lambda name: st.tuples(st.just(name), arguments_for(name).map(json.dumps) | json_values.map(json.dumps)
                           | st.text(max_size=20))))
def test_parsing_any_text_is_typed_values_or_one_clear_line(case):
    name, raw = case
    received = {n: [] for n in PROBES}
    made = {t.name: t for t in probe_tools(received)}[name]
    try:
        arguments = made.parse_arguments(raw)
    except InvalidToolArguments as exc:
        message = str(exc)
        assert message.startswith(f"Error: invalid arguments for {name}: ") and "\n" not in message
        return
    made.func(**arguments.values)
    assert PROBES[name][1](received[name][0])
    assert arguments.sent == json.loads(raw)
    assert arrived_as_sent(arguments.sent, to_jsonable_python(arguments.values))
