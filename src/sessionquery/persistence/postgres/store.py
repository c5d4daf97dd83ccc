"""``PostgresPersistence``: session logs stored in a PostgreSQL database (SPEC §5, §13.5).

Tables (created by numbered migrations recorded in ``sq_migrations``):

* ``sq_store``: one row, the store's random id and its change counter;
* ``sq_sessions``: one row per session: header, inherited count, event count, size, revision;
* ``sq_events``: one row per event, ``(session_id, seq)`` unique, the event's wire JSON;
* ``sq_changes``: the change journal, one row per committed change: ``(change_id, session_id)``.

Invariants:

* **One writer per session, enforced by the server**: a write handle holds a session-level
  advisory lock (keyed by a 64-bit hash of the store id and the session id) on its connection
  for its lifetime; a second writer anywhere is refused with ``PersistenceOwned``. Closing the
  handle unlocks and keeps the connection for the next writer; the lock dies with the
  connection, so a crashed writer never leaves a session locked.
* **Appends refuse a stale seq**: a flush inserts its events and advances the session's
  ``event_count`` only if it still equals the count the handle expects; otherwise the whole
  flush is rolled back.
* **Change token**: every committing change increments ``sq_store.change_counter`` as the
  last statement before ``COMMIT``; the row lock orders commits, so counters become visible in
  increasing order and a token never hides a change committed before it. The token is
  ``"<store id>:<counter>"``, one indexed row read.
* **Change journal**: ``changed_since(token)`` lists the sessions of journal rows after the
  token. Changes made by hand in SQL bypass the counter and are not seen.
* A flushed event is durable when ``flush()`` returns (the server's commit); a failed flush
  leaves the events queued in the handle.
* Reads never write; a read handle returns the events stored when it was opened.
* A listing parses a header only when its stored JSON differs from the one parsed last for
  that id (a long-running server lists the same sessions again and again); the memo keeps one
  entry per listed session and is exact (it compares the whole stored text).
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

import psycopg

from sessionquery.closing import Closing
from sessionquery.errors import (
    PersistenceClosed,
    PersistenceCorrupt,
    PersistenceError,
    PersistenceExists,
    PersistenceNotFound,
    PersistenceOwned,
)
from sessionquery.model import (
    SessionHeader,
)
from sessionquery.persistence._shared import check_new_session
from sessionquery.persistence.base import (
    DocumentLog,
    ListingKey,
    PersistedSession,
    SessionOutline,
    outline_of,
)
from sessionquery.persistence.documents import stored_documents
from sessionquery.persistence.postgres._handles import PostgresReadHandle, PostgresWriteHandle
from sessionquery.persistence.postgres._listing import page_query
from sessionquery.persistence.postgres._schema import (
    IDLE_CONNECTIONS,
    StoreProblem,
    advisory_key,
    check_id,
    dumps,
    migrate,
    parse_header,
    write_failed,
)

if TYPE_CHECKING:
    from sessionquery.query.filters import SessionFilter

__all__ = ["PostgresPersistence"]


class PostgresPersistence(Closing):
    """A durable, shared store of session logs in one PostgreSQL database.

    Any number of instances in any number of processes (and machines) may share one database.
    Thread-safe. The schema is created or migrated when the store is opened.

    Args:
        dsn: a libpq connection string or URI, e.g. ``"postgresql://user@host/db"`` or
            ``"host=/run/postgresql dbname=sessions"``.
        connect_timeout: seconds to wait for the server when connecting.
        pool_size: connections reads may use at once (``psycopg_pool``): more than 1 for a
            long-running server whose threads read concurrently (the viewer, a busy MCP
            server); 1 (the default) reads through one shared connection.

    Raises:
        PersistenceError: the server cannot be reached, refuses the connection, or its schema
            is newer than this version understands.
    """

    def __init__(self, dsn: str, *, connect_timeout: float = 10.0, pool_size: int = 1) -> None:
        if not isinstance(dsn, str) or not dsn.strip():
            raise ValueError("dsn must be a non-empty PostgreSQL connection string")
        if type(pool_size) is not int or not 1 <= pool_size <= 100:
            raise ValueError(f"pool_size must be an integer from 1 to 100: {pool_size!r}")
        self._pool_size = pool_size
        self._pool: Any = None
        self._dsn = dsn
        self._timeout = connect_timeout
        self._lock = threading.Lock()
        self._closed = False
        self._idle: builtins.list[psycopg.Connection[Any]] = []
        self._headers: dict[str, tuple[str, SessionHeader]] = {}
        self._conn: psycopg.Connection[Any] | None = self._connect(autocommit=False)
        try:
            self._store_id = migrate(self._conn)
        except psycopg.Error as exc:
            self._conn.close()
            raise PersistenceError(f"PostgreSQL session store: migration failed: {exc}") from exc
        except BaseException:
            self._conn.close()
            raise
        self._conn.autocommit = True

    # -- connections -----------------------------------------------------------------

    @property
    def dsn(self) -> str:
        """The connection string as configured."""
        return self._dsn

    @property
    def store_id(self) -> str:
        """The random identity of this store, fixed when its schema was created."""
        return self._store_id

    def _connect(self, *, autocommit: bool) -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(
                self._dsn, autocommit=autocommit, connect_timeout=max(1, round(self._timeout))
            )
        except psycopg.Error as exc:
            raise PersistenceError(f"PostgreSQL session store: cannot connect: {exc}") from exc

    @contextmanager
    def _shared(self) -> Iterator[psycopg.Connection[Any]]:
        """The shared autocommit connection, reconnected once if the server dropped it; with
        ``pool_size`` > 1 a connection of the pool (reads of several threads run at once)."""
        if self._pool_size > 1:
            with self._pooled() as conn:
                yield conn
            return
        with self._lock:
            if self._closed:
                raise PersistenceClosed("the PostgreSQL session store is closed")
            if self._conn is None or self._conn.closed or self._conn.broken:
                self._conn = self._connect(autocommit=True)
            yield self._conn

    @contextmanager
    def _pooled(self) -> Iterator[psycopg.Connection[Any]]:
        with self._lock:
            if self._closed:
                raise PersistenceClosed("the PostgreSQL session store is closed")
            if self._pool is None:
                from psycopg_pool import ConnectionPool

                self._pool = ConnectionPool(
                    self._dsn,
                    min_size=1,
                    max_size=self._pool_size,
                    kwargs={"autocommit": True, "connect_timeout": max(1, round(self._timeout))},
                    timeout=self._timeout,
                    open=True,
                )
            pool = self._pool
        try:
            conn = pool.getconn()
        except psycopg.OperationalError as exc:  # PoolTimeout is one
            raise PersistenceError(f"PostgreSQL session store: cannot connect: {exc}") from exc
        try:
            yield conn
        finally:
            pool.putconn(conn)

    def _fetch(self, sql: str, params: Sequence[object] = ()) -> builtins.list[tuple[Any, ...]]:
        with self._shared() as conn:
            return conn.execute(sql, params).fetchall()

    def _record_change(self, conn: psycopg.Connection[Any], session_id: str) -> int:
        """Bump the change counter and journal ``session_id`` (inside the caller's transaction).

        The counter row stays locked until the caller commits, so counters are committed in
        increasing order.
        """
        row = conn.execute(
            "UPDATE sq_store SET change_counter = change_counter + 1 RETURNING change_counter"
        ).fetchone()
        assert row is not None
        counter = int(row[0])
        conn.execute(
            "INSERT INTO sq_changes (change_id, session_id) VALUES (%s, %s)", (counter, session_id)
        )
        conn.execute("UPDATE sq_sessions SET revision = %s WHERE id = %s", (counter, session_id))
        return counter

    def close(self) -> None:
        """Close the shared connection; idempotent. Open write handles keep their own."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
        for conn in idle:
            conn.close()

    def __del__(self) -> None:
        # A store dropped without close() (e.g. by a short-lived command) still hangs up.
        for conn in [getattr(self, "_conn", None), *getattr(self, "_idle", [])]:
            if conn is not None:
                conn.close()

    # -- reading -----------------------------------------------------------------------

    def _describe(
        self, row: Sequence[Any], memo: dict[str, tuple[str, SessionHeader]] | None = None
    ) -> PersistedSession:
        sid, header_json, _inherited, count, size, revision = row
        sid, header_json = str(sid), str(header_json)
        seen = self._headers.get(sid)
        if seen is not None and seen[0] == header_json:
            header = seen[1]
        else:
            header = parse_header(sid, header_json)
            seen = (header_json, header)
        (self._headers if memo is None else memo)[sid] = seen
        return PersistedSession(
            header=header,
            revision=f"{self._store_id}:{revision}",
            event_count=int(count),
            size_bytes=int(size),
        )

    _SESSION_COLUMNS: Final = (
        "id, header_json, inherited_event_count, event_count, size_bytes, revision"
    )

    def list(self) -> builtins.list[PersistedSession]:
        """Every stored session (no promised order).

        Raises:
            PersistenceCorrupt: a stored header is invalid.
        """
        rows = self._fetch(f"SELECT {self._SESSION_COLUMNS} FROM sq_sessions")
        memo: dict[str, tuple[str, SessionHeader]] = {}  # sessions gone since drop out
        listing = [self._describe(row, memo) for row in rows]
        self._headers = memo
        return listing

    def list_newest(
        self, filters: Sequence[SessionFilter], *, after: ListingKey | None, limit: int
    ) -> builtins.list[PersistedSession]:
        """Up to ``limit`` sessions after ``after`` in the listing order (newest
        ``created_at`` first, ties by id) matching the header clauses of ``filters``: one
        query on the listing index (the ``NewestListing`` capability). Under row-level
        security (a team database) only the visible rows, as every read.

        Raises:
            PersistenceCorrupt: a stored header is invalid, or a row lacks its listing
                columns (written by hand, or a header that did not parse when they were
                added): then the whole listing is read, as :meth:`list` reads it.
        """
        if self._fetch("SELECT 1 FROM sq_sessions WHERE created_at IS NULL LIMIT 1"):
            from sessionquery.query.listing import newest_entries

            return newest_entries(self.list(), filters, after=after, limit=limit)
        rows = self._fetch(*page_query(self._SESSION_COLUMNS, filters, after, limit))
        return [self._describe(row) for row in rows]

    def list_outline(self) -> builtins.list[SessionOutline]:
        """Every stored session's id, parent, creation time and cwd, from the listing columns
        written with its header (the ``OutlineListing`` capability): a tenth of the cost of
        :meth:`list` at 100,000 sessions, which parses every header. Under row-level security
        only the visible rows.

        Raises:
            PersistenceCorrupt: as :meth:`list`, when a row lacks its listing columns (then
                the outline is that of the whole listing, read as :meth:`list` reads it).
        """
        if self._fetch("SELECT 1 FROM sq_sessions WHERE created_at IS NULL LIMIT 1"):
            return [outline_of(entry.header) for entry in self.list()]
        rows = self._fetch("SELECT id, parent_session, created_at, cwd FROM sq_sessions")
        return list(map(SessionOutline._make, rows))

    def stat(self, session_id: str) -> PersistedSession | None:
        """One session's listing entry, or ``None`` when it is not stored."""
        sid = check_id(session_id)
        rows = self._fetch(f"SELECT {self._SESSION_COLUMNS} FROM sq_sessions WHERE id = %s", (sid,))
        return self._describe(rows[0]) if rows else None

    def open_read(self, session_id: str) -> PostgresReadHandle:
        """Open a stored log for reading (a snapshot of the events stored now).

        Raises:
            PersistenceNotFound: the id is not stored.
            PersistenceCorrupt: the stored header is invalid.
        """
        sid = check_id(session_id)
        rows = self._fetch(
            "SELECT header_json, inherited_event_count, event_count FROM sq_sessions WHERE id = %s",
            (sid,),
        )
        if not rows:
            raise PersistenceNotFound(f"session {sid!r} is not stored")
        header_json, inherited, count = rows[0]
        header = parse_header(sid, str(header_json))
        return PostgresReadHandle(self, header, int(inherited), int(count))

    def read_documents(self, session_id: str) -> DocumentLog:
        """The searchable documents of one stored log (SPEC ``DocumentSource``).

        Raises:
            PersistenceNotFound: the id is not stored.
            PersistenceCorrupt: the log is damaged or does not fold.
        """
        return stored_documents(self, session_id)

    def verify(self) -> builtins.list[StoreProblem]:
        """Read every stored session completely and report what is wrong, without raising.

        Storage is not modified.
        """
        problems: builtins.list[StoreProblem] = []
        for (sid,) in self._fetch("SELECT id FROM sq_sessions ORDER BY id"):
            try:
                with self.open_read(str(sid)) as handle:
                    events = handle.read()
                extra = self._fetch(
                    "SELECT count(*) FROM sq_events WHERE session_id = %s", (str(sid),)
                )[0][0]
                if int(extra) != len(events):
                    problems.append(
                        StoreProblem(
                            str(sid),
                            None,
                            f"session {sid!r} has {extra} stored events but an event count "
                            f"of {len(events)}",
                        )
                    )
            except PersistenceCorrupt as exc:
                problems.append(StoreProblem(str(sid), _seq_of(str(exc)), str(exc)))
        return problems

    # -- change token and journal -----------------------------------------------------

    def change_token(self) -> str:
        """``"<store id>:<counter>"``; changes with every create, flush and delete (any
        process). One indexed row read."""
        rows = self._fetch("SELECT change_counter FROM sq_store")
        return f"{self._store_id}:{rows[0][0]}"

    def changed_since(self, token: str) -> frozenset[str] | None:
        """Ids of the sessions changed after ``token``; ``None`` for a token of another store
        or a token from the future."""
        store, _, counter_text = str(token).partition(":")
        if store != self._store_id or not counter_text.isdigit():
            return None
        counter = int(counter_text)
        with self._shared() as conn, conn.transaction():
            current, pruned = conn.execute(
                "SELECT change_counter, pruned_through FROM sq_store"
            ).fetchone() or (0, 0)
            if counter > int(current) or counter < int(pruned):
                return None  # from the future, or older than the pruned journal
            rows = conn.execute(
                "SELECT DISTINCT session_id FROM sq_changes WHERE change_id > %s", (counter,)
            ).fetchall()
        return frozenset(str(sid) for (sid,) in rows)

    def prune_changes(self, keep: int = 100_000) -> int:
        """Delete journal rows older than the newest ``keep`` changes; return how many.

        An index holding a token older than the pruned part then lists the store once
        (:meth:`changed_since` answers ``None`` for it), so pruning never hides a change.

        Raises:
            PersistenceWriteFailed: the server refused the delete.
        """
        if type(keep) is not int or keep < 0:
            raise ValueError(f"keep must be a non-negative integer: {keep!r}")
        try:
            with self._shared() as conn, conn.transaction():
                row = conn.execute(
                    "SELECT change_counter, pruned_through FROM sq_store FOR UPDATE"
                ).fetchone()
                assert row is not None
                through = int(row[0]) - keep
                if through <= int(row[1]):
                    return 0
                deleted = conn.execute(
                    "DELETE FROM sq_changes WHERE change_id <= %s", (through,)
                ).rowcount
                conn.execute("UPDATE sq_store SET pruned_through = %s", (through,))
        except psycopg.Error as exc:
            raise write_failed(exc, "pruning the change journal") from exc
        return int(deleted)

    # -- writing -----------------------------------------------------------------------

    def _owning_connection(self, session_id: str) -> psycopg.Connection[Any]:
        """A connection (reused when one is idle) holding ``session_id``'s advisory lock.

        Raises:
            PersistenceOwned: another writer holds it.
        """
        with self._lock:
            if self._closed:
                raise PersistenceClosed("the PostgreSQL session store is closed")
            conn = self._idle.pop() if self._idle else None
        if conn is None or conn.closed or conn.broken:
            conn = self._connect(autocommit=True)
        try:
            row = conn.execute(
                "SELECT pg_try_advisory_lock(%s)", (advisory_key(self._store_id, session_id),)
            ).fetchone()
        except psycopg.Error as exc:
            conn.close()
            raise PersistenceError(f"PostgreSQL session store: locking failed: {exc}") from exc
        if not row or not row[0]:
            self._release(conn)
            raise PersistenceOwned(f"session {session_id!r} is being written by another writer")
        return conn

    def _release(self, conn: psycopg.Connection[Any], session_id: str | None = None) -> None:
        """Give up ``session_id``'s lock (when given) and keep the connection for reuse."""
        try:
            if session_id is not None:
                conn.execute(
                    "SELECT pg_advisory_unlock(%s)", (advisory_key(self._store_id, session_id),)
                )
        except psycopg.Error:
            conn.close()  # the lock dies with the connection
            return
        with self._lock:
            if not self._closed and len(self._idle) < IDLE_CONNECTIONS and not conn.broken:
                self._idle.append(conn)
                return
        conn.close()

    def create(
        self, header: SessionHeader, *, inherited_event_count: int = 0
    ) -> PostgresWriteHandle:
        """Store a new session; its header is committed and listed when this returns.

        Raises:
            ValueError: bad arguments.
            PersistenceExists: the id is already stored (nothing is changed).
            PersistenceOwned: another writer is creating or writing the same id.
            PersistenceWriteFailed: the server refused the write.
        """
        count = check_new_session(header, inherited_event_count)
        sid = check_id(header.id)
        if self._closed:
            raise PersistenceClosed("the PostgreSQL session store is closed")
        conn = self._owning_connection(sid)
        try:
            with conn.transaction():
                inserted = conn.execute(
                    "INSERT INTO sq_sessions (id, header_json, inherited_event_count, revision, "
                    "created_at, cwd, parent_session) VALUES (%s, %s, %s, 0, %s, %s, %s) "
                    "ON CONFLICT (id) DO NOTHING",
                    (
                        sid,
                        dumps(header.to_json()),
                        count,
                        header.created_at,
                        header.cwd,
                        header.parent_session,
                    ),
                ).rowcount
                if inserted != 1:
                    raise PersistenceExists(f"session {sid!r} is already stored")
                self._record_change(conn, sid)
        except psycopg.Error as exc:
            self._release(conn, sid)
            raise write_failed(exc, f"creating session {sid!r}") from exc
        except BaseException:
            self._release(conn, sid)
            raise
        return PostgresWriteHandle(store=self, conn=conn, header=header, inherited=count, stored=0)

    def open_write(self, session_id: str) -> PostgresWriteHandle:
        """Reopen a stored session for appending after its last stored event.

        Raises:
            PersistenceNotFound: the id is not stored.
            PersistenceOwned: another writer owns the session.
            PersistenceCorrupt: the stored header is invalid.
        """
        sid = check_id(session_id)
        conn = self._owning_connection(sid)
        try:
            row = conn.execute(
                "SELECT header_json, inherited_event_count, event_count FROM sq_sessions "
                "WHERE id = %s",
                (sid,),
            ).fetchone()
            if row is None:
                raise PersistenceNotFound(f"session {sid!r} is not stored")
            header = parse_header(sid, str(row[0]))
        except BaseException:
            self._release(conn, sid)
            raise
        return PostgresWriteHandle(
            store=self, conn=conn, header=header, inherited=int(row[1]), stored=int(row[2])
        )

    def delete(self, session_id: str) -> None:
        """Remove a stored session and its events.

        Raises:
            PersistenceNotFound: the id is not stored.
            PersistenceOwned: a writer owns the session.
            PersistenceWriteFailed: the server refused the delete.
        """
        sid = check_id(session_id)
        conn = self._owning_connection(sid)
        try:
            with conn.transaction():
                deleted = conn.execute("DELETE FROM sq_sessions WHERE id = %s", (sid,)).rowcount
                if deleted != 1:
                    raise PersistenceNotFound(f"session {sid!r} is not stored")
                row = conn.execute(
                    "UPDATE sq_store SET change_counter = change_counter + 1 "
                    "RETURNING change_counter"
                ).fetchone()
                assert row is not None
                conn.execute(
                    "INSERT INTO sq_changes (change_id, session_id) VALUES (%s, %s)",
                    (int(row[0]), sid),
                )
        except psycopg.Error as exc:
            raise write_failed(exc, f"deleting session {sid!r}") from exc
        finally:
            self._release(conn, sid)


def _seq_of(message: str) -> int | None:
    marker = "event seq "
    at = message.find(marker)
    if at < 0:
        return None
    digits = message[at + len(marker) :].split(":", 1)[0]
    return int(digits) if digits.isdigit() else None
