"""The one door between the tools and the query service: the error sanitizer.

Every service call a tool makes goes through :meth:`ServiceBoundary.run`. Invariants:

* the caller's own cancellation is re-raised unchanged (the ``SESSION_QUERY_ABORTED`` error
  the service raised, or the caller token's own error), so an agent loop that cancels a call
  sees its cancellation, not a tool result;
* any other failure becomes a ``SessionQueryError`` whose message is a fixed, detail-free
  sentence chosen by code alone (:data:`SANITIZED_MESSAGES`): no path, SQL, stack, foreign id
  or service wording can reach the model; ``INVALID_CONFIG``, ``SOURCE_CONFLICT``, foreign
  exceptions and failures while classifying become ``SESSION_QUERY_TOOL_FAILED``;
* the two retryable codes tell the model to try again: ``BUSY`` with a fixed sentence,
  ``INDEX_BUILDING`` with the build's progress (``N of M sessions``), the only detail that
  ever crosses, and only as two non-negative integers taken from the error's ``context``;
* the full diagnostic (message, cause chain, stack) goes to this module's logger only, at
  WARNING; an expected outcome (a retryable code, a missing session or event, a refused
  window, a disabled search, a stale page, the tools' own search deadline) is one INFO line
  without a stack, so a server's log shows damage and bugs, not every "try again";
* a search deadline set by the tools (not by the caller) that expires is reported as a
  timeout the model can act on (code ``SESSION_QUERY_ABORTED``).
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable
from typing import TypeVar

from sessionquery.errors import ErrorCode, SessionQueryError, ToolErrorCode
from sessionquery.query.cancel import CancelToken
from sessionquery.tools.access import unauthorized

__all__ = [
    "BUSY_MESSAGE",
    "INDEX_BUILDING_MESSAGE",
    "SANITIZED_MESSAGES",
    "SEARCH_TIMEOUT_MESSAGE",
    "TOOL_FAILED_MESSAGE",
    "DeadlineToken",
    "ServiceBoundary",
    "is_caller_cancellation",
    "sanitize",
    "tool_failed",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

TOOL_FAILED_MESSAGE = "session query operation failed"
SEARCH_TIMEOUT_MESSAGE = (
    "session search ran out of time; narrow the query or add filters and try again"
)

BUSY_MESSAGE = "session history is busy with other writers; try again shortly"
INDEX_BUILDING_MESSAGE = "the history index is still being built; try again shortly"
"""The ``INDEX_BUILDING`` sentence when the error carries no usable progress numbers."""

SANITIZED_MESSAGES: dict[ErrorCode, str] = {
    ErrorCode.ABORTED: "session query was cancelled",
    ErrorCode.CORRUPT_SESSION: "session event history is corrupt",
    ErrorCode.EVENT_NOT_FOUND: "session event was not found",
    ErrorCode.INDEX_FAILED: "session search index is unavailable",
    ErrorCode.INVALID_CURSOR: "session search continuation is invalid",
    ErrorCode.INVALID_FILTER: "session query filters were rejected",
    ErrorCode.INVALID_LIMIT: "session query result limit was rejected",
    ErrorCode.INVALID_QUERY: "session query was rejected",
    ErrorCode.INVALID_LINEAGE: "session lineage is invalid",
    ErrorCode.INVALID_SURFACE: "session event history is invalid",
    ErrorCode.INVALID_WINDOW: "session event window is invalid",
    ErrorCode.PERSISTENCE_FAILED: "session history storage is unavailable",
    ErrorCode.SEARCH_DISABLED: "session search is disabled in this deployment",
    ErrorCode.SESSION_NOT_FOUND: "session was not found",
    ErrorCode.STALE_CURSOR: "session history changed while paging; retry the complete search call",
    ErrorCode.BUSY: BUSY_MESSAGE,
    ErrorCode.INDEX_BUILDING: INDEX_BUILDING_MESSAGE,
}
"""Fixed model-facing messages by code. ``INVALID_CONFIG`` and ``SOURCE_CONFLICT`` are absent
on purpose: they describe the deployment, not the request, and become the generic failure."""


class DeadlineToken(CancelToken):
    """A cancel token with its own deadline that also honours a parent token.

    The deadline is the earlier of the two, so code that reads ``deadline`` directly (a
    SQLite progress handler, for instance) sees the effective one; ``expired`` (and
    ``cancelled``) is true as soon as it is for either token, also for the tokens
    :meth:`sooner` derives.
    """

    __slots__ = ("_parent",)

    def __init__(self, timeout_ms: int, parent: CancelToken | None = None) -> None:
        deadline = time.monotonic() + timeout_ms / 1000
        if parent is not None and parent.deadline is not None:
            deadline = min(deadline, parent.deadline)
        super().__init__(deadline)
        self._parent = parent

    @property
    def expired(self) -> bool:
        """Whether this token's deadline passed or the parent token expired."""
        parent = self._parent
        return super().expired or (parent is not None and parent.expired)

    @property
    def cancelled(self) -> bool:
        """Whether this token or the parent was cancelled (not merely past a deadline)."""
        parent = self._parent
        return super().cancelled or (parent is not None and parent.cancelled)

    def sooner(self, seconds: float) -> CancelToken:
        """A token like this one (same cancellation, same parent) ``seconds`` earlier."""
        token = copy.copy(self)
        token.deadline = None if self.deadline is None else self.deadline - seconds
        return token


