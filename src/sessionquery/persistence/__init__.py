"""Durable storage of session logs: the protocol and the embedded JSONL store."""

from sessionquery.errors import (
    PersistenceClosed,
    PersistenceCorrupt,
    PersistenceError,
    PersistenceExists,
    PersistenceNotFound,
    PersistenceOwned,
    PersistenceWriteFailed,
)
from sessionquery.persistence.base import (
    ChangeJournal,
    ChangeTokenSource,
    DocumentLog,
    DocumentSource,
    PersistedSession,
    ProblemSource,
    ReadHandle,
    SessionPersistence,
    TextDocument,
    WriteHandle,
)
from sessionquery.persistence.jsonl import JsonlPersistence, LogProblem

__all__ = [
    "ChangeJournal",
    "ChangeTokenSource",
    "DocumentLog",
    "DocumentSource",
    "JsonlPersistence",
    "LogProblem",
    "PersistedSession",
    "PersistenceClosed",
    "PersistenceCorrupt",
    "PersistenceError",
    "PersistenceExists",
    "PersistenceNotFound",
    "PersistenceOwned",
    "PersistenceWriteFailed",
    "ProblemSource",
    "ReadHandle",
    "SessionPersistence",
    "TextDocument",
    "WriteHandle",
]
