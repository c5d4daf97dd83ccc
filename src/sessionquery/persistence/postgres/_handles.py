"""Read and write handles of the PostgreSQL session store."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

import psycopg

from sessionquery.errors import PersistenceClosed, PersistenceCorrupt, PersistenceOwned
from sessionquery.model import SessionEvent, SessionHeader
from sessionquery.persistence._shared import BufferedWriteHandle, LogHandle
from sessionquery.persistence.postgres._schema import dumps, parse_event, write_failed

if TYPE_CHECKING:
    from sessionquery.persistence.postgres.store import PostgresPersistence

__all__ = ["PostgresReadHandle", "PostgresWriteHandle"]


class PostgresReadHandle(LogHandle):
    """A snapshot view of one stored log (the events stored when it was opened)."""

    def __init__(
        self, store: PostgresPersistence, header: SessionHeader, inherited: int, count: int
    ) -> None:
        super().__init__(header, inherited)
        self._store = store
        self._count = count
        self._closed = False

    def read(self, offset: int = 0, length: int | None = None) -> builtins.list[SessionEvent]:
        """Events ``offset .. offset+length`` of the log as stored at open time.

        Raises:
            PersistenceClosed: the handle is closed.
            PersistenceCorrupt: a stored event is invalid or seqs are not contiguous.
        """
        if self._closed:
            raise PersistenceClosed(f"read handle of session {self._header.id!r} is closed")
        if type(offset) is not int or offset < 0:
            raise ValueError(f"offset must be a non-negative integer: {offset!r}")
        stop = self._count if length is None else min(self._count, offset + max(0, length))
        if offset >= stop:
            return []
        sid = self._header.id
        rows = self._store._fetch(
            "SELECT seq, event_json FROM sq_events WHERE session_id = %s AND seq >= %s "
            "AND seq < %s ORDER BY seq",
            (sid, offset, stop),
        )
        events = [parse_event(sid, int(seq), str(text)) for seq, text in rows]
        if len(events) != stop - offset:
            raise PersistenceCorrupt(
                f"postgres session {sid!r}: events {offset}..{stop - 1} expected, "
                f"{len(events)} stored"
            )
        return events

    def close(self) -> None:
        """Release the handle; idempotent."""
        self._closed = True


class PostgresWriteHandle(BufferedWriteHandle[tuple[int, str]]):
    """The owning writer of one session: its own connection holding the advisory lock.

    A flush inserts every queued event in one transaction and returns when it is committed;
    closing releases the advisory lock and the connection.
    """

    def __init__(
        self,
        *,
        store: PostgresPersistence,
        conn: psycopg.Connection[Any],
        header: SessionHeader,
        inherited: int,
        stored: int,
    ) -> None:
        super().__init__(header, inherited, stored, f"write handle of session {header.id!r}")
        self._store = store
        self._conn = conn

    def _encode(self, event: SessionEvent) -> tuple[int, str]:
        return (event.seq, dumps(event.to_json()))

    def _flush_locked(self) -> None:
        rows = self._queued()
        if not rows:
            return
        sid = self._header.id
        size = sum(len(text.encode("utf-8")) + 1 for _seq, text in rows)
        if self._conn.closed or self._conn.broken:
            # The server dropped the connection, and the session's lock with it: take the lock
            # again on a new connection (refused if another writer took over meanwhile).
            self._conn = self._store._owning_connection(sid)
        try:
            with self._conn.transaction():
                with self._conn.cursor() as cur:
                    with cur.copy(
                        "COPY sq_events (session_id, seq, event_json) FROM STDIN"
                    ) as copy:
                        for seq, text in rows:
                            copy.write_row((sid, seq, text))
                updated = self._conn.execute(
                    "UPDATE sq_sessions SET event_count = event_count + %s, "
                    "size_bytes = size_bytes + %s WHERE id = %s AND event_count = %s",
                    (len(rows), size, sid, self._stored),
                ).rowcount
                if updated != 1:
                    raise _StaleSeq
                self._store._record_change(self._conn, sid)
        except _StaleSeq:
            raise PersistenceOwned(
                f"session {sid!r} changed under its writer: seq {self._stored} is stale"
            ) from None
        except psycopg.errors.UniqueViolation:
            raise PersistenceOwned(
                f"session {sid!r} changed under its writer: seq {self._stored} is stale"
            ) from None
        except psycopg.Error as exc:
            raise write_failed(exc, f"appending events to session {sid!r}") from exc
        self._stored_now(len(rows))

    def _release(self) -> None:
        self._store._release(self._conn, self._header.id)


class _StaleSeq(Exception):
    pass
