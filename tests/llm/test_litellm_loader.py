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
