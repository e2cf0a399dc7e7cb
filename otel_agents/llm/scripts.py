"""Scripts for the offline ``scripted`` model: loading and validation (no litellm here; the format: docs/scripts.md).

The model's answer is a pure function of the request: the agent's name and how many assistant
turns its transcript already holds. An agent with no turn left answers with the fallback
utterance, so a session can always go on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

from otel_agents.arguments import agent_name_problem
from otel_agents.json_nesting import NestingTooDeep, check_nesting
from otel_agents.llm.budget import Budget, BudgetError, budget_from_mapping
from otel_agents.llm.model_settings import ModelSettings, ModelSettingsError, settings_from_mapping
from otel_agents.llm.script_hooks import HookSpec, HookSpecError, parse_hooks
from otel_agents.llm.script_triggers import TriggerError, TriggerSpec, parse_triggers

FALLBACK_UTTERANCE = "I have nothing further to add."
BUILTIN_SCRIPTS = ("jack-and-jill",)
_TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})


class ScriptError(ValueError):
    """A script that cannot be loaded; the message names the file and the problem."""


@dataclass(frozen=True)
class ScriptedToolCall:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ScriptedFailure:
    status: int
    retry_after: float | None = None


@dataclass(frozen=True)
class ScriptedTurn:
    text: str | None = None
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    reasoning: str | None = None
    usage: dict[str, int] | None = None
    latency_ms: int = 0
    fail_first_attempt: ScriptedFailure | None = None
    # What a router reports (as OpenRouter does): {"provider": "...", "cost": usd, "upstream_inference_cost": usd}
    served: dict[str, Any] | None = None


@dataclass(frozen=True)
class Script:
    name: str
    source: str  # builtin name or absolute path, recorded for resume
    root_name: str = "main"
    root_system_prompt: str | None = None
    prompts: tuple[str, ...] = ()
    hooks: tuple[HookSpec, ...] = ()
    agents: dict[str, tuple[ScriptedTurn, ...]] = field(default_factory=dict)
    fallback: str = FALLBACK_UTTERANCE
    params: ModelSettings | None = None  # the root's request parameters, inherited by its sub-agents
    agent_params: dict[str, ModelSettings] = field(default_factory=dict)  # by agent name
    stream: bool = False
    triggers: tuple[TriggerSpec, ...] = ()  # files watched while the session runs (script_triggers.py)
    budget: Budget | None = None  # the root's limits, its sub-agents' spending included
    agent_budgets: dict[str, Budget] = field(default_factory=dict)  # by agent name
    eviction: dict[str, Any] | None = None  # checked fields of the runtime's EvictionPolicy (scenario.py builds it)

    def budgets_by_name(self, root_name: str, root_own: Budget | None = None) -> dict[str, Budget]:
        """Limits by agent name, the root's included: ``budget`` with an app's own on top, limit by limit
        (as ``agent_settings`` layers request parameters), so neither silently drops the other's limits."""
        out = dict(self.agent_budgets)
        script_root = self.budget if self.budget is not None else out.get(root_name)
        root = script_root.merged(root_own) if script_root is not None else root_own
        if root is not None:
            out[root_name] = root
        return out

    def agent_settings(self, root_name: str, root_own: ModelSettings | None = None) -> dict[str, ModelSettings]:
        """Request parameters by agent name, the root's (``params`` and an app's own) included."""
        out = dict(self.agent_params)
        out[root_name] = (self.params or ModelSettings()).merged(out.get(root_name)).merged(root_own)
        return out

    @property
    def model(self) -> str:
        return f"scripted/{self.name}"

    def created_names(self) -> frozenset[str]:
        """The names the script's turns give ``task``: with the root, every agent a scripted run can have."""
        calls = (call for turns in self.agents.values() for turn in turns for call in turn.tool_calls)
        return frozenset(call.arguments["name"] for call in calls
                         if call.name == "task" and isinstance(call.arguments.get("name"), str))

    def check_agent_names(self, root_name: str, *, keys: bool = True, hooks: Iterable[Any] = (),
                          owner: str = "", known: Iterable[str] = ()) -> None:
        """For a session whose root (named ``root_name``) answers from this script: refuse an ``agents`` key
        no agent can have (the root's name nor a ``task`` name), whose turns would never be said while the
        agent meant answers the fallback, and a hook watching, or an ``agent_params``/``agent_budgets`` key
        naming, an agent the script neither defines nor creates, which would never act (a misspelt budget's
        limit dropped in silence). A real model's agents are its own choice, so its session is not checked;
        ``keys=False`` (a program's own root, which may borrow a shared script) leaves the ``agents`` keys;
        ``hooks``: a program's own as well (its errors start with ``owner``); ``known``: agents a resumed
        session has already."""
        known = self.created_names() | {root_name} | set(known)
        for key in self.agents if keys else ():
            if key not in known:
                raise _fail(self.source, f"'agents' key {key!r} is no agent this script has: not its root "
                                         f"({root_name!r}) nor a name its turns give 'task' (a typo?)")
        known |= set(self.agents)
        for where, hook in [(self.source, h) for h in self.hooks] + [(owner, h) for h in hooks]:
            answering = getattr(hook, "agent", None)  # an approval answered by it approves all until it exists
            if isinstance(answering, str) and answering not in known:
                raise _fail(where, f"hook {hook.name!r}: agent {answering!r} answers it and is no agent of this "
                                   f"script (its agents: {', '.join(sorted(known))}): it would approve everything")
            unknown = sorted(set(getattr(hook, "agents", None) or ()) - known)
            if unknown:
                raise _fail(where, f"hook {hook.name!r}: agents names {', '.join(map(repr, unknown))}, no agent "
                                         f"of this script (its agents: {', '.join(sorted(known))}): "
                                         "the hook would never act on it")
        for what, keyed in (("agent_params", self.agent_params), ("agent_budgets", self.agent_budgets)):
            for key in keyed:
                if key not in known:
                    raise _fail(self.source, f"{what!r} key {key!r} is no agent this script has (its agents: "
                                             f"{', '.join(sorted(known))}): it would apply to none (a typo?)")

    def turn(self, agent_name: str, assistant_turns: int) -> ScriptedTurn:
        turns = self.agents.get(agent_name, ())
        if assistant_turns < len(turns):
            return turns[assistant_turns]
        return ScriptedTurn(text=self.fallback)


