"""The one place litellm is imported, so its price map is always the bundled one.

Importing litellm costs seconds; commands that call no LLM never reach this.
"""

from __future__ import annotations

import gc
import os
import sys
from types import ModuleType


def load_litellm() -> ModuleType:
    # Never fetch the price map from the network at run time: use the bundled copy.
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    first_import = "litellm" not in sys.modules
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    if first_import:
        # The import leaves ~280,000 long-lived objects (and no cyclic garbage: a collection
        # right after it frees nothing). Freezing them keeps every later full collection
        # from walking them again: a traced 500-call session spends ~8 % less CPU
        # (benchmarks/run.py, docs/performance.md).
        gc.freeze()
    return litellm
