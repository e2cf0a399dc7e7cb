"""How a closing ``Session`` ends its runs in progress from another thread, and saves a fork closed before any run."""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from otel_agents.api import Session


def save_fork_state(session: Session) -> None:
    """The run of no prompt ``otel-agents fork`` makes without one: it records the inherited state, so the
    fork closed before any run is saved whole and resumable (no model is called)."""
    session._state_unsaved = False
    record = lambda: session.runtime.run(None, context=session._context)  # noqa: E731
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        if session._runner is not None:
            session._runner.run(record())
        else:
            asyncio.run(record())
        return
    failed: list[BaseException] = []  # a running loop here cannot run it: a thread of its own does

    def in_thread() -> None:
        try:
            asyncio.run(record())
        except BaseException as exc:
            failed.append(exc)

    worker = threading.Thread(target=in_thread)
    worker.start()
    worker.join()
    if failed:
        raise failed[0]


def closed_during_run(session: Session) -> RuntimeError:
    """What ``run_sync`` raises when ``close()`` from another thread cancelled its run."""
    return RuntimeError(f"session {session.id} was closed while the run was in progress: the run was cancelled")


def end_runs_from_thread(session: Session) -> None:
    """Cancels each run in progress and waits for its end, from a thread that is not running its loop."""
    try:
        here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        here = None
    runs = dict(session._runs)
    loops = {task.get_loop() for task in runs}
    if here in loops or any(not loop.is_running() for loop in loops):
        raise RuntimeError(f"session {session.id} has a run in progress that close() cannot wait for from here: "
                           "await session.aclose() (it cancels the run and saves what it did), "
                           "or close the session once the run has returned")
    session._closed = True  # no run starts from here on
    for task in runs:
        task.get_loop().call_soon_threadsafe(task.cancel)
    for task, ended in runs.items():
        while not ended.wait(0.1):
            if not task.get_loop().is_running():  # stopped with the run unfinished: it will not end now
                raise RuntimeError(f"session {session.id}: the loop of its run in progress stopped before the run ended")
