"""The public Python API: ``Session`` of ``Agent``\\ s with tools and hooks (``resume``, ``fork``, ``recording``: api_*.py).

Async-first (``await session.run(prompt)``) with a sync convenience (``session.run_sync``).
A session opened inside ``with otel_agents.recording(...)`` is recorded exactly as a CLI
run is (session directory, ledger, lock, crash-safe recorder); outside one it runs
unrecorded. docs/python-api.md is the reference.
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from otel_agents.api_closing import closed_during_run, end_runs_from_thread, save_fork_state
from otel_agents.api_checks import check_run_options, check_scripted_model, hooks_of, tools_of
from otel_agents.api_parts import install, load_script_arg, make_llm, warn_of_triggers, warning_on_failure
from otel_agents.arguments import (
    check_agent_name, check_count, check_optional, check_required_text, check_sender, check_text,
)
from otel_agents.api_recording import active_recording, recording
from otel_agents.llm.budget import Budget, BudgetMeter
from otel_agents.llm.model_settings import ModelSettings
from otel_agents.runtime.eviction import EvictionPolicy, eviction_policy
from otel_agents.runtime.hooks import Hook
from otel_agents.runtime.session import DEFAULT_MAX_TURNS, AgentSpec, RunContext
from otel_agents.runtime.session import Session as RuntimeSession
from otel_agents.runtime.tools import Tool
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.telemetry import noop_telemetry

if TYPE_CHECKING:
    from otel_agents.llm.scripts import Script


@dataclass
class Agent:
    """The root agent of a session: name, model, system prompt and tools.

    Sub-agents are created by the model through the built-in ``task`` tool and inherit
    the tools and the request parameters. ``model`` is any litellm model string; left out,
    the session's ``model`` or its script's offline model is used. ``model_settings``:
    temperature, max tokens, top_p, stop, seed (``ModelSettings``; unset ones are not sent).
    ``budget``: limits on cost, tokens and LLM calls of this agent and its sub-agents
    (``Budget``, docs/budgets.md); a script's ``agent_budgets`` limit sub-agents by name.
    """

    name: str
    system_prompt: str | None = None
    model: str | None = None
    tools: Sequence[Tool | Callable[..., Any]] = ()
    max_turns: int | None = None
    model_settings: ModelSettings | None = None
    budget: Budget | None = None

    def __post_init__(self) -> None:
        """Checks every field where it is given; ``tools`` become ``Tool``\\ s here, once."""
        owner = f"Agent({self.name!r})" if isinstance(self.name, str) else "Agent"
        check_agent_name(owner, "name", self.name)
        check_optional(owner, "system_prompt", self.system_prompt, str, "a string")
        check_text(owner, "model", self.model)
        self.tools = tools_of(owner, self.tools)
        check_count(owner, "max_turns", self.max_turns, optional=True)
        check_optional(owner, "model_settings", self.model_settings, ModelSettings, "a ModelSettings")
        check_optional(owner, "budget", self.budget, Budget, "a Budget")

    def budgets_by_name(self, script: Script | str | os.PathLike[str] | None = None) -> dict[str, Budget]:
        """Limits by agent name: a script's (a file, a built-in name or a loaded one), this root agent's own on top."""
        loaded = load_script_arg(script)
        if loaded is not None:
            return loaded.budgets_by_name(self.name, self.budget)
        return {self.name: self.budget} if self.budget is not None else {}

    def tool_list(self) -> tuple[Tool, ...]:
        return tuple(self.tools)  # made Tools by __post_init__

    def settings_by_name(self, script: Script | str | os.PathLike[str] | None = None) -> dict[str, ModelSettings]:
        """Request parameters by agent name: a script's (as for ``budgets_by_name``), this root agent's own on top."""
        loaded = load_script_arg(script)
        if loaded is not None:
            return loaded.agent_settings(self.name, self.model_settings)
        return {self.name: self.model_settings or ModelSettings()}


def _saved_root(name: str) -> Agent:
    """A saved session's root as resume and fork rebuild it: its name kept as recorded, though an
    older version's script or an imported trace may have given it one ``Agent`` now refuses."""
    agent = Agent("saved")
    agent.name = name
    return agent


