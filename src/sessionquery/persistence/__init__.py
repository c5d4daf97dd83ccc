"""Durable storage of session logs: the protocol and the embedded JSONL store."""

from sessionquery.errors import (
    PersistenceClosed,
    PersistenceCorrupt,
    PersistenceError,
    PersistenceNotFound,
    PersistenceOwned,
)
from sessionquery.persistence.base import (
    PersistedSession,
    ReadHandle,
    SessionPersistence,
    WriteHandle,
)
from sessionquery.persistence.jsonl import JsonlPersistence

__all__ = [
    "JsonlPersistence",
    "PersistedSession",
    "PersistenceClosed",
    "PersistenceCorrupt",
    "PersistenceError",
    "PersistenceNotFound",
    "PersistenceOwned",
    "ReadHandle",
    "SessionPersistence",
    "WriteHandle",
]
