"""The one place litellm is imported, so its price map is always the bundled one.

Importing litellm costs seconds; commands that call no LLM never reach this.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import logging
import os
import sys
import threading
import warnings
from types import ModuleType

# litellm's async logging worker is bound to one event loop. A process that runs sessions on
# several loops (the Python API under repeated ``asyncio.run``, a test runner) makes it carry
# its pending tasks to the new loop, and say so on stderr as a warning. Nothing is lost, and
# no callback of ours is among those tasks: the line is noise in the user's diagnostics.
_LOOP_CHANGED = "LoggingWorker: event loop changed"


def _not_loop_change(record: logging.LogRecord) -> bool:
    return not (isinstance(record.msg, str) and record.msg.startswith(_LOOP_CHANGED))


_LITELLM_LOGGER = logging.getLogger("LiteLLM")  # fetched once: load_litellm runs at every LLM attempt


_DROPPED_CALL = r"coroutine '[\w.]*acompletion' was never awaited"
# litellm serializes a reply's usage through pydantic before it checks it: a provider's usage of the
# wrong types (``"prompt_tokens": "many"``) makes pydantic warn on stderr, a block naming no operation,
# about no input of the user's. The attempt fails and its span says why.
_BAD_USAGE = r"Pydantic serializer warnings:[\s\S]*field_name='\w*tokens'"
_QUIETED = ((_DROPPED_CALL, RuntimeWarning), (_BAD_USAGE, UserWarning))
_filters_checked: list | None = None  # the warnings.filters list last found to hold them


def _quiet_library_warnings() -> None:
    """litellm makes a provider's coroutine in a worker thread and awaits it after; a call cut short
    in between (Ctrl-C, SIGTERM, a cancelled task) drops it unawaited, by design, and the session
    records the call as cancelled. Python's "never awaited" warning about it would be the one stderr
    line naming no operation. Only that coroutine's warning, and pydantic's about a reply's usage
    fields (``_BAD_USAGE``), are silenced; any other still shows."""
    global _filters_checked
    # load_litellm runs at every attempt: the list is scanned only when it is another one, as
    # ``warnings.catch_warnings`` (a test runner's) swaps in a copy and puts the old one back.
    if warnings.filters is _filters_checked:
        return
    for pattern, category in _QUIETED:
        if not any(f[1] is not None and f[1].pattern == pattern for f in warnings.filters):
            warnings.filterwarnings("ignore", message=pattern, category=category)
    _filters_checked = warnings.filters


def load_litellm() -> ModuleType:
    # Never fetch the price map from the network at run time: use the bundled copy.
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    first_import = "litellm" not in sys.modules
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    _LITELLM_LOGGER.addFilter(_not_loop_change)  # added once, however often asked (litellm may be imported before us)
    _quiet_library_warnings()  # only if absent: added again, it would move in front of the user's own filters
    if first_import:
        # The import leaves ~280,000 long-lived objects (and no cyclic garbage: a collection
        # right after it frees nothing). Freezing them keeps every later full collection
        # from walking them again: a traced 500-call session spends ~8 % less CPU
        # (benchmarks/run.py, docs/performance.md).
        gc.freeze()
    return litellm


# What litellm imports lazily at its first HTTP call (~460 modules, about 1 s: the provider SDK's resource
# classes, mostly): inside the first attempt it would be timed, and bounded by --timeout, as the request's.
_PROVIDER_PATH = (
    "openai.resources",
    "litellm.llms.openai.openai",
    "litellm.llms.openai.chat.gpt_audio_transformation",
    "litellm.llms.openai_like.dynamic_config",
    "litellm.llms.litellm_proxy.chat.transformation",
    "litellm.llms.vertex_ai.vertex_ai_partner_models.anthropic.transformation",
    "litellm.proxy.openai_files_endpoints.common_utils",
    "litellm._service_logger",
)
_warm_lock = threading.Lock()
_warmed = False


async def warm_provider_path() -> None:
    """Import what litellm's first HTTP call would (about 1 s), before a first attempt: its ``timeout`` bounds,
    and its ``latency_ms`` measures, the request alone. Once per process, on a worker thread (as ``prepare``
    imports litellm), so the event loop goes on meanwhile."""
    if not _warmed:
        await asyncio.to_thread(_warm)


def _warm() -> None:
    global _warmed
    with _warm_lock:
        if _warmed:
            return
        load_litellm()
        for name in _PROVIDER_PATH:
            try:
                importlib.import_module(name)
            except Exception:  # another litellm version moved it: its first call loads what it needs
                pass
        _warmed = True
