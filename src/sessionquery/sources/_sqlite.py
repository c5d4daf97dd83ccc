"""Reading an agent's own SQLite database without ever writing to it.

Invariants:

* nothing is written: the connection is read-only (``mode=ro``) and ``query_only``; no schema
  is read beyond what a query needs, nothing is migrated or checkpointed;
* no file is created beside the database: a WAL database whose ``-wal`` file is absent (no
  writer attached) is opened ``immutable`` (SQLite would otherwise create ``-wal`` and ``-shm``
  files even for a read-only connection); the database's stat is compared before and after,
  and a change in between (a writer attached meanwhile) retries the read;
* every read is one transaction, so a database being written gives one consistent snapshot
  (WAL readers see the last commit; rollback-journal readers hold a shared lock);
* a locked or busy database is retried a few times with short pauses; what still fails is a
  :class:`DatabaseUnavailable` whose message says why: the caller reports it as a problem of
  that source, never as an error of the whole history.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from sessionquery.sources._files import SkippedFile

__all__ = ["DatabaseUnavailable", "database_stamp", "read_database", "read_unit"]

T = TypeVar("T")

_ATTEMPTS = 4
_PAUSES = (0.05, 0.15, 0.4)
_BUSY_MS = 250
_SQLITE_MAGIC = b"SQLite format 3\x00"


class DatabaseUnavailable(Exception):
    """The database cannot be read now (locked, damaged, not a database, gone)."""


def _stat(path: Path) -> tuple[int, int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def database_stamp(path: Path) -> str:
    """A token that changes whenever the database or its ``-wal`` file changes."""
    parts = [_stat(path), _stat(Path(f"{path}-wal"))]
    return ";".join("-" if p is None else ":".join(map(str, p)) for p in parts)


def _is_wal(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(20)
    except OSError as exc:
        raise DatabaseUnavailable(f"cannot read database: {exc.strerror or exc}") from None
    if not head.startswith(_SQLITE_MAGIC):
        raise DatabaseUnavailable("not a SQLite database (or an empty or damaged one)")
    return len(head) >= 20 and head[18] == 2  # file format write version 2: WAL


def _connect(path: Path, *, immutable: bool) -> sqlite3.Connection:
    uri = path.absolute().as_uri() + ("?mode=ro&immutable=1" if immutable else "?mode=ro")
    conn = sqlite3.connect(
        uri, uri=True, timeout=_BUSY_MS / 1000, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute("PRAGMA query_only = ON")
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def _attempt(path: Path, read: Callable[[sqlite3.Connection], T]) -> T:
    immutable = _is_wal(path) and not Path(f"{path}-wal").exists()
    before = _stat(path)
    conn = _connect(path, immutable=immutable)
    try:
        conn.execute("BEGIN")
        try:
            result = read(conn)
        finally:
            conn.execute("COMMIT")
    finally:
        conn.close()
    if immutable and (_stat(path) != before or Path(f"{path}-wal").exists()):
        raise sqlite3.OperationalError("database is locked")  # a writer came: read again
    return result


def read_database(path: Path, read: Callable[[sqlite3.Connection], T]) -> T:
    """``read(connection)`` in one read-only transaction over the database at ``path``.

    Raises:
        DatabaseUnavailable: locked or busy after a few attempts, damaged, or not readable.
    """
    last = ""
    for attempt in range(_ATTEMPTS):
        try:
            return _attempt(path, read)
        except sqlite3.OperationalError as exc:
            last = str(exc)
            transient = "locked" in last or "busy" in last
            if not transient or attempt == _ATTEMPTS - 1:
                break
            time.sleep(_PAUSES[min(attempt, len(_PAUSES) - 1)])
        except sqlite3.DatabaseError as exc:  # damaged, or not a database after all
            last = str(exc)
            break
    raise DatabaseUnavailable(f"cannot read database ({last}); its sessions are not listed")


def read_unit(path: Path, read: Callable[[sqlite3.Connection], T]) -> T:
    """:func:`read_database` for one raw unit: a database that cannot be read now, or whose
    schema is not the expected one, skips the unit (its message says why).

    Raises:
        SkippedFile: the database is unavailable or a query failed.
    """
    try:
        return read_database(path, read)
    except DatabaseUnavailable as exc:
        raise SkippedFile(str(exc)) from None
    except sqlite3.Error as exc:
        raise SkippedFile(f"unexpected schema ({exc}); skipped") from None
