"""The live overlay: live sessions indexed into connection-local TEMP tables.

Invariants:

* The overlay belongs to one connection (one process, one :class:`SqliteSearch`): other
  processes sharing the index never see it. While a session is live its overlay rows shadow
  its durable rows.
* Live sessions are compared by current length and indexed incrementally: a session that grew
  from ``n`` to ``m`` events indexes only events ``n..m-1``; when one of them is a replace, the
  documents it pushed off the surface are re-classified ``shadowed`` in place.
* One pass writes in one transaction on the TEMP tables only (a deferred ``BEGIN`` takes no
  lock on the shared database); on failure the caller rolls it back and marks the overlay
  dirty, and the next pass rebuilds it from scratch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model import SessionEvent, SessionHeader, SurfaceFolder
from sessionquery.persistence.base import PersistedSession
from sessionquery.query.backend import LiveSnapshot
from sessionquery.query.cancel import CancelToken, check_cancel
from sessionquery.search.live import extends, fold_live, unchanged
from sessionquery.search.sqlite import db
from sessionquery.search.sqlite.query import SEQ_BITS, SEQ_MASK
from sessionquery.search.sqlite.rows import LIVE, LIVE_TITLES, event_rows, title_rows

__all__ = ["LiveOverlay", "LiveState", "live_unchanged"]

PersistedLookup = Callable[[str], PersistedSession | None]
"""The persistence's entry for a live id (``None``: not persisted)."""


@dataclass(slots=True)
class LiveState:
    """What the TEMP tables hold for one live session."""

    key: int
    header: SessionHeader
    length: int
    last_event: SessionEvent | None
    folder: SurfaceFolder
    current_docs: set[int]
    persisted: bool
    generation: int


def _conflict(session_id: str) -> SessionQueryError:
    return SessionQueryError(
        ErrorCode.SOURCE_CONFLICT,
        f"session {session_id!r} has incompatible headers in two observations",
    )


def live_unchanged(
    live: dict[str, LiveState], dirty: bool, snapshots: Sequence[LiveSnapshot]
) -> bool:
    """Whether every live session is exactly as indexed (ids, headers, lengths)."""
    return not dirty and unchanged(live, snapshots)


class LiveOverlay:
    """One pass over the live sessions, writing the difference into the TEMP tables.

    Args:
        conn: the connection that owns the TEMP tables (held by the caller).
        previous: the overlay as the last successful pass left it.
        dirty: the TEMP tables may disagree with ``previous`` (a pass failed): start over.
        generation: the generation stamped on sessions written by this pass.
    """

    def __init__(
        self,
        conn: db.Connection,
        previous: dict[str, LiveState],
        *,
        dirty: bool,
        generation: int,
    ) -> None:
        self.conn = conn
        self.previous = {} if dirty else previous
        self.dirty = dirty
        self.generation = generation
        self.live: dict[str, LiveState] = {}
        self.begun = False
        self.indexed = self.removed = self.documents = 0

    def _begin(self) -> None:
        if not self.begun:
            self.conn.execute("BEGIN")
            self.begun = True

    def run(
        self,
        snapshots: Sequence[LiveSnapshot],
        persisted_of: PersistedLookup,
        cancel: CancelToken | None,
    ) -> None:
        """Bring the TEMP tables in line with ``snapshots`` (the caller commits).

        Raises:
            SessionQueryError: ``SOURCE_CONFLICT`` (a live header incompatible with the
                persisted one), ``INVALID_SURFACE`` or ``ABORTED``.
        """
        if self.dirty:
            self._begin()
            self.conn.execute("INSERT INTO temp.live_fts (live_fts) VALUES ('delete-all')")
            self.conn.execute("DELETE FROM temp.live_rows")
            self.conn.execute(
                "INSERT INTO temp.live_title_fts (live_title_fts) VALUES ('delete-all')"
            )
            self.conn.execute("DELETE FROM temp.live_title_rows")
            self.conn.execute("DELETE FROM temp.live_sessions")
        seen: set[str] = set()
        for snapshot in snapshots:
            check_cancel(cancel)
            sid = snapshot.header.id
            seen.add(sid)
            entry = persisted_of(sid)
            if entry is not None and not entry.header.is_compatible(snapshot.header):
                raise _conflict(sid)
            self.live[sid] = self._one(snapshot, self.previous.get(sid), entry is not None)
        for sid, old in self.previous.items():
            if sid not in seen:
                self._begin()
                self._drop(old.key)
                self.removed += 1

    def commit(self) -> None:
        """Commit the pass's writes (if any)."""
        if self.begun:
            self.conn.execute("COMMIT")

    def _drop(self, key: int) -> None:
        LIVE.delete_key(self.conn, key)
        LIVE_TITLES.delete_key(self.conn, key)
        self.conn.execute("DELETE FROM temp.live_sessions WHERE key = ?", (key,))

    def _one(self, snapshot: LiveSnapshot, old: LiveState | None, persisted: bool) -> LiveState:
        events = snapshot.events
        if old is not None and extends(old, snapshot):
            if len(events) == old.length and old.persisted == persisted:
                return old
            return self._grow(old, events, persisted)
        self._begin()
        if old is not None:
            self._drop(old.key)
        header = snapshot.header
        self.conn.execute(
            "INSERT INTO temp.live_sessions (id, created_at, cwd, parent_session, persisted) "
            "VALUES (?,?,?,?,?)",
            (header.id, header.created_at, header.cwd, header.parent_session, int(persisted)),
        )
        key = self.conn.last_insert_rowid()
        folder = SurfaceFolder()
        fold_live(header.id, events, folder)
        rows = event_rows(key, events, folder)
        LIVE.insert(self.conn, rows)
        LIVE_TITLES.insert(self.conn, title_rows(key, events))
        self.indexed += 1
        self.documents += len(rows)
        return LiveState(
            key=key,
            header=header,
            length=len(events),
            last_event=events[-1] if events else None,
            folder=folder,
            current_docs={row[0] & SEQ_MASK for row in rows if row[4] == "current"},
            persisted=persisted,
            generation=self.generation,
        )

    def _grow(self, old: LiveState, events: Sequence[SessionEvent], persisted: bool) -> LiveState:
        self._begin()
        if old.persisted != persisted:
            self.conn.execute(
                "UPDATE temp.live_sessions SET persisted = ? WHERE key = ?",
                (int(persisted), old.key),
            )
        new_events = events[old.length :]
        replaced = fold_live(old.header.id, new_events, old.folder)
        current = old.current_docs
        if replaced:
            gone = [seq for seq in current if not old.folder.is_current(seq)]
            base = old.key << SEQ_BITS
            self.conn.executemany(
                "UPDATE temp.live_rows SET surface = 'shadowed' WHERE id = ?",
                [(base | seq,) for seq in gone],
            )
            current.difference_update(gone)
            self.documents += len(gone)
        rows = event_rows(old.key, new_events, old.folder)
        LIVE.insert(self.conn, rows)
        LIVE_TITLES.insert(self.conn, title_rows(old.key, new_events))
        current.update(row[0] & SEQ_MASK for row in rows if row[4] == "current")
        self.indexed += 1
        self.documents += len(rows)
        return LiveState(
            key=old.key,
            header=old.header,
            length=len(events),
            last_event=events[-1] if events else None,
            folder=old.folder,
            current_docs=current,
            persisted=persisted,
            generation=self.generation,
        )
