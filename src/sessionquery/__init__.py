"""sessionquery: search, trace and read past agent sessions, scoped to the caller's workspace.

The public API is exactly ``__all__`` below (a test guards it). Layers, lowest first:
``model`` (pure event-log model) → ``live`` / ``persistence`` (stores) → ``query`` (the read
service) → ``search.sqlite`` (the FTS5 index) → ``tools`` (the five model-facing tools) →
``mcp`` / ``cli``. ``SqliteSearch`` lives in :mod:`sessionquery.search.sqlite` and the
importers in :mod:`sessionquery.sources`; both are re-exported here for convenience.

Names are imported on first use (PEP 562), so ``import sessionquery`` (and every entry point
below it, such as ``sessionquery --help``) costs only what it uses; static type checkers
see the imports below.
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from sessionquery.errors import (
        ErrorCode,
        SessionQueryError,
        ToolErrorCode,
    )
    from sessionquery.live import (
        Session,
        SessionClosed,
        SessionStore,
        StoreChange,
    )
    from sessionquery.model import (
        FORMAT_VERSION,
        Replace,
        SessionEvent,
        SessionHeader,
        SurfaceError,
        SurfaceFold,
        TitleSnapshot,
        extract_event_text,
        fold_surface,
        fold_title,
        interrupted_turn_closers,
    )
    from sessionquery.persistence import (
        JsonlPersistence,
        PersistedSession,
        PersistenceCorrupt,
        PersistenceError,
        PersistenceNotFound,
        PersistenceOwned,
        SessionPersistence,
    )
    from sessionquery.query import (
        AvailabilityIn,
        CancelToken,
        CreatedBetween,
        CwdIn,
        EventDocument,
        EventRecord,
        EventSearchHit,
        EventSearchPage,
        EventTrace,
        EventWindow,
        IdIn,
        LineageNode,
        LineageTrace,
        ParentIn,
        SearchBackend,
        SeqBetween,
        SessionListPage,
        SessionLog,
        SessionQuery,
        SessionRecord,
        SessionSearchHit,
        SessionSearchPage,
        SurfaceIn,
        SurfaceSnapshot,
        TextContains,
        TimeBetween,
        TitleResult,
        TypeIn,
    )
    from sessionquery.search.sqlite import (
        SqliteSearch,
    )
    from sessionquery.sources import (
        ClaudeCodeSource,
        CodexSource,
        MultiSource,
        Problem,
    )
    from sessionquery.tools import (
        SessionQueryTools,
        ToolCaller,
        ToolDefinition,
        ToolResult,
    )

__all__ = [
    "FORMAT_VERSION",
    "AvailabilityIn",
    "CancelToken",
    "ClaudeCodeSource",
    "CodexSource",
    "CreatedBetween",
    "CwdIn",
    "ErrorCode",
    "EventDocument",
    "EventRecord",
    "EventSearchHit",
    "EventSearchPage",
    "EventTrace",
    "EventWindow",
    "IdIn",
    "JsonlPersistence",
    "LineageNode",
    "LineageTrace",
    "MultiSource",
    "ParentIn",
    "PersistedSession",
    "PersistenceCorrupt",
    "PersistenceError",
    "PersistenceNotFound",
    "PersistenceOwned",
    "Problem",
    "Replace",
    "SearchBackend",
    "SeqBetween",
    "Session",
    "SessionClosed",
    "SessionEvent",
    "SessionHeader",
    "SessionListPage",
    "SessionLog",
    "SessionPersistence",
    "SessionQuery",
    "SessionQueryError",
    "SessionQueryTools",
    "SessionRecord",
    "SessionSearchHit",
    "SessionSearchPage",
    "SessionStore",
    "SqliteSearch",
    "StoreChange",
    "SurfaceError",
    "SurfaceFold",
    "SurfaceIn",
    "SurfaceSnapshot",
    "TextContains",
    "TimeBetween",
    "TitleResult",
    "TitleSnapshot",
    "ToolCaller",
    "ToolDefinition",
    "ToolErrorCode",
    "ToolResult",
    "TypeIn",
    "extract_event_text",
    "fold_surface",
    "fold_title",
    "interrupted_turn_closers",
]

_HOME = {
    "FORMAT_VERSION": "sessionquery.model",
    "AvailabilityIn": "sessionquery.query",
    "CancelToken": "sessionquery.query",
    "ClaudeCodeSource": "sessionquery.sources",
    "CodexSource": "sessionquery.sources",
    "CreatedBetween": "sessionquery.query",
    "CwdIn": "sessionquery.query",
    "ErrorCode": "sessionquery.errors",
    "EventDocument": "sessionquery.query",
    "EventRecord": "sessionquery.query",
    "EventSearchHit": "sessionquery.query",
    "EventSearchPage": "sessionquery.query",
    "EventTrace": "sessionquery.query",
    "EventWindow": "sessionquery.query",
    "IdIn": "sessionquery.query",
    "JsonlPersistence": "sessionquery.persistence",
    "LineageNode": "sessionquery.query",
    "LineageTrace": "sessionquery.query",
    "MultiSource": "sessionquery.sources",
    "ParentIn": "sessionquery.query",
    "PersistedSession": "sessionquery.persistence",
    "PersistenceCorrupt": "sessionquery.persistence",
    "PersistenceError": "sessionquery.persistence",
    "PersistenceNotFound": "sessionquery.persistence",
    "PersistenceOwned": "sessionquery.persistence",
    "Problem": "sessionquery.sources",
    "Replace": "sessionquery.model",
    "SearchBackend": "sessionquery.query",
    "SeqBetween": "sessionquery.query",
    "Session": "sessionquery.live",
    "SessionClosed": "sessionquery.live",
    "SessionEvent": "sessionquery.model",
    "SessionHeader": "sessionquery.model",
    "SessionListPage": "sessionquery.query",
    "SessionLog": "sessionquery.query",
    "SessionPersistence": "sessionquery.persistence",
    "SessionQuery": "sessionquery.query",
    "SessionQueryError": "sessionquery.errors",
    "SessionQueryTools": "sessionquery.tools",
    "SessionRecord": "sessionquery.query",
    "SessionSearchHit": "sessionquery.query",
    "SessionSearchPage": "sessionquery.query",
    "SessionStore": "sessionquery.live",
    "SqliteSearch": "sessionquery.search.sqlite",
    "StoreChange": "sessionquery.live",
    "SurfaceError": "sessionquery.model",
    "SurfaceFold": "sessionquery.model",
    "SurfaceIn": "sessionquery.query",
    "SurfaceSnapshot": "sessionquery.query",
    "TextContains": "sessionquery.query",
    "TimeBetween": "sessionquery.query",
    "TitleResult": "sessionquery.query",
    "TitleSnapshot": "sessionquery.model",
    "ToolCaller": "sessionquery.tools",
    "ToolDefinition": "sessionquery.tools",
    "ToolErrorCode": "sessionquery.errors",
    "ToolResult": "sessionquery.tools",
    "TypeIn": "sessionquery.query",
    "extract_event_text": "sessionquery.model",
    "fold_surface": "sessionquery.model",
    "fold_title": "sessionquery.model",
    "interrupted_turn_closers": "sessionquery.model",
}
"""The module each public name is defined in (imported when the name is first used)."""


def __getattr__(name: str) -> _typing.Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'sessionquery' has no attribute {name!r}")
    value = getattr(_importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