class Session:
    """A multi-agent session rooted at ``agent``: ``await session.run(prompt)`` or ``session.run_sync(prompt)``.

    ``script``: a script file or built-in name (docs/scripts.md) answering the offline
    ``scripted`` model, which agents without a model use; its hooks are installed too.
    ``model`` overrides every agent's model, ``model_settings`` every agent's request parameters
    (recorded, so a resume keeps them). ``eviction``: an ``EvictionPolicy`` (default: the script's ``eviction``)
    keeping only active agents in memory while the session is recorded (never unrecorded); evicted agents
    are revived from the saved records when next addressed. ``stream``: stream every LLM call (time to first chunk
    on each chat span; ``on_text(agent_name, text)`` sees the text as it arrives). ``app``: the ``module:factory`` that builds ``agent``
    (docs/python-api.md), recorded so ``otel-agents resume`` re-imports its tools and hooks. Close the session (``with``/``async with``,
    or ``close()``) to write everything and release its lock; the enclosing ``recording``
    closes any session still open.
    """

    def __init__(
        self,
        agent: Agent,
        *,
        hooks: Iterable[Hook] = (),
        script: str | os.PathLike[str] | None = None,
        model: str | None = None,
        session_id: str | None = None,
        max_turns: int = DEFAULT_MAX_TURNS,
        max_attempts: int = 4,
        timeout: float = 120.0,
        api_base: str | None = None,
        app: str | None = None,
        model_settings: ModelSettings | None = None,
        stream: bool = False,
        on_text: Callable[[str, str], None] | None = None,
        budget: Budget | None = None,
        allow_unpriced: bool = False,
        eviction: EvictionPolicy | None = None,
    ) -> None:
        if not isinstance(agent, Agent):
            raise TypeError(f"Session: agent must be an otel_agents.Agent, not {type(agent).__name__}")
        check_run_options("Session", script=script, model=model, session_id=session_id, max_turns=max_turns,
                          max_attempts=max_attempts, timeout=timeout, api_base=api_base, app=app,
                          model_settings=model_settings, stream=stream, on_text=on_text, budget=budget,
                          allow_unpriced=allow_unpriced, eviction=eviction)
        hooks = hooks_of("Session", hooks)
        loaded = load_script_arg(script)
        check_scripted_model("Session", model, loaded)
        if model is None:  # else the session's model is every agent's
            check_scripted_model(f"Session: Agent({agent.name!r})", agent.model, loaded)
        chosen = model or agent.model or (loaded.model if loaded else None)
        if chosen is None:
            raise ValueError(f"agent {agent.name!r} has no model: give it one, or give the session a model or a script")
        if loaded is not None and chosen == loaded.model and not agent.tool_list():  # its turns make every agent
            # (a tool may make others, named as it likes): ScriptError, a ValueError
            loaded.check_agent_names(agent.name, keys=False, hooks=hooks, owner="Session")
        rec = active_recording()
        tracing = rec.tracing if rec else None
        telemetry = tracing.telemetry if tracing else noop_telemetry()  # unrecorded: spans go nowhere
        runtime = RuntimeSession(
            session_id,
            telemetry=telemetry,
            llm=make_llm(telemetry, tracing, max_attempts, timeout, api_base, stream),
            root=AgentSpec(agent.name, chosen, agent.system_prompt, agent.tool_list(), agent.max_turns),
            max_turns=max_turns,
            agent_settings=agent.settings_by_name(loaded),
            settings_override=model_settings,
            agent_budgets=agent.budgets_by_name(loaded),
            budget=BudgetMeter.for_session(budget),
            eviction=eviction or eviction_policy(loaded.eviction if loaded else None),
        )
        if not allow_unpriced:
            runtime.refuse_unpriced()  # BudgetError (a ValueError), before anything runs
        self._setup(runtime, loaded, model, hooks, rec, source="api", app=app, on_text=on_text)

    def _setup(self, runtime: RuntimeSession, script: Any, model: str | None, hooks: Iterable[Hook],
               rec: recording | None, source: str, ownership: Any = None, app: str | None = None,
               on_text: Callable[[str, str], None] | None = None) -> None:
        from otel_agents.runtime.scenario import install_hooks

        self.runtime = runtime
        if script is not None:
            runtime.llm.use_script(script)
            runtime.llm.stream = runtime.llm.stream or script.stream
            install_hooks(runtime, script.hooks)
            warn_of_triggers(script, {"api": "Session"}.get(source, source))
        if on_text is not None:
            runtime.llm.on_text = warning_on_failure(on_text)
        runtime.llm.log_budget_warnings = True  # a program has no console to show the host notice
        install(runtime, hooks, owner={"api": "Session"}.get(source, source))
        extra: dict[str, Any] = {sc.RUN_APP: app} if app else {}
        if runtime.settings_override is not None:
            extra[sc.RUN_PARAMS] = runtime.settings_override.to_json()  # a resume gives them to every agent
        if rec is not None and rec.redacted_save and source != "resume":
            extra[sc.RUN_REDACTED_SAVE] = True
        self._context = RunContext(source=source, script=script.source if script else None, model_override=model,
                                   extra=extra)
        self._runner: asyncio.Runner | None = None
        # run_sync from several threads: one at a time on the one runner (a second Runner.run while its loop
        # runs raises, yet its task is already made and runs on the first thread's loop, unawaited).
        self._runner_turn = threading.Lock()
        self._closed = False
        # Runs in progress (or waiting their turn), each with what it sets once ended: close ends them first.
        self._runs: dict[asyncio.Task[Any], threading.Event] = {}
        # A fork's inherited state is saved by its first run: one closed before any is saved by a run of no prompt.
        self._state_unsaved = source == "fork"
        self._recording_owner = rec
        self._recording = rec._start(self, ownership, resume=source == "resume") if rec else None
        if rec is not None:  # saved from here on: idle agents may be evicted (by runtime.eviction's policy)
            from otel_agents.revivable import keep_revivable

            keep_revivable(runtime, rec.paths.session_dir(runtime.id), redacted=rec.redacted_save and source != "resume")

    @property
    def id(self) -> str:
        """The session id (the name of its directory)."""
        return self.runtime.id

    @property
    def recorded(self) -> bool:
        """True while a recording block records the session (False outside one, and once it is closed)."""
        return self._recording is not None

    def agent(self, name_or_id: str) -> Any:
        """A live agent by id, else the latest of that name, else by its path of names from the root
        (``main/Jill/Inner``) (runtime ``Agent``), or None."""
        return self.runtime.find_agent(name_or_id)

    def _target(self, agent: str | None, owner: str) -> Any:
        check_text(owner, "agent", agent)
        if agent is None:
            return None
        found = self.runtime.find_agent(agent)
        if found is None:
            raise ValueError(f"no agent {agent!r} in session {self.id}")
        return found

    def _open(self) -> None:
        # A closed session's recording has ended: what it did now would be spent and never saved.
        if self._closed:
            raise RuntimeError(f"session {self.id} is closed")

    async def run(self, prompt: str, *, agent: str | None = None) -> str:
        """One prompt, one trace: the agent (default the root) answers; returns its utterance.
        Runs of one session take turns: one started while another is in progress waits for it."""
        self._open()
        check_required_text("Session.run", "prompt", prompt)
        return await self._run(prompt, self._target(agent, "Session.run"), self._context)

    async def send(self, text: str, *, agent: str | None = None, source: str | None = None) -> str:
        """An outside event the agent (default the root) hears and answers at once, as ``otel-agents send``:
        a user message with source ``external`` (``external:<source>``) and a run of source ``external``;
        returns the answer. ``external`` is the event heard without an answer."""
        self._open()
        check_required_text("Session.send", "text", text)
        check_sender("Session.send", "source", source)
        return await self._run(text, self._target(agent, "Session.send"), self._event_context(source))

    def _event_context(self, sender: str | None) -> RunContext:
        """This session's run facts for an outside event's answer: what the CLI's ``send`` records of one."""
        extra = {**self._context.extra, **({sc.INGRESS_SENDER: sender} if sender else {})}
        return replace(self._context, source="external", sender=sender, extra=extra)

    async def _run(self, prompt: str, target: Any, context: RunContext) -> str:
        self.runtime.refuse_nested_run()  # before this task is taken for a run of its own
        task = asyncio.current_task()
        ended = self._runs.setdefault(task, threading.Event()) if task is not None else None
        self._state_unsaved = False
        try:
            return await self.runtime.run(prompt, agent=target, context=context)
        finally:
            if ended is not None:
                self._runs.pop(task, None)  # type: ignore[arg-type]
                ended.set()

    def run_sync(self, prompt: str, *, agent: str | None = None) -> str:
        """``run`` on this session's own event loop (one loop for all its prompts); not inside a running loop.
        Called from several threads at once, each waits for the one in progress to return, as runs take turns.
        ``close()`` from another thread cancels the run: ``RuntimeError`` (session closed while the run was in progress)."""
        self._open()
        check_required_text("Session.run_sync", "prompt", prompt)
        check_text("Session.run_sync", "agent", agent)
        return self._sync("run_sync", "run", lambda: self.run(prompt, agent=agent))

    def send_sync(self, text: str, *, agent: str | None = None, source: str | None = None) -> str:
        """``send`` on this session's own event loop, as ``run_sync`` is ``run``."""
        self._open()
        check_required_text("Session.send_sync", "text", text)
        check_text("Session.send_sync", "agent", agent)
        check_sender("Session.send_sync", "source", source)
        return self._sync("send_sync", "send", lambda: self.send(text, agent=agent, source=source))

    def _sync(self, name: str, awaited: str, call: Callable[[], Any]) -> str:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass  # no loop running: ours may
        else:
            raise RuntimeError(f"Session.{name}() cannot be called from a running event loop: "
                               f"await session.{awaited}() there")
        with self._runner_turn:  # another thread's run_sync in progress: wait for it to return
            self._open()  # closed while this waited: close() cancelled the run it waited for
            if self._runner is None:
                self._runner = asyncio.Runner()
                # A session never closed still closes its loop, at the latest when the interpreter exits:
                # otherwise litellm's logging task is destroyed pending, and Python says so on stderr.
                self._runner_closer = weakref.finalize(self, self._runner.close)
            try:
                return self._runner.run(call())
            except asyncio.CancelledError:
                if self._closed:  # close() from another thread cancelled it: say so, not an empty CancelledError
                    raise closed_during_run(self) from None
                raise
            except (KeyboardInterrupt, SystemExit):
                self._end_runs_left_behind()
                raise
            finally:
                if self._closed and self._runner is not None:  # closed from another thread while this ran
                    self._runner_closer()
                    self._runner = None

    def _end_runs_left_behind(self) -> None:
        """A KeyboardInterrupt or SystemExit raised in a tool call's own task (calls run concurrently)
        leaves the event loop at once, with the run still waiting on that call: the run is cancelled and
        ended here, as a Ctrl-C ends it, or it would go on under the next run (its spans, its spending)."""
        if self._runner is None:
            return
        loop = self._runner.get_loop()
        left = [task for task in self._runs if task.get_loop() is loop and not task.done()]
        for task in left:
            task.cancel()
        if left:
            loop.run_until_complete(asyncio.wait(left))

    def external(self, text: str, *, agent: str | None = None, source: str | None = None) -> str | None:
        """An outside event the agent (default the root) hears without answering yet; returns its message id, or
        None while it is held: during the agent's LLM request, until its tool calls' results are in, or until a
        run called for it records its prompt (heard then, in that order; docs/python-api.md).
        ``source``: who sent it, named in the record's source (``external:<source>``), as ``send``'s."""
        self._open()
        check_required_text("Session.external", "text", text)
        check_sender("Session.external", "source", source)
        target = self._target(agent, "Session.external") or self.runtime.ensure_root()
        return self.runtime.external(target, text, source)

    def close(self) -> bool:
        """Write everything and release the session's lock; False when something could not be saved.
        A run in progress on another thread's loop is cancelled (as cancelling its task is) and waited for
        first; one on this thread's running loop cannot be waited for here: ``RuntimeError`` (``await
        session.aclose()`` there). A closed session refuses to run (``RuntimeError``); ``otel_agents.resume`` carries it on."""
        if self._runs:
            end_runs_from_thread(self)
        else:
            self._closed = True
        if self._state_unsaved and self._recording is not None:
            save_fork_state(self)
        if self._runner is not None and not self._runner.get_loop().is_running():  # else run_sync closes it
            self._runner_closer()  # closes the runner, once
            self._runner = None
        handle, self._recording = self._recording, None
        if handle is None:
            return True
        saved = handle.close()
        self._recording_owner._finished(self, saved)
        return saved

    async def aclose(self) -> bool:
        """``close``; a run of this session still in progress is cancelled and its end awaited first, so what
        it spent is saved and billed (its open tool calls answered as a cancelled run's are)."""
        if asyncio.current_task() in self._runs:
            raise RuntimeError(f"session {self.id}: aclose() inside one of its own runs would wait for itself; "
                               "close it once the run has returned")
        self._closed = True  # no run starts from here on
        mine = [task for task in self._runs if task.get_loop() is asyncio.get_running_loop()]
        for task in mine:
            task.cancel()
        if mine:
            await asyncio.wait(mine)
        if self._state_unsaved and self._recording is not None:
            self._state_unsaved = False
            await self.runtime.run(None, context=self._context)
        return await asyncio.to_thread(self.close)  # which ends any run on another thread's loop

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    async def __aenter__(self) -> "Session":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()
