"""The index database: its guarded open procedure, its schema and its write lock.

The index is **derived and disposable**: everything in it can be rebuilt from the corpus.
It is marked with our own ``application_id`` (:data:`APPLICATION_ID`) and a schema
``user_version`` (:data:`SCHEMA_VERSION`).

Invariants of :func:`open_index`:

* A database that is not ours is never written: a foreign ``application_id``, an
  ``application_id`` of 0 with any user table, or ours with a table outside the derived set is
  refused with ``INDEX_FAILED`` before any pragma that writes, so the file stays byte-for-byte
  unchanged.
* Ours with another schema version (older or newer) is dropped and rebuilt in place; ours
  but damaged (e.g. truncated: a probe of its structures fails) is replaced by a new file.
* The journal mode is applied only after validation. New files are ``0600``, new parent
  directories ``0700``.
* Any number of connections, in any number of processes, open one index (WAL). Writers are
  serialised by :class:`WriteLock` (``flock`` on ``<realpath>.lock``), held only while a
  reconciliation writes; a damaged file is replaced only by the holder of that lock.

Layout: ``doc_rows`` (explicit ``INTEGER PRIMARY KEY`` rowid = ``session_key << 32 | seq``)
holds each document's text and metadata, ``doc_fts`` is an external-content FTS5 index over
its text (``title_rows``/``title_fts`` the same for the sessions' title events), written and
deleted explicitly beside each row (no triggers: FTS5 flushes its
pending terms at every trigger sub-statement, which makes trigger-fed bulk inserts several
times slower); ``persisted_sessions`` maps session ids to keys, headers
and revisions. Live sessions live in connection-local TEMP twins (``live_sessions``,
``live_rows``, ``live_fts``, ``live_title_rows``, ``live_title_fts``) that vanish with the
connection, beside read-only ``fts5vocab`` views of the four FTS5 indexes.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.search.sqlite import db

try:
    import fcntl
except ImportError:  # pragma: no cover - non-POSIX platforms
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "APPLICATION_ID",
    "DERIVED_TABLES",
    "SCHEMA_VERSION",
    "WriteLock",
    "close_quietly",
    "create_temp_schema",
    "ensure_parent",
    "open_index",
]

APPLICATION_ID = 0x53514958
"""``PRAGMA application_id`` of a sessionquery index (ASCII ``SQIX``)."""

SCHEMA_VERSION = 4
"""``PRAGMA user_version``; any other value on a database of ours means "rebuild".

Version 2 keeps in ``search_state`` what every process sharing the index must see: the store's
change token at the last complete reconciliation and the progress of the current build.
Version 3 adds the sessions' titles (``title_rows``/``title_fts``), which relevance search
ranks by; version 4 turns on FTS5's ``secure-delete`` for both indexes."""

DERIVED_TABLES = frozenset(
    {
        "search_state",
        "persisted_sessions",
        "doc_rows",
        "doc_fts",
        "doc_fts_data",
        "doc_fts_idx",
        "doc_fts_docsize",
        "doc_fts_config",
        "title_rows",
        "title_fts",
        "title_fts_data",
        "title_fts_idx",
        "title_fts_docsize",
        "title_fts_config",
    }
)
"""Every table an index of ours may contain (FTS5 shadow tables included)."""

_MAIN_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS main.search_state ("
    " singleton INTEGER PRIMARY KEY CHECK (singleton = 1),"
    " global_generation INTEGER NOT NULL, token TEXT,"
    " build_done INTEGER NOT NULL DEFAULT 0, build_total INTEGER NOT NULL DEFAULT 0,"
    " completed INTEGER NOT NULL DEFAULT 0)",
    "INSERT OR IGNORE INTO main.search_state (singleton, global_generation) VALUES (1, 0)",
    "CREATE TABLE IF NOT EXISTS main.persisted_sessions ("
    " key INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL,"
    " cwd TEXT, parent_session TEXT, header_json TEXT NOT NULL, revision TEXT NOT NULL,"
    " generation INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS main.doc_rows ("
    " id INTEGER PRIMARY KEY, text TEXT NOT NULL, type TEXT NOT NULL, time INTEGER NOT NULL,"
    " surface TEXT NOT NULL, length INTEGER NOT NULL)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS main.doc_fts USING fts5("
    " text, content='doc_rows', content_rowid='id', tokenize='unicode61')",
    "CREATE TABLE IF NOT EXISTS main.title_rows ("
    " id INTEGER PRIMARY KEY, text TEXT NOT NULL, type TEXT NOT NULL, time INTEGER NOT NULL,"
    " surface TEXT NOT NULL, length INTEGER NOT NULL)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS main.title_fts USING fts5("
    " text, content='title_rows', content_rowid='id', tokenize='unicode61')",
)

