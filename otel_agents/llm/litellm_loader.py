"""The one place litellm is imported, so its price map is always the bundled one.

Importing litellm costs seconds; commands that call no LLM never reach this.
"""

from __future__ import annotations

import os
from types import ModuleType


def load_litellm() -> ModuleType:
    # Never fetch the price map from the network at run time: use the bundled copy.
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    return litellm
