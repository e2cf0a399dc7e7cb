"""LoggedString: a str that carries the message id of the substance it represents (seed 001)."""

from __future__ import annotations

import re

MESSAGE_ID = re.compile(r"msg_[0-9]{6,}")  # as Session.allocate_message_id makes them


class LoggedString(str):
    """A string with its message_id for logging.

    For originals the id is their own message id; for formatted versions (such as
    ``"[Jack]: Hi"``) it is the original's id, which becomes the recipient entry's
    ``substance``. Operational code treats it as a plain string.
    """

    message_id: str | None

    def __new__(cls, content: str, message_id: str | None = None) -> "LoggedString":
        # Checked here: a record whose substance is no message id made the session unreadable for good.
        if message_id is not None and not isinstance(message_id, str):
            raise TypeError(f"LoggedString: message_id must be a message id (str) or None, not {type(message_id).__name__}")
        if message_id is not None and not MESSAGE_ID.fullmatch(message_id):
            raise ValueError(f"LoggedString: message_id {message_id!r} is not a message id (msg_000001 and on)")
        obj = super().__new__(cls, content)
        obj.message_id = message_id
        return obj

    def __reduce__(self):  # keep the id across copy/pickle
        return (LoggedString, (str(self), self.message_id))


def substance_of(value: object) -> str | None:
    return getattr(value, "message_id", None)
