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
    PersistedSession,
    ReadHandle,
    SessionPersistence,
    WriteHandle,
)
from sessionquery.persistence.jsonl import JsonlPersistence, LogProblem

__all__ = [
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
    "ReadHandle",
    "SessionPersistence",
    "WriteHandle",
]
