"""Session titles for listings, remembered between commands and read within a time budget.

Reading a title means reading a session's whole log, which for a large imported transcript
takes long; ``list`` and ``search`` show many titles. So the command line keeps a small SQLite
file of titles keyed by session id and revision (the store's token that changes whenever the
log does). Invariants:

* the file is derived and disposable: a title is only ever used for the exact revision it was
  read from; a file that is damaged, foreign or unwritable is ignored (titles are then read
  every time), never repaired or deleted;
* titles not in the file are read in small batches: the first :data:`ALWAYS_READ` always,
  then until the budget is spent; the rest are reported as not read (the next command reads
  more), so a large history is listed in seconds, not minutes;
* nothing here changes a session or its store;
* reading a session for the search index remembers its title too (:class:`TitleRecorder`:
  the readers fold the title in the same pass), so ``list`` right after ``index`` reads no
  transcript again.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sessionquery.persistence import PersistedSession, SessionPersistence
from sessionquery.persistence.base import DocumentLog, DocumentSource
from sessionquery.query.service import SessionQuery

__all__ = ["ALWAYS_READ", "BUDGET_S", "NOT_READ", "TitleRecorder", "read_titles"]

BUDGET_S = 1.0
"""Seconds a command spends reading titles that are not remembered yet, beyond the first
:data:`ALWAYS_READ`."""

ALWAYS_READ = 10
"""Titles read whatever the time: a small listing always shows every title."""

NOT_READ = object()
"""The value of a title that was not read within the budget."""

_BATCH = 4
"""Titles read per step: the service reads a batch with its worker threads (4 by default)."""
_SCHEMA_VERSION = 1
_CREATE = (
    "CREATE TABLE IF NOT EXISTS titles (id TEXT PRIMARY KEY, revision TEXT NOT NULL, title TEXT)"
)
_APP_ID = 0x53515431  # "SQT1": marks the file as this cache


def _open(path: Path) -> sqlite3.Connection | None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=1.0)
    except (OSError, sqlite3.Error):
        return None
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if app_id == 0 and version == 0:
            tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if tables:
                conn.close()
                return None  # someone else's database: leave it alone
            conn.execute(f"PRAGMA application_id = {_APP_ID}")
            conn.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
            conn.execute(_CREATE)
            conn.commit()
        elif (app_id, version) != (_APP_ID, _SCHEMA_VERSION):
            conn.close()
            return None
        return conn
    except sqlite3.Error:
        conn.close()
        return None


def _remembered(
    conn: sqlite3.Connection | None, revisions: dict[str, str], ids: Sequence[str]
) -> dict[str, str | None]:
    if conn is None or not ids:
        return {}
    out: dict[str, str | None] = {}
    try:
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(
                f"SELECT id, revision, title FROM titles WHERE id IN ({marks})",
                chunk,
            ).fetchall()
            for session_id, revision, title in rows:
                if revisions.get(session_id) == revision:
                    out[session_id] = title
    except sqlite3.Error:
        return {}
    return out


def _remember(conn: sqlite3.Connection | None, rows: list[tuple[str, str, str | None]]) -> None:
    if conn is None or not rows:
        return
    try:
        with conn:
            conn.executemany(
                "INSERT OR REPLACE INTO titles (id, revision, title) VALUES (?, ?, ?)", rows
            )
    except sqlite3.Error:
        return


def read_titles(
    query: SessionQuery,
    listing: Sequence[PersistedSession],
    ids: Sequence[str],
    cache: Path | None,
    *,
    budget_s: float = BUDGET_S,
    always: int = ALWAYS_READ,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, str | object | None]:
    """The title of each of ``ids`` (``None``: untitled; :data:`NOT_READ`: not read in time).

    Args:
        query: the service that reads titles.
        listing: the stored sessions (their revisions key the cache).
        ids: the sessions whose titles are wanted, in display order.
        cache: the cache file, or ``None`` to remember nothing.
        budget_s: seconds to spend reading titles that are not remembered.
        always: how many titles are read whatever the time.
        clock: a ``() -> float`` monotonic clock.
    """
    now = clock
    revisions = {entry.header.id: entry.revision for entry in listing}
    conn = _open(cache) if cache is not None else None
    try:
        titles: dict[str, str | object | None] = dict(_remembered(conn, revisions, ids))
        missing = [session_id for session_id in ids if session_id not in titles]
        deadline = now() + budget_s
        for start in range(0, len(missing), _BATCH):
            if start >= always and now() > deadline:
                break
            batch = missing[start : start + _BATCH]
            rows: list[tuple[str, str, str | None]] = []
            for result in query.read_title_snapshots(batch):
                if result.error is not None:
                    titles[result.session_id] = None  # unreadable now: shown untitled
                    continue
                title = result.title.title if result.title else None
                titles[result.session_id] = title
                if result.session_id in revisions:
                    rows.append((result.session_id, revisions[result.session_id], title))
            _remember(conn, rows)
        for session_id in ids:
            titles.setdefault(session_id, NOT_READ)
        return titles
    finally:
        if conn is not None:
            conn.close()


class TitleRecorder:
    """A persistence that remembers the title of every log the search index reads.

    The index reads each new or changed log through :meth:`read_documents`; the readers fold
    the title in that same pass (:attr:`DocumentLog.title`), and this keeps it, with the
    revision it was read at, until :meth:`save` writes them all to the cache file (one
    transaction, from the thread that calls it). Everything else is delegated, so the index
    sees the wrapped persistence's capabilities unchanged.

    Args:
        inner: the persistence the index reads.
        cache: the title cache file, or ``None`` to remember nothing.
    """

    def __init__(self, inner: SessionPersistence, cache: Path | None) -> None:
        self._inner = inner
        self._cache = cache
        self._lock = threading.Lock()
        self._saving = threading.Lock()
        self._rows: dict[str, tuple[str, str, str | None]] = {}

    def read_documents(self, session_id: str) -> DocumentLog:
        """The wrapped persistence's documents (its fast path, else the exact slow one)."""
        from sessionquery.persistence.documents import stored_documents

        inner = self._inner
        log = (
            inner.read_documents(session_id)
            if isinstance(inner, DocumentSource)
            else stored_documents(inner, session_id)
        )
        if log.title_read:
            title = None if log.title is None else log.title.title
            with self._lock:
                self._rows[log.header.id] = (log.header.id, log.revision, title)
        return log

    def save(self) -> int:
        """Write the titles read so far to the cache (never raises); how many were written.

        Saves from several threads are written one after the other, so when a save returns,
        every title read before it is in the file (a save that found nothing new waits for
        the one writing).
        """
        with self._saving:
            with self._lock:
                rows, self._rows = list(self._rows.values()), {}
            if not rows or self._cache is None:
                return 0
            conn = _open(self._cache)
            try:
                _remember(conn, rows)
            finally:
                if conn is not None:
                    conn.close()
            return len(rows) if conn is not None else 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
