"""Cooperative cancellation with optional deadlines."""

from __future__ import annotations

import threading
import time

from sessionquery.errors import ErrorCode, SessionQueryError

__all__ = ["CancelToken"]


class CancelToken:
    """A thread-safe cancellation flag with an optional absolute deadline.

    Args:
        deadline: a ``time.monotonic()`` value after which the token counts as expired.
    """

    __slots__ = ("_event", "deadline")

    def __init__(self, deadline: float | None = None) -> None:
        self.deadline = deadline
        self._event = threading.Event()

    @classmethod
    def after(cls, seconds: float) -> CancelToken:
        """A token that expires ``seconds`` from now."""
        return cls(time.monotonic() + seconds)

    def sooner(self, seconds: float) -> CancelToken:
        """A token cancelled with this one whose deadline is ``seconds`` earlier (none when
        this one has none): a part of a call that must leave time for the rest."""
        token = CancelToken(None if self.deadline is None else self.deadline - seconds)
        token._event = self._event
        return token

    def cancel(self) -> None:
        """Request cancellation; every later check raises ``SESSION_QUERY_ABORTED``."""
        self._event.set()

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._event.is_set()

    @property
    def expired(self) -> bool:
        """Whether the token was cancelled or its deadline has passed."""
        if self._event.is_set():
            return True
        return self.deadline is not None and time.monotonic() >= self.deadline

    def check(self) -> None:
        """Raise ``SESSION_QUERY_ABORTED`` if the token is cancelled or expired."""
        if self.expired:
            reason = "cancelled" if self._event.is_set() else "deadline exceeded"
            raise SessionQueryError(ErrorCode.ABORTED, f"session query was aborted ({reason})")


def check_cancel(cancel: CancelToken | None) -> None:
    """Raise ``SESSION_QUERY_ABORTED`` when ``cancel`` is set and expired."""
    if cancel is not None:
        cancel.check()
