"""The error tree of sessionquery.

Every failure a caller is expected to handle is one of these::

    Exception
    ├── ValueError
    │   ├── SurfaceError            an event log that cannot be folded (sessionquery.model)
    │   └── (plain ValueError)      an invalid header, event, id or argument
    ├── KeyError                    SessionStore.fork/flush/close of an id that is not live
    ├── RuntimeError
    │   └── SessionClosed           an append to a session its store has closed (sessionquery.live)
    ├── PersistenceError            a storage failure inside a SessionPersistence
    │   ├── PersistenceNotFound     the session is not stored (also a KeyError)
    │   ├── PersistenceCorrupt      a stored log is damaged or of an unsupported version
    │   ├── PersistenceOwned        a second writer for one session was refused
    │   ├── PersistenceClosed       a handle was used after close()
    │   ├── PersistenceExists       create() of an id that is already stored (also a ValueError)
    │   └── PersistenceWriteFailed  writing or syncing a log failed (also an OSError)
    └── SessionQueryError           the query service, the search index and the tools
                                    (``code``: an ErrorCode, or a ToolErrorCode for failures only
                                    the tool layer produces; ``context``: structured details;
                                    ``retryable``: the code is in RETRYABLE_CODES)

Foreign exceptions (``OSError``, ``sqlite3.Error``, ``json.JSONDecodeError``) are translated
where they enter our code; callers of the query service only ever see ``SessionQueryError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

__all__ = [
    "RETRYABLE_CODES",
    "ErrorCode",
    "PersistenceClosed",
    "PersistenceCorrupt",
    "PersistenceError",
    "PersistenceExists",
    "PersistenceNotFound",
    "PersistenceOwned",
    "PersistenceWriteFailed",
    "SessionQueryError",
    "ToolErrorCode",
]


class ErrorCode(StrEnum):
    """The closed set of query-service error codes (SPEC §6)."""

    ABORTED = "SESSION_QUERY_ABORTED"
    CORRUPT_SESSION = "SESSION_QUERY_CORRUPT_SESSION"
    EVENT_NOT_FOUND = "SESSION_QUERY_EVENT_NOT_FOUND"
    INDEX_FAILED = "SESSION_QUERY_INDEX_FAILED"
    INVALID_CONFIG = "SESSION_QUERY_INVALID_CONFIG"
    INVALID_CURSOR = "SESSION_QUERY_INVALID_CURSOR"
    INVALID_FILTER = "SESSION_QUERY_INVALID_FILTER"
    INVALID_LIMIT = "SESSION_QUERY_INVALID_LIMIT"
    INVALID_QUERY = "SESSION_QUERY_INVALID_QUERY"
    INVALID_LINEAGE = "SESSION_QUERY_INVALID_LINEAGE"
    INVALID_SURFACE = "SESSION_QUERY_INVALID_SURFACE"
    INVALID_WINDOW = "SESSION_QUERY_INVALID_WINDOW"
    PERSISTENCE_FAILED = "SESSION_QUERY_PERSISTENCE_FAILED"
    SEARCH_DISABLED = "SESSION_QUERY_SEARCH_DISABLED"
    SESSION_NOT_FOUND = "SESSION_QUERY_SESSION_NOT_FOUND"
    STALE_CURSOR = "SESSION_QUERY_STALE_CURSOR"
    SOURCE_CONFLICT = "SESSION_QUERY_SOURCE_CONFLICT"
    BUSY = "SESSION_QUERY_BUSY"
    """Retryable: the store kept changing while it was observed (or a shared lock could not be
    had) within the deadline. Trying again shortly is expected to work."""
    INDEX_BUILDING = "SESSION_QUERY_INDEX_BUILDING"
    """Retryable: the search index is still being built; ``context`` carries
    ``sessions_indexed`` and ``sessions_total``."""


RETRYABLE_CODES = frozenset({ErrorCode.BUSY, ErrorCode.INDEX_BUILDING})
"""Codes whose failure is temporary: the same call is expected to succeed a little later."""


class ToolErrorCode(StrEnum):
    """Codes that only the model-facing tool layer produces (SPEC §8)."""

    UNAUTHORIZED = "SESSION_QUERY_TOOL_UNAUTHORIZED"
    NO_CURRENT_STEP = "SESSION_QUERY_TOOL_NO_CURRENT_STEP"
    FAILED = "SESSION_QUERY_TOOL_FAILED"
    INVALID_ARGUMENTS = "SESSION_QUERY_TOOL_INVALID_ARGUMENTS"
    UNKNOWN_TOOL = "SESSION_QUERY_TOOL_UNKNOWN"


class SessionQueryError(Exception):
    """A failure of the query service, the search index or the tools.

    Attributes:
        code: the machine-readable code; tests and callers branch on it, never on text.
        message: a human sentence saying what is wrong.
        context: structured, non-sensitive details (for example ``sessions_indexed`` and
            ``sessions_total`` of ``INDEX_BUILDING``); empty by default, read-only.
    """

    def __init__(
        self,
        code: ErrorCode | ToolErrorCode,
        message: str,
        *,
        context: Mapping[str, object] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.context: Mapping[str, object] = MappingProxyType(dict(context or {}))

    @property
    def retryable(self) -> bool:
        """Whether the same call is expected to succeed if tried again shortly."""
        return self.code in RETRYABLE_CODES

    def __str__(self) -> str:
        return f"{self.code.value}: {self.message}"

    def __repr__(self) -> str:
        return f"SessionQueryError({self.code.value!r}, {self.message!r})"


class PersistenceError(Exception):
    """A failure inside a ``SessionPersistence`` (storage layer)."""


class PersistenceNotFound(PersistenceError, KeyError):
    """The requested session is not stored."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "session not found"


class PersistenceCorrupt(PersistenceError):
    """A stored log is damaged, invalid or of an unsupported format version.

    The message names the file and the 1-based physical line (the header is line 1).

    Attributes:
        path: the damaged file, when known.
        line: the 1-based physical line (header = 1), or ``None`` for the whole file.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line


class PersistenceOwned(PersistenceError):
    """A second writer for a session was refused (in this or another process)."""


class PersistenceClosed(PersistenceError):
    """A read or write handle was used after ``close()``."""


class PersistenceExists(PersistenceError, ValueError):
    """``create()`` was asked for an id that is already stored; nothing was changed."""


class PersistenceWriteFailed(PersistenceError, OSError):
    """Writing or syncing a stored log failed; ``errno`` and ``filename`` are those of the cause.

    The events being written stay buffered in the write handle, so nothing is lost and a later
    ``flush()`` retries them.
    """
