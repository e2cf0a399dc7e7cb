"""LoggedString: a str that carries the message id of the substance it represents (seed 001)."""

from __future__ import annotations


class LoggedString(str):
    """A string with its message_id for logging.

    For originals the id is their own message id; for formatted versions (such as
    ``"[Jack]: Hi"``) it is the original's id, which becomes the recipient entry's
    ``substance``. Operational code treats it as a plain string.
    """

    message_id: str | None

    def __new__(cls, content: str, message_id: str | None = None) -> "LoggedString":
        obj = super().__new__(cls, content)
        obj.message_id = message_id
        return obj

    def __reduce__(self):  # keep the id across copy/pickle
        return (LoggedString, (str(self), self.message_id))


def substance_of(value: object) -> str | None:
    return getattr(value, "message_id", None)
