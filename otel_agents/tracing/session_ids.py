"""Session ids: made by the runtime, carried on every span, and the name of a session's directory.

Here, below both runtime and persistence, so that naming a directory never imports the runtime.
"""

from __future__ import annotations

import re
import secrets
from datetime import datetime, timezone

SESSION_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def new_session_id() -> str:
    """``20261122-062138-c80fb3``: sortable by creation, unique enough for one home."""
    return f"{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def valid_session_id(session_id: str) -> bool:
    """Ids are path components: nothing that could escape the sessions directory."""
    return bool(SESSION_ID_PATTERN.match(session_id)) and ".." not in session_id