def _fail(where: str, why: str) -> ScriptError:
    return ScriptError(f"{where}: {why}")


def _parse_turn(raw: Any, where: str) -> ScriptedTurn:
    if isinstance(raw, str):
        return ScriptedTurn(text=raw)
    if not isinstance(raw, dict):
        raise _fail(where, "a turn is a string or an object")
    unknown = set(raw) - {"text", "tool_calls", "reasoning", "usage", "latency_ms", "fail_first_attempt", "served"}
    if unknown:
        raise _fail(where, f"unknown turn field(s) {sorted(unknown)}")
    raw_calls = raw.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise _fail(where, "'tool_calls' must be a list")
    calls = []
    for i, call in enumerate(raw_calls):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"].strip():
            raise _fail(f"{where}.tool_calls[{i}]", "needs a string 'name'")
        args = call.get("arguments", {})
        if not isinstance(args, dict):
            raise _fail(f"{where}.tool_calls[{i}]", "'arguments' must be an object")
        calls.append(ScriptedToolCall(call["name"], args))
    text = raw.get("text")
    if text is not None and not isinstance(text, str):
        raise _fail(where, "'text' must be a string")
    if text is None and not calls:
        raise _fail(where, "a turn needs 'text' or 'tool_calls'")
    usage = raw.get("usage")
    if usage is not None and (
        not isinstance(usage, dict)
        or not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**63 for v in usage.values())
    ):
        raise _fail(where, "'usage' maps token kinds to non-negative integers below 2**63")
    failure = raw.get("fail_first_attempt")
    parsed_failure = None
    if failure is not None:
        status = failure.get("status") if isinstance(failure, dict) else None
        if isinstance(status, bool) or not isinstance(status, int) or status not in _TRANSIENT_STATUSES:
            raise _fail(where, f"'fail_first_attempt.status' must be one of {sorted(_TRANSIENT_STATUSES)}")
        retry_after = failure.get("retry_after")
        if retry_after is not None and (
            isinstance(retry_after, bool) or not isinstance(retry_after, (int, float)) or not 0 <= retry_after <= 60
        ):
            raise _fail(where, "'fail_first_attempt.retry_after' must be a number of seconds from 0 to 60")
        parsed_failure = ScriptedFailure(status, retry_after)
    latency = raw.get("latency_ms", 0)
    if isinstance(latency, bool) or not isinstance(latency, int) or latency < 0:
        raise _fail(where, "'latency_ms' must be a non-negative integer")
    reasoning = raw.get("reasoning")
    if reasoning is not None and not isinstance(reasoning, str):
        raise _fail(where, "'reasoning' must be a string")
    return ScriptedTurn(text, tuple(calls), reasoning, usage, latency, parsed_failure, _parse_served(raw, where))


_SERVED_FIELDS = {"provider": str, "cost": float, "upstream_inference_cost": float}