_SECURE_DELETE = tuple(
    (
        f"SELECT 1 FROM main.{fts}_config WHERE k = 'secure-delete' AND v = 1",
        f"INSERT INTO main.{fts} ({fts}, rank) VALUES ('secure-delete', 1)",
    )
    for fts in ("doc_fts", "title_fts")
)
"""Deleted documents leave the FTS5 indexes at once instead of at a later segment merge
(with the pragma ``secure_delete`` of :func:`open_index`, no deleted text stays in the
file); set once, when the table is new."""

_TEMP_SCHEMA = (
    "CREATE TEMP TABLE live_sessions ("
    " key INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL,"
    " cwd TEXT, parent_session TEXT, persisted INTEGER NOT NULL)",
    "CREATE TEMP TABLE live_rows ("
    " id INTEGER PRIMARY KEY, text TEXT NOT NULL, type TEXT NOT NULL, time INTEGER NOT NULL,"
    " surface TEXT NOT NULL, length INTEGER NOT NULL)",
    "CREATE VIRTUAL TABLE temp.live_fts USING fts5("
    " text, content='live_rows', content_rowid='id', tokenize='unicode61')",
    "CREATE TEMP TABLE live_title_rows ("
    " id INTEGER PRIMARY KEY, text TEXT NOT NULL, type TEXT NOT NULL, time INTEGER NOT NULL,"
    " surface TEXT NOT NULL, length INTEGER NOT NULL)",
    "CREATE VIRTUAL TABLE temp.live_title_fts USING fts5("
    " text, content='live_title_rows', content_rowid='id', tokenize='unicode61')",
    # Each index's vocabulary with the number of documents holding each term (relevance).
    "CREATE VIRTUAL TABLE temp.doc_vocab USING fts5vocab(main, doc_fts, row)",
    "CREATE VIRTUAL TABLE temp.title_vocab USING fts5vocab(main, title_fts, row)",
    "CREATE VIRTUAL TABLE temp.live_vocab USING fts5vocab(temp, live_fts, row)",
    "CREATE VIRTUAL TABLE temp.live_title_vocab USING fts5vocab(temp, live_title_fts, row)",
    # A relevance search's candidates (src: 1 live, title: 1 a title; see relevance.py).
    "CREATE TEMP TABLE rel_cand (src INTEGER NOT NULL, title INTEGER NOT NULL,"
    " rid INTEGER NOT NULL, key INTEGER NOT NULL, sc REAL NOT NULL)",
)


def _failed(path: str, detail: str) -> SessionQueryError:
    return SessionQueryError(
        ErrorCode.INDEX_FAILED, f"session-search index {path!r} failed to open: {detail}"
    )


