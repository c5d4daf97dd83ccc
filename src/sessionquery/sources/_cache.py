"""The importers' persistent metadata cache: what each transcript file yields, by stat.

One SQLite file (derived and disposable) holds, per source location and raw unit (a file, or a
session's rows of a database; see :mod:`._units`), the unit's stamp (for a file: device, inode,
size, mtime_ns, ctime_ns), the sessions it yields (header, event count, how its id is resolved)
and its problems. A listing stats every unit and reads only those whose stamp differs from the
cached one, so an unchanged history lists without opening a transcript.

* The file carries its own ``application_id`` (ASCII ``SQIC``) and a schema version. A file that
  is not ours (another ``application_id``, a non-SQLite file, an unmarked database with tables)
  is refused with ``INVALID_CONFIG`` and never written; ours but damaged, or of another schema
  version, is discarded and rebuilt.
* Many processes may share it: WAL journal, a busy timeout, and every write is a short
  transaction of upserts. A write that cannot get the lock in time is skipped (the cache only
  saves work), never an error; a read that fails is a miss.
* A process forked from one holding a cache (a push's reader processes) never uses the
  parent's SQLite connection (SQLite forbids it): the child leaves it open and unused and
  opens the file again on its first use (:mod:`sessionquery._forks`).
* ``path=None`` keeps the cache in memory for the lifetime of the source object, and so does a
  path that cannot be created or opened (a read-only folder, say): the cache only saves work.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from sessionquery import _forks
from sessionquery.errors import ErrorCode, SessionQueryError

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "MetadataCache"]

APPLICATION_ID = 0x53514943
"""``PRAGMA application_id`` of an importer metadata cache (ASCII ``SQIC``)."""

SCHEMA_VERSION = 2
"""Bumped whenever the rows or the importers' conversion change; an old cache is rebuilt."""

_BUSY_MS = 2000
_SQLITE_MAGIC = b"SQLite format 3\x00"

Row = tuple[str, Any]
"""A cached row: the unit's stamp and its JSON payload."""


def _key(text: str) -> str:
    # Paths may hold undecodable bytes (surrogate escapes); JSON text keeps them as ASCII.
    return json.dumps(text)


def _refuse(path: Path, detail: str) -> SessionQueryError:
    return SessionQueryError(
        ErrorCode.INVALID_CONFIG,
        f"importer metadata cache {str(path)!r} {detail}; refusing to use or change it "
        "(point metadata_cache at a file of its own)",
    )