def tool_failed() -> SessionQueryError:
    """The generic failure every unclassifiable error turns into."""
    return SessionQueryError(ToolErrorCode.FAILED, TOOL_FAILED_MESSAGE)


def sanitize(exc: BaseException) -> SessionQueryError:
    """The model-safe error for ``exc``: same code, fixed message, or the generic failure."""
    if isinstance(exc, SessionQueryError):
        if exc.code is ToolErrorCode.UNAUTHORIZED:
            return unauthorized()
        if exc.code is ErrorCode.INDEX_BUILDING:
            return _index_building(exc)
        if isinstance(exc.code, ErrorCode) and exc.code in SANITIZED_MESSAGES:
            return SessionQueryError(exc.code, SANITIZED_MESSAGES[exc.code])
    return tool_failed()


def _index_building(exc: SessionQueryError) -> SessionQueryError:
    """``INDEX_BUILDING`` with its progress, when the context holds two sane counts."""
    indexed = exc.context.get("sessions_indexed")
    total = exc.context.get("sessions_total")
    if type(indexed) is int and type(total) is int and 0 <= indexed <= total:
        return SessionQueryError(
            ErrorCode.INDEX_BUILDING,
            f"the history index is still being built: {indexed} of {total} sessions; "
            "try again shortly",
            context={"sessions_indexed": indexed, "sessions_total": total},
        )
    return SessionQueryError(ErrorCode.INDEX_BUILDING, INDEX_BUILDING_MESSAGE)


_EXPECTED_CODES = frozenset(
    {
        ErrorCode.BUSY,
        ErrorCode.INDEX_BUILDING,
        ErrorCode.SESSION_NOT_FOUND,
        ErrorCode.EVENT_NOT_FOUND,
        ErrorCode.INVALID_WINDOW,
        ErrorCode.SEARCH_DISABLED,
        ErrorCode.STALE_CURSOR,
    }
)
"""Outcomes of a sound deployment (a retry, a missing target, a refused request, a page gone
stale under a writer, which the tools' collection restarts): logged as one INFO line, without
the stack that a damaged store or a bug gets."""


def _is_expected(exc: Exception) -> bool:
    return isinstance(exc, SessionQueryError) and exc.code in _EXPECTED_CODES


def _summary(exc: Exception) -> str:
    assert isinstance(exc, SessionQueryError)
    return f"{exc.code.value} ({' '.join(exc.message.split())})"


def is_caller_cancellation(exc: BaseException, cancel: CancelToken | None) -> bool:
    """Whether ``exc`` is the caller's own cancellation, to be re-raised unchanged."""
    return (
        cancel is not None
        and cancel.expired
        and isinstance(exc, SessionQueryError)
        and exc.code is ErrorCode.ABORTED
    )


class ServiceBoundary:
    """Runs service calls for one tool execution and sanitizes their failures.

    Args:
        cancel: the caller's token, whose cancellation is re-raised unchanged.
        token: the token handed to the service (the caller's, or a :class:`DeadlineToken`
            combining it with the tool's own search deadline).
    """

    def __init__(self, cancel: CancelToken | None, token: CancelToken | None) -> None:
        self._cancel = cancel
        self._token = token

    def run(self, call: Callable[[CancelToken | None], T]) -> T:
        """Call ``call(token)``; return its result or raise a sanitized error.

        Raises:
            SessionQueryError: ``SESSION_QUERY_ABORTED`` unchanged when the caller cancelled;
                otherwise a sanitized error (see the module docstring).
        """
        if self._cancel is not None:
            self._cancel.check()
        try:
            result = call(self._token)
        except Exception as exc:
            self._raise_sanitized(exc)
        if self._cancel is not None:
            self._cancel.check()
        return result

    def _raise_sanitized(self, exc: Exception) -> None:
        if self._cancel is not None and self._cancel.expired:
            if is_caller_cancellation(exc, self._cancel):
                raise exc
            self._cancel.check()
        try:
            own_timeout = self._is_own_timeout(exc)
            if own_timeout or _is_expected(exc):
                logger.info("session query call answered %s", _summary(exc))
            else:
                logger.warning("session query call failed: %r", exc, exc_info=exc)
            if own_timeout:
                safe = SessionQueryError(ErrorCode.ABORTED, SEARCH_TIMEOUT_MESSAGE)
            else:
                safe = sanitize(exc)
        except Exception:  # pragma: no cover - logging itself failed
            safe = tool_failed()
        raise safe from None

    def _is_own_timeout(self, exc: Exception) -> bool:
        return (
            isinstance(self._token, DeadlineToken)
            and self._token.expired
            and isinstance(exc, SessionQueryError)
            and exc.code is ErrorCode.ABORTED
        )
