"""What a view can refuse: unknown or ambiguous names, and unreadable session data."""

from __future__ import annotations


class ViewError(ValueError):
    """A view request that cannot be answered; the message is one line for the user."""


class UnknownAgent(ViewError):
    pass


class AmbiguousAgent(ViewError):
    pass


class UnknownMessage(ViewError):
    pass


class AmbiguousMessage(ViewError):
    """A shortened message id that begins several ids."""


class UnknownSpan(ViewError):
    pass


class SessionDataError(ViewError):
    """The session's files are missing, malformed or inconsistent."""