def _parse_served(raw: dict[str, Any], where: str) -> dict[str, Any] | None:
    served = raw.get("served")
    if served is None:
        return None
    if not isinstance(served, dict) or not served or set(served) - set(_SERVED_FIELDS):
        raise _fail(where, f"'served' is an object of {sorted(_SERVED_FIELDS)}")
    for key, value in served.items():
        ok = (isinstance(value, str) and value.strip()) if _SERVED_FIELDS[key] is str else (
            isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < float("inf"))
        if not ok:
            raise _fail(where, f"'served.{key}' must be " + ("a non-empty string" if key == "provider" else "a cost >= 0"))
    return dict(served)


# A key outside these is a typo (``"hook"`` for ``"hooks"``) that would drop what it meant in silence.
_SCRIPT_FIELDS = frozenset({"name", "description", "root", "agents", "prompts", "hooks", "fallback", "params",
                            "agent_params", "budget", "agent_budgets", "stream", "triggers", "eviction"})


def _check_names(source: str, what: str, names: Any) -> None:
    """Agent names as ``otel_agents.Agent`` and the ``task`` tool take them: any other would match no agent."""
    empty = [name for name in names if not name.strip()]
    if empty:
        raise _fail(source, f"{what} must be non-empty names, not {empty[0]!r}")
    for name in names:
        problem = agent_name_problem(name)
        if problem is not None:
            raise _fail(source, f"{what}: {name!r} {problem}")


def parse_script(data: Any, source: str) -> Script:
    if not isinstance(data, dict):
        raise _fail(source, "a script is a JSON object")
    unknown = sorted(set(data) - _SCRIPT_FIELDS)
    if unknown:
        raise _fail(source, f"unknown top-level field(s) {unknown} (known: {', '.join(sorted(_SCRIPT_FIELDS))})")
    name = data.get("name")
    if not isinstance(name, str) or not name or "/" in name:
        raise _fail(source, "'name' must be a non-empty string without '/'")
    # It names the model (scripted/NAME) on every span, ledger record and console line, as agent names do.
    problem = agent_name_problem(name)
    if problem is not None:
        raise _fail(source, f"'name' {problem}")
    agents_raw = data.get("agents")
    if not isinstance(agents_raw, dict):
        raise _fail(source, "'agents' must map agent names to lists of turns")
    _check_names(source, "'agents' keys", agents_raw)
    agents = {}
    for agent, turns in agents_raw.items():
        if not isinstance(turns, list):
            raise _fail(f"{source}: agents.{agent}", "must be a list of turns")
        agents[agent] = tuple(_parse_turn(t, f"{source}: agents.{agent}[{i}]") for i, t in enumerate(turns))
    root = data.get("root") or {}
    if not isinstance(root, dict):
        raise _fail(source, "'root' must be an object")
    if set(root) - {"name", "system_prompt"}:
        raise _fail(source, f"unknown 'root' field(s) {sorted(set(root) - {'name', 'system_prompt'})}")
    for key in ("name", "system_prompt"):
        if root.get(key) is not None and not isinstance(root[key], str):
            raise _fail(source, f"'root.{key}' must be a string")
    if root.get("name") is not None and not root["name"].strip():  # "" was taken as "main"
        raise _fail(source, "'root.name' must be a non-empty string (or left out: the root is then 'main')")
    problem = agent_name_problem(root["name"]) if root.get("name") is not None else None
    if problem is not None:
        raise _fail(source, f"'root.name' {problem}")
    fallback = data.get("fallback", FALLBACK_UTTERANCE)
    if not isinstance(fallback, str) or not fallback.strip():  # "" made every agent out of turns answer nothing
        raise _fail(source, "'fallback' must be a non-empty string (or left out: the default utterance)")
    prompts = data.get("prompts") or []
    if not isinstance(prompts, list) or not all(isinstance(p, str) for p in prompts):
        raise _fail(source, "'prompts' must be a list of strings")
    if not all(p.strip() for p in prompts):  # an empty prompt would be recorded and answered
        raise _fail(source, "'prompts' must not hold an empty prompt")
    try:
        hooks = parse_hooks(data.get("hooks") or [], source)
    except HookSpecError as exc:
        raise ScriptError(str(exc)) from None
    try:
        params = settings_from_mapping(data["params"], source) if data.get("params") is not None else None
        raw_agent_params = data.get("agent_params", {})
        if not isinstance(raw_agent_params, dict):
            raise _fail(source, "'agent_params' must map agent names to request parameters")
        _check_names(source, "'agent_params' keys", raw_agent_params)
        agent_params = {
            agent: settings_from_mapping(value, f"{source}: agent_params.{agent}")
            for agent, value in raw_agent_params.items()
        }
    except ModelSettingsError as exc:
        raise ScriptError(str(exc)) from None
    budget, agent_budgets = _parse_budgets(data, source)
    stream = data.get("stream", False)
    if not isinstance(stream, bool):
        raise _fail(source, "'stream' must be true or false")
    try:
        triggers = parse_triggers(data.get("triggers"), source)
    except TriggerError as exc:
        raise ScriptError(str(exc)) from None
    eviction = _parse_eviction(data.get("eviction"), source)
    return Script(
        name=name,
        source=source,
        root_name=root.get("name") or "main",
        root_system_prompt=root.get("system_prompt"),
        prompts=tuple(prompts),
        hooks=hooks,
        agents=agents,
        fallback=fallback,
        params=params,
        agent_params=agent_params,
        stream=stream,
        triggers=triggers,
        budget=budget,
        agent_budgets=agent_budgets,
        eviction=eviction,
    )


