"""Read and write handles of the PostgreSQL session store."""

from __future__ import annotations

import builtins
import threading
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import psycopg

from sessionquery.errors import PersistenceClosed, PersistenceCorrupt, PersistenceOwned
from sessionquery.model import SessionEvent, SessionHeader
from sessionquery.persistence.postgres._schema import dumps, parse_event, write_failed

if TYPE_CHECKING:
    from sessionquery.persistence.postgres.store import PostgresPersistence

__all__ = ["PostgresReadHandle", "PostgresWriteHandle"]


class PostgresReadHandle:
    """A snapshot view of one stored log (the events stored when it was opened)."""

    def __init__(
        self, store: PostgresPersistence, header: SessionHeader, inherited: int, count: int
    ) -> None:
        self._store = store
        self._header = header
        self._inherited = inherited
        self._count = count
        self._closed = False

    @property
    def header(self) -> SessionHeader:
        return self._header

    @property
    def inherited_event_count(self) -> int:
        return self._inherited

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
        self._closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class PostgresWriteHandle:
    """The owning writer of one session: its own connection holding the advisory lock."""

    def __init__(
        self,
        *,
        store: PostgresPersistence,
        conn: psycopg.Connection[Any],
        header: SessionHeader,
        inherited: int,
        stored: int,
    ) -> None:
        self._store = store
        self._conn = conn
        self._header = header
        self._inherited = inherited
        self._stored = stored
        self._buffer: builtins.list[tuple[int, str]] = []
        self._closed = False
        self._state = threading.Lock()
        self._flushing = threading.Lock()

    @property
    def header(self) -> SessionHeader:
        """The session header (fixed at create)."""
        return self._header

    @property
    def inherited_event_count(self) -> int:
        """How many leading events were inherited from a seed."""
        return self._inherited

    @property
    def event_count(self) -> int:
        """Events stored plus events queued; the next seq to append."""
        with self._state:
            return self._stored + len(self._buffer)

    def append(self, events: Sequence[SessionEvent]) -> None:
        """Queue whole events (no I/O); durable once :meth:`flush` returns.

        Raises:
            ValueError: an item is not a ``SessionEvent`` or its seq is not the next one.
            PersistenceClosed: the handle is closed.
        """
        with self._state:
            if self._closed:
                raise PersistenceClosed(f"write handle of session {self._header.id!r} is closed")
            expected = self._stored + len(self._buffer)
            rows: builtins.list[tuple[int, str]] = []
            for event in events:
                if not isinstance(event, SessionEvent):
                    raise ValueError(f"expected a SessionEvent, not {type(event).__name__}")
                if event.seq != expected:
                    raise ValueError(f"event seq {event.seq} is not the next seq {expected}")
                rows.append((event.seq, dumps(event.to_json())))
                expected += 1
            self._buffer.extend(rows)

    def flush(self) -> None:
        """Insert every queued event in one transaction; returns when it is committed.

        Raises:
            PersistenceWriteFailed: the server refused or the connection failed; the events
                stay queued.
            PersistenceOwned: the stored log moved on (a stale seq); nothing was written.
            PersistenceClosed: the handle is closed.
        """
        with self._flushing:
            if self._closed:
                raise PersistenceClosed(f"write handle of session {self._header.id!r} is closed")
            self._flush_locked()

    def _flush_locked(self) -> None:
        with self._state:
            rows = builtins.list(self._buffer)
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
        with self._state:
            del self._buffer[: len(rows)]
            self._stored += len(rows)

    def close(self) -> None:
        """Flush, then release ownership (the advisory lock) and the connection; idempotent.

        Raises:
            PersistenceWriteFailed: the final flush failed; the handle stays open and owning.
        """
        with self._flushing:
            if self._closed:
                return
            self._flush_locked()
            with self._state:
                self._closed = True
            self._store._release(self._conn, self._header.id)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class _StaleSeq(Exception):
    pass