class MetadataCache:
    """Rows of ``(root, relative path) -> (stamp, payload)`` in memory or in a SQLite file.

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` when ``path`` holds a file that is not ours.
    """

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self._lock = threading.Lock()
        self._path = None if path is None else Path(path)
        self._conn: sqlite3.Connection | None = None
        self._reopen = False
        if self._path is not None:
            self._check_foreign(self._path)
            try:
                self._conn = self._open(self._path)
                _forks.register(self)
            except (OSError, sqlite3.Error):
                # Cannot create or open it (read-only folder, full disk...): the cache only
                # saves work, so this source keeps its cache in memory instead.
                self._conn = None

    @property
    def path(self) -> Path | None:
        """The cache file, or ``None`` for an in-memory cache."""
        return self._path

    def _open(self, path: Path) -> sqlite3.Connection:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return self._connect(path)
        except sqlite3.DatabaseError:
            # Ours (checked above) but damaged: the cache is derived, so start it afresh.
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            return self._connect(path)

    @staticmethod
    def _check_foreign(path: Path) -> None:
        """Refuse a file that is not ours; return for a missing, empty or our (even damaged)
        file. Nothing here writes to the database file."""
        try:
            with path.open("rb") as handle:
                head = handle.read(100)
        except OSError:
            return  # missing or unreadable: nothing of anyone's is touched (memory fallback)
        if not head:
            return
        if not head.startswith(_SQLITE_MAGIC) or len(head) < 72:
            raise _refuse(path, "is not a SQLite database")
        header_id = int.from_bytes(head[68:72], "big")
        try:
            probe = sqlite3.connect(path, timeout=_BUSY_MS / 1000)
            try:
                (app_id,) = probe.execute("PRAGMA application_id").fetchone()
                (tables,) = probe.execute(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
                ).fetchone()
            finally:
                probe.close()
        except sqlite3.DatabaseError:
            if header_id == APPLICATION_ID:
                return  # ours but damaged: rebuilt by the caller
            raise _refuse(path, "is a damaged database that is not marked as ours") from None
        if app_id not in (0, APPLICATION_ID):
            raise _refuse(path, f"belongs to another application (application_id {app_id:#x})")
        if app_id == 0 and tables:
            raise _refuse(path, "is a database of another application")

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(path, timeout=_BUSY_MS / 1000, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_MS}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            (app_id,) = conn.execute("PRAGMA application_id").fetchone()
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            if app_id == APPLICATION_ID and version != SCHEMA_VERSION:
                conn.execute("DROP TABLE IF EXISTS files")
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS files ("
                " root TEXT NOT NULL, rel TEXT NOT NULL, stamp TEXT NOT NULL,"
                " payload TEXT NOT NULL, PRIMARY KEY (root, rel)) WITHOUT ROWID"
            )
            conn.execute("SELECT count(*) FROM files").fetchone()
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")  # our mark reaches the main file
        except BaseException:
            conn.close()
            raise
        return conn

    def _forked(self) -> None:
        """In a forked child: set the parent's connection aside; the next use reopens."""
        self._lock = threading.Lock()
        if self._conn is not None:
            _forks.set_aside(self._conn)
            self._conn = None
            self._reopen = True

    def _connection(self) -> sqlite3.Connection | None:
        """The connection (called holding the lock); reopened in a forked child."""
        if self._reopen and self._path is not None:
            self._reopen = False
            try:
                self._conn = self._connect(self._path)
            except (OSError, sqlite3.Error):
                self._conn = None
        return self._conn

    def load(self, root: str) -> dict[str, Row]:
        """Every cached row of ``root`` (empty when the cache cannot be read)."""
        with self._lock:
            conn = self._connection()
            if conn is None:
                return {}
            try:
                rows = conn.execute(
                    "SELECT rel, stamp, payload FROM files WHERE root = ?",
                    (_key(root),),
                ).fetchall()
            except sqlite3.Error:
                return {}
        out: dict[str, Row] = {}
        for key, stamp, payload in rows:
            try:
                out[json.loads(key)] = (str(stamp), json.loads(payload))
            except ValueError:
                continue
        return out

    def get(self, root: str, rel: str) -> Row | None:
        """One cached row, or ``None``."""
        with self._lock:
            conn = self._connection()
            if conn is None:
                return None
            try:
                found = conn.execute(
                    "SELECT stamp, payload FROM files WHERE root = ? AND rel = ?",
                    (_key(root), _key(rel)),
                ).fetchone()
            except sqlite3.Error:
                return None
        if found is None:
            return None
        try:
            return (str(found[0]), json.loads(found[1]))
        except ValueError:
            return None

    def store(self, root: str, rows: Mapping[str, Row], removed: Iterable[str]) -> None:
        """Upsert ``rows`` and delete ``removed`` paths of ``root`` in one short transaction;
        skipped silently when the file is busy or cannot be written."""
        gone = list(removed)
        if (self._conn is None and not self._reopen) or (not rows and not gone):
            return
        records = [
            (_key(root), _key(rel), stamp, json.dumps(payload, separators=(",", ":")))
            for rel, (stamp, payload) in rows.items()
        ]
        with self._lock:
            conn = self._connection()
            if conn is None:
                return
            try:
                with conn:
                    conn.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?)", records)
                    conn.executemany(
                        "DELETE FROM files WHERE root = ? AND rel = ?",
                        [(_key(root), _key(r)) for r in gone],
                    )
            except sqlite3.Error:
                return

    def close(self) -> None:
        """Close the file; idempotent."""
        with self._lock:
            self._reopen = False
            if self._conn is not None:
                self._conn.close()
                self._conn = None