def _parse_eviction(raw: Any, source: str) -> dict[str, Any] | None:
    """``{"max_live_agents": N, "idle_seconds": S}`` (either may be left out), checked here for a one-line error."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or not set(raw) <= {"max_live_agents", "idle_seconds"}:
        raise _fail(source, "'eviction' must be an object with 'max_live_agents' and/or 'idle_seconds'")
    count, seconds = raw.get("max_live_agents"), raw.get("idle_seconds")
    if count is not None and (type(count) is not int or count < 0):
        raise _fail(source, "'eviction.max_live_agents' must be a whole number >= 0")
    if seconds is not None and (type(seconds) not in (int, float) or not 0 <= seconds < float("inf")):
        raise _fail(source, "'eviction.idle_seconds' must be a number of seconds >= 0")
    return dict(raw)


def _parse_budgets(data: dict[str, Any], source: str) -> tuple[Budget | None, dict[str, Budget]]:
    raw = data.get("agent_budgets", {})
    if not isinstance(raw, dict):
        raise _fail(source, "'agent_budgets' must map agent names to budgets")
    _check_names(source, "'agent_budgets' keys", raw)
    try:
        budget = budget_from_mapping(data["budget"], f"{source}: budget") if data.get("budget") is not None else None
        return budget, {agent: budget_from_mapping(value, f"{source}: agent_budgets.{agent}")
                        for agent, value in raw.items()}
    except BudgetError as exc:
        raise ScriptError(str(exc)) from None


def _one_value_per_key(pairs: list[tuple[str, Any]], source: str) -> dict[str, Any]:
    """A JSON object whose keys are unique: a key given twice would keep its last value in silence
    (two ``"Jack"`` turn lists, the first lost)."""
    made = dict(pairs)
    if len(made) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise ScriptError(f"{source}: the key {twice!r} is given twice in one object (JSON would keep only the last)")
    return made


def load_script(name_or_path: str, *, saved: bool = False) -> Script:
    """A built-in script by name, or a JSON file by path. A name a person gave (not ``saved``: a recorded or default
    source, a built-in's name or an absolute path) that is both a built-in's and an existing file's is
    refused: either reading would surprise someone, and the built-in used to win in silence."""
    if name_or_path in BUILTIN_SCRIPTS and not saved and Path(name_or_path).exists():
        raise ScriptError(f"script {name_or_path!r} is both a built-in script and the file ./{name_or_path}: "
                          f"give ./{name_or_path} for the file, or run elsewhere (or rename the file) for the built-in")
    if name_or_path in BUILTIN_SCRIPTS:
        text = resources.files("otel_agents.llm").joinpath("scripts", f"{name_or_path}.json").read_text()
        source = name_or_path
    else:
        path = Path(name_or_path)
        if not path.is_file():
            known = ", ".join(BUILTIN_SCRIPTS)
            raise ScriptError(f"no script {name_or_path!r}: not a file and not a built-in script ({known})")
        source = str(path.resolve())  # errors name the file as every later one does
        try:
            text = path.read_text(encoding="utf-8-sig")  # JSON is UTF-8; some editors start it with a BOM
        except UnicodeDecodeError as exc:
            raise ScriptError(f"{source}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at byte offset "
                              f"{exc.start}): JSON scripts are UTF-8") from None
        except OSError as exc:
            raise ScriptError(f"{source}: cannot read: {exc.strerror or exc}") from None
    try:
        check_nesting(text, source)  # before the parser, which fails on deep nesting with RecursionError
        data = json.loads(text, object_pairs_hook=lambda pairs: _one_value_per_key(pairs, source))
    except NestingTooDeep as exc:
        raise ScriptError(str(exc)) from None
    except json.JSONDecodeError as exc:
        raise ScriptError(f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    return parse_script(data, source)
