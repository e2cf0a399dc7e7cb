"""litellm as the product loads it: its loop-change notice stays off the user's stderr, its other warnings do not."""

from __future__ import annotations

import asyncio
import logging

from otel_agents.llm import litellm_loader
from otel_agents.llm.litellm_loader import load_litellm


def test_the_logging_workers_loop_change_is_not_printed_and_other_warnings_are(capfd):
    litellm = load_litellm()
    load_litellm()  # loading again adds nothing twice
    logger = logging.getLogger("LiteLLM")
    assert logger.filters.count(litellm_loader._not_loop_change) == 1

    from litellm.litellm_core_utils.logging_worker import LoggingWorker

    worker = LoggingWorker()

    async def noop() -> None:
        return None

    async def enqueue_and_leave() -> None:
        worker.ensure_initialized_and_enqueue(noop())  # still pending when this loop ends

    asyncio.run(enqueue_and_leave())
    asyncio.run(enqueue_and_leave())  # litellm carries the pending task over, and would warn
    logger.warning("a warning of litellm's own")
    err = capfd.readouterr().err
    assert "event loop changed" not in err
    assert "a warning of litellm's own" in err
    assert litellm.suppress_debug_info is True


class Provider:  # as litellm's custom providers are: ScriptedLLM.acompletion
    async def acompletion(self) -> None:
        return None

    async def my_own_work(self) -> None:
        return None


def test_a_provider_call_dropped_unawaited_is_not_warned_about_and_other_coroutines_are():
    """litellm drops the provider's coroutine when a call is cut short (the session records it as
    cancelled): Python's "never awaited" warning about it would name no operation of the user's."""
    import warnings

    load_litellm()
    load_litellm()
    assert sum(1 for f in warnings.filters if f[1] is not None and "acompletion" in f[1].pattern) == 1

    with warnings.catch_warnings(record=True) as caught:
        dropped = Provider().acompletion()
        del dropped  # never awaited: warned about as it is freed
        forgotten = Provider().my_own_work()
        del forgotten
    assert [str(w.message) for w in caught] == ["coroutine 'Provider.my_own_work' was never awaited"]