class WriteLock:
    """The cross-process lock of one index, held only while a reconciliation writes.

    An exclusive ``flock`` on ``<realpath>.lock``; ``flock`` locks belong to open file
    descriptions, so two :class:`WriteLock` objects of one path exclude each other even inside
    one process. Readers never take it: searches run concurrently under SQLite WAL.
    """

    __slots__ = ("_fd", "path")

    def __init__(self, index_path: Path) -> None:
        self.path = index_path.with_name(index_path.name + ".lock")
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

    def try_acquire(self) -> bool:
        """Take the lock if it is free; return whether it is now held.

        Raises:
            OSError: the lock file cannot be opened.
        """
        if self._fd is not None:
            return True
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                return False
        self._fd = fd
        return True

    def release(self) -> None:
        """Release the lock (idempotent). The lock file itself is left in place."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the descriptor drops the flock


def ensure_parent(path: Path) -> None:
    """Create the missing parent directories of ``path`` with mode ``0700``."""
    missing: list[Path] = []
    parent = path.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    for directory in reversed(missing):
        directory.mkdir(mode=0o700)
        os.chmod(directory, 0o700)


def _ensure_file(path: Path) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)
    os.chmod(path, 0o600)


def _user_tables(conn: db.Connection) -> set[str]:
    rows = conn.execute(
        "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' "
        "ESCAPE '\\'"
    ).fetchall()
    return {str(name) for (name,) in rows}


def _validate(conn: db.Connection, path: str) -> bool:
    """Refuse what is not ours; return whether the schema must be rebuilt."""
    (app_id,) = db.one(conn, "PRAGMA main.application_id")
    (version,) = db.one(conn, "PRAGMA main.user_version")
    tables = _user_tables(conn)
    if app_id not in (0, APPLICATION_ID):
        raise _failed(path, f"application_id {app_id:#x} belongs to another application")
    if app_id == 0 and tables:
        raise _failed(path, "not an empty database or a recognised sessionquery index")
    unknown = tables - DERIVED_TABLES
    if unknown:
        names = ", ".join(sorted(unknown))
        raise _failed(path, f"the index contains tables it does not own: {names}")
    return bool(app_id == APPLICATION_ID and version != SCHEMA_VERSION)


def _drop_derived(conn: db.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        virtual = conn.execute(
            "SELECT name FROM main.sqlite_master "
            "WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL%'"
        ).fetchall()
        for (name,) in virtual:
            conn.execute(f"DROP TABLE IF EXISTS main.{_quote_identifier(str(name))}")
        for name in sorted(_user_tables(conn)):
            conn.execute(f"DROP TABLE IF EXISTS main.{_quote_identifier(name)}")
        conn.execute("PRAGMA main.user_version = 0")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _create_main_schema(conn: db.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in _MAIN_SCHEMA:
            conn.execute(statement)
        for configured, configure in _SECURE_DELETE:
            if conn.execute(configured).fetchone() is None:
                conn.execute(configure)
        conn.execute(f"PRAGMA main.application_id = {APPLICATION_ID:d}")
        conn.execute(f"PRAGMA main.user_version = {SCHEMA_VERSION:d}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def create_temp_schema(conn: db.Connection) -> None:
    """(Re)create the connection-local live tables, empty."""
    for name in (
        "rel_cand",
        "doc_vocab",
        "title_vocab",
        "live_vocab",
        "live_title_vocab",
        "live_title_fts",
        "live_title_rows",
        "live_fts",
        "live_rows",
        "live_sessions",
    ):
        conn.execute(f"DROP TABLE IF EXISTS temp.{name}")
    for statement in _TEMP_SCHEMA:
        conn.execute(statement)


def _readable(conn: db.Connection) -> bool:
    """Whether the FTS structures and the rows' b-tree answer a probe (cheap: one lookup
    each), so that a damaged index of ours is rebuilt at open instead of failing every search
    later."""
    try:
        conn.execute(
            "SELECT rowid FROM main.doc_fts WHERE doc_fts MATCH '\"sessionquery\"' LIMIT 1"
        ).fetchall()
        conn.execute("SELECT max(id), min(id) FROM main.doc_rows").fetchall()
        conn.execute("SELECT max(key) FROM main.persisted_sessions").fetchall()
    except db.Error:
        return False
    return True


def open_index(path: str, journal_mode: str) -> db.Connection:
    """Open, validate and (if needed) build the index at ``path`` (``":memory:"`` allowed).

    Opening takes no lock; replacing a damaged file of ours takes the :class:`WriteLock`
    without waiting (when another process holds it, the open fails and the next one retries).

    Raises:
        SessionQueryError: ``INDEX_FAILED`` for a database that is not ours or cannot be
            opened; nothing is written to such a file.
    """
    return _open_index(path, journal_mode, discard_damaged=True)


def _discard(path: str) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + suffix)


def _open_index(path: str, journal_mode: str, *, discard_damaged: bool) -> db.Connection:
    memory = path == ":memory:"
    try:
        if not memory:
            ensure_parent(Path(path))
            _ensure_file(Path(path))
        conn = db.connect(path)
    except (OSError, db.Error) as exc:
        raise _failed(path, str(exc)) from exc
    ours = False
    try:
        rebuild = _validate(conn, path)
        ours = not memory and db.one(conn, "PRAGMA main.application_id")[0] != 0
        if rebuild:
            _drop_derived(conn)
        if not memory:
            conn.execute(f"PRAGMA main.journal_mode = {journal_mode}")
            conn.execute("PRAGMA main.synchronous = NORMAL")  # derived data: no fsync per commit
        conn.execute("PRAGMA temp_store = MEMORY")
        # Text the index deletes (a session re-read after a redaction ruleset changed, say) is
        # zeroed, not left in free pages of the file; its cost did not show in a 100k-event
        # build (benchmarks/redaction.py measures the rest).
        conn.execute("PRAGMA secure_delete = ON")
        conn.execute("PRAGMA cache_size = -32768")
        _create_main_schema(conn)
        if not _readable(conn):
            raise db.Damaged("the index structures are damaged")
        create_temp_schema(conn)
    except SessionQueryError:
        conn.close()
        raise
    except (db.Error, UnicodeDecodeError) as exc:  # damaged text decodes badly
        conn.close()
        if ours and discard_damaged:
            # Ours (our application_id) but damaged, e.g. truncated: the index is derived, so
            # the file is replaced by a fresh one, by the holder of the write lock only.
            lock = WriteLock(Path(path))
            if lock.try_acquire():
                try:
                    _discard(path)
                    return _open_index(path, journal_mode, discard_damaged=False)
                finally:
                    lock.release()
        raise _failed(path, str(exc)) from exc
    return conn


def close_quietly(conn: db.Connection) -> None:
    """Close ``conn``, ignoring errors (used on failure paths)."""
    with contextlib.suppress(db.Error):
        conn.close()
