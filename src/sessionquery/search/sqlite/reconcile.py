"""Reconciliation: bring the derived index up to date with the corpus before a search.

Invariants:

* Durable rows mirror the persistence listing: a session is (re)indexed only when its
  revision differs from the indexed one, vanished sessions are deleted, live sessions are not
  read from persistence at all (their durable rows are shadowed while they are live).
* Live sessions are indexed into connection-local TEMP tables, compared by current length and
  indexed incrementally: a session that grew from ``n`` to ``m`` events indexes only events
  ``n..m-1``; when one of them is a replace, the documents it pushed off the surface are
  re-classified ``shadowed`` in place.
* All writes of one reconciliation happen in one ``BEGIN IMMEDIATE`` transaction, committed
  only after the observation proved stable; on any failure everything is rolled back (the
  in-memory live state is then rebuilt from scratch by the next reconciliation).
* With an unchanged ``change_token()`` and unchanged live lengths nothing is listed or read.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model import (
    Replace,
    SessionEvent,
    SessionHeader,
    SurfaceError,
    SurfaceFolder,
    extract_event_text,
)
from sessionquery.persistence.base import PersistedSession, SessionPersistence
from sessionquery.query.backend import Corpus, LiveSnapshot
from sessionquery.query.cancel import CancelToken, check_cancel
from sessionquery.query.corpus import busy, settle_attempts
from sessionquery.search.sqlite.query import SEQ_BITS, SEQ_MASK
from sessionquery.search.sqlite.snippet import sanitize_text

__all__ = ["IndexState", "IndexUpdate", "LiveState", "ProgressCallback", "reconcile"]

ProgressCallback = Callable[[int, int], None]
"""Called as ``progress(done, total)`` while persisted sessions are (re)indexed."""

_Row = tuple[int, str, str, int, str, int]  # rowid, text, type, time, surface, length


class _Docs:
    """The SQL of one document table pair (rows + external-content FTS5 index)."""

    __slots__ = ("delete_id", "delete_range", "insert_fts", "insert_rows", "rows")

    def __init__(self, schema: str, rows: str, fts: str) -> None:
        self.rows = f"{schema}.{rows}"
        self.insert_rows = (
            f"INSERT INTO {schema}.{rows} (id, text, type, time, surface, length) "
            "VALUES (?,?,?,?,?,?)"
        )
        self.insert_fts = f"INSERT INTO {schema}.{fts} (rowid, text) VALUES (?,?)"
        forget = f"INSERT INTO {schema}.{fts} ({fts}, rowid, text) SELECT 'delete', id, text "
        self.delete_range = (
            forget + f"FROM {schema}.{rows} WHERE id BETWEEN ? AND ?",
            f"DELETE FROM {schema}.{rows} WHERE id BETWEEN ? AND ?",
        )
        self.delete_id = (
            forget + f"FROM {schema}.{rows} WHERE id = ?",
            f"DELETE FROM {schema}.{rows} WHERE id = ?",
        )

    def insert(self, conn: sqlite3.Connection, rows: list[_Row]) -> None:
        conn.executemany(self.insert_rows, rows)
        conn.executemany(self.insert_fts, [(row[0], row[1]) for row in rows])

    def delete_key(self, conn: sqlite3.Connection, key: int) -> None:
        bounds = _key_range(key)
        for statement in self.delete_range:
            conn.execute(statement, bounds)

    def delete_ids(self, conn: sqlite3.Connection, ids: list[tuple[int]]) -> None:
        for statement in self.delete_id:
            conn.executemany(statement, ids)


_DURABLE = _Docs("main", "doc_rows", "doc_fts")
_LIVE = _Docs("temp", "live_rows", "live_fts")


@dataclass(frozen=True, slots=True)
class IndexUpdate:
    """What one reconciliation did.

    Attributes:
        skipped: nothing could have changed (same change token, same live lengths), so nothing
            was listed or read.
        persisted_indexed: persisted sessions (re)indexed.
        persisted_removed: persisted sessions dropped from the index.
        live_indexed: live sessions whose rows were written.
        live_removed: sessions that stopped being live.
        documents_written: documents inserted or re-classified.
    """

    skipped: bool = False
    persisted_indexed: int = 0
    persisted_removed: int = 0
    live_indexed: int = 0
    live_removed: int = 0
    documents_written: int = 0


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


_UNBOUND = object()


@dataclass(slots=True)
class IndexState:
    """The in-memory side of one open index (valid only with its connection)."""

    generation: int = 0
    epoch: int = 0
    binding: object = _UNBOUND
    token: str | None = None
    listed_ids: frozenset[str] = frozenset()
    live: dict[str, LiveState] = field(default_factory=dict)
    live_dirty: bool = False


class _Unstable(Exception):
    """The corpus changed while it was being observed."""


class _Transaction:
    __slots__ = ("begun", "conn")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.begun = False

    def begin(self) -> None:
        if not self.begun:
            self.conn.execute("BEGIN IMMEDIATE")
            self.begun = True

    def commit(self) -> None:
        if self.begun:
            self.conn.execute("COMMIT")

    def rollback(self) -> None:
        if self.conn.in_transaction:
            # An expired cancel token must not interrupt the rollback itself.
            self.conn.set_progress_handler(None, 0)
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("ROLLBACK")


def _key_range(key: int) -> tuple[int, int]:
    return key << SEQ_BITS, (key << SEQ_BITS) | SEQ_MASK


def _fold(events: Sequence[SessionEvent], folder: SurfaceFolder) -> bool:
    """Apply ``events`` to ``folder``; return whether any of them was a replace."""
    replaced = False
    for event in events:
        folder.apply(event)
        replaced = replaced or isinstance(event.surface_op, Replace)
    return replaced


def _rows(key: int, events: Sequence[SessionEvent], folder: SurfaceFolder) -> list[_Row]:
    base = key << SEQ_BITS
    rows: list[_Row] = []
    for event in events:
        text = extract_event_text(event)
        if not text:
            continue
        if event.seq > SEQ_MASK:
            raise SessionQueryError(
                ErrorCode.INDEX_FAILED, f"event seq {event.seq} is beyond the index's range"
            )
        text = sanitize_text(text)
        surface = folder.surface_class(event.seq)
        rows.append((base | event.seq, text, event.type, event.time, surface, len(text)))
    return rows


def _corrupt(session_id: str, exc: SurfaceError) -> SessionQueryError:
    return SessionQueryError(
        ErrorCode.CORRUPT_SESSION, f"stored session {session_id!r} is corrupt: {exc}"
    )


def _conflict(session_id: str) -> SessionQueryError:
    return SessionQueryError(
        ErrorCode.SOURCE_CONFLICT,
        f"session {session_id!r} has incompatible headers in two observations",
    )


def _header_json(header: SessionHeader) -> str:
    return json.dumps(header.to_json(), ensure_ascii=False, separators=(",", ":"))


class _Pass:
    """One attempt at observing the corpus and writing the difference."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        state: IndexState,
        corpus: Corpus,
        snapshots: list[LiveSnapshot],
        cancel: CancelToken | None,
        progress: ProgressCallback | None,
        token: str | None = None,
    ) -> None:
        self.conn = conn
        self.state = state
        self.corpus = corpus
        self.token = token
        self.snapshots = snapshots
        self.cancel = cancel
        self.progress = progress
        self.txn = _Transaction(conn)
        self.generation = state.generation + 1
        self.listing: dict[str, PersistedSession] | None = None
        self.live: dict[str, LiveState] = {}
        self.counts = {"pi": 0, "pr": 0, "li": 0, "lr": 0, "docs": 0}

    # -- persisted ---------------------------------------------------------------------

    def persisted(self, persistence: SessionPersistence | None) -> None:
        if persistence is None:
            return
        live_ids = frozenset(snapshot.header.id for snapshot in self.snapshots)
        listing = {p.header.id: p for p in self.corpus.list_persisted(self.cancel)}
        rows = self.conn.execute("SELECT id, key, revision FROM main.persisted_sessions").fetchall()
        if any(type(key) is not int or revision is None for _sid, key, revision in rows):
            # Bytes damaged inside the index file: reported as INDEX_FAILED, never a raw error.
            raise sqlite3.DatabaseError("main.persisted_sessions holds a damaged row")
        indexed = {str(sid): (int(key), str(revision)) for sid, key, revision in rows}
        stale = [
            entry
            for sid, entry in listing.items()
            if sid not in live_ids and (sid not in indexed or indexed[sid][1] != entry.revision)
        ]
        if self.progress is not None and stale:
            self.progress(0, len(stale))
        for done, entry in enumerate(stale, 1):
            check_cancel(self.cancel)
            self._index_persisted(entry, indexed.get(entry.header.id))
            if self.progress is not None:
                self.progress(done, len(stale))
        # With a change token the listing need not be verified: the token recorded is the one
        # read before listing, so any change made meanwhile makes the next search list again.
        if stale and self.token is None:
            again = {p.header.id: p for p in self.corpus.list_persisted(self.cancel)}
            if not _same_listing(listing, again, live_ids | self.corpus.live_ids()):
                raise _Unstable
        if self.corpus.live_ids() != live_ids:
            raise _Unstable
        for sid, (key, _revision) in indexed.items():
            if sid not in listing:
                self.txn.begin()
                _DURABLE.delete_key(self.conn, key)
                self.conn.execute("DELETE FROM main.persisted_sessions WHERE key = ?", (key,))
                self.counts["pr"] += 1
        if stale or self.counts["pr"]:
            self.conn.execute(
                "UPDATE main.search_state SET global_generation = ?", (self.generation,)
            )
        self.listing = listing

    def _index_persisted(self, entry: PersistedSession, indexed: tuple[int, str] | None) -> None:
        sid = entry.header.id
        try:
            log = self.corpus.read_persisted(sid, self.cancel)
        except SessionQueryError as exc:
            if exc.code is not ErrorCode.SESSION_NOT_FOUND:
                raise
            # Deleted since it was listed. With a change token the moved token brings the
            # next search back to drop it; without one, observe the store again.
            if self.token is None:
                raise _Unstable from None
            return
        if not log.session.is_compatible(entry.header):
            raise _conflict(sid)
        folder = SurfaceFolder()
        try:
            _fold(log.events, folder)
        except SurfaceError as exc:
            raise _corrupt(sid, exc) from None
        header = log.session
        self.txn.begin()
        values = (
            header.created_at,
            header.cwd,
            header.parent_session,
            _header_json(header),
            entry.revision,
            self.generation,
        )
        if indexed is None:
            cursor = self.conn.execute(
                "INSERT INTO main.persisted_sessions (created_at, cwd, parent_session, "
                "header_json, revision, generation, id) VALUES (?,?,?,?,?,?,?)",
                (*values, sid),
            )
            key = int(cursor.lastrowid or 0)
            rows = _rows(key, log.events, folder)
            _DURABLE.insert(self.conn, rows)
            self.counts["docs"] += len(rows)
        else:
            key = indexed[0]
            self.conn.execute(
                "UPDATE main.persisted_sessions SET created_at = ?, cwd = ?, parent_session = ?, "
                "header_json = ?, revision = ?, generation = ? WHERE key = ?",
                (*values, key),
            )
            self.counts["docs"] += self._rewrite(key, _rows(key, log.events, folder))
        self.counts["pi"] += 1

    def _rewrite(self, key: int, rows: list[_Row]) -> int:
        """Write only the difference between the stored rows of ``key`` and ``rows``.

        An appended log keeps its earlier documents untouched (no re-tokenising); documents
        whose surface class changed are updated in place.
        """
        lo, hi = _key_range(key)
        existing = {
            int(rid): (str(text), str(kind), int(time), str(surface))
            for rid, text, kind, time, surface in self.conn.execute(
                "SELECT id, text, type, time, surface FROM main.doc_rows WHERE id BETWEEN ? AND ?",
                (lo, hi),
            )
        }
        inserts: list[_Row] = []
        deletes: list[tuple[int]] = []
        updates: list[tuple[str, int]] = []
        for row in rows:
            old = existing.pop(row[0], None)
            if old is None:
                inserts.append(row)
            elif old[:3] != (row[1], row[2], row[3]):
                deletes.append((row[0],))
                inserts.append(row)
            elif old[3] != row[4]:
                updates.append((row[4], row[0]))
        deletes.extend((rid,) for rid in existing)
        _DURABLE.delete_ids(self.conn, deletes)
        self.conn.executemany("UPDATE main.doc_rows SET surface = ? WHERE id = ?", updates)
        _DURABLE.insert(self.conn, inserts)
        return len(inserts) + len(updates)

    # -- live --------------------------------------------------------------------------

    def live_sessions(self, persistence: SessionPersistence | None) -> None:
        previous = self.state.live
        if self.state.live_dirty:
            self.txn.begin()
            self.conn.execute("INSERT INTO temp.live_fts (live_fts) VALUES ('delete-all')")
            self.conn.execute("DELETE FROM temp.live_rows")
            self.conn.execute("DELETE FROM temp.live_sessions")
            previous = {}
        listed = frozenset(self.listing) if self.listing is not None else self.state.listed_ids
        seen: set[str] = set()
        for snapshot in self.snapshots:
            check_cancel(self.cancel)
            sid = snapshot.header.id
            seen.add(sid)
            if self.listing is not None and sid in self.listing:
                if not self.listing[sid].header.is_compatible(snapshot.header):
                    raise _conflict(sid)
            persisted = persistence is not None and sid in listed
            self.live[sid] = self._live_one(snapshot, previous.get(sid), persisted)
        for sid, old in previous.items():
            if sid not in seen:
                self.txn.begin()
                self._drop_live(old.key)
                self.counts["lr"] += 1

    def _drop_live(self, key: int) -> None:
        _LIVE.delete_key(self.conn, key)
        self.conn.execute("DELETE FROM temp.live_sessions WHERE key = ?", (key,))

    def _live_one(
        self, snapshot: LiveSnapshot, old: LiveState | None, persisted: bool
    ) -> LiveState:
        events = snapshot.events
        length = len(events)
        if old is not None and _extends(old, snapshot):
            if length == old.length and old.persisted == persisted:
                return old
            return self._grow_live(old, events, persisted)
        self.txn.begin()
        if old is not None:
            self._drop_live(old.key)
        header = snapshot.header
        cursor = self.conn.execute(
            "INSERT INTO temp.live_sessions (id, created_at, cwd, parent_session, persisted) "
            "VALUES (?,?,?,?,?)",
            (header.id, header.created_at, header.cwd, header.parent_session, int(persisted)),
        )
        key = int(cursor.lastrowid or 0)
        folder = SurfaceFolder()
        self._apply_live(header.id, events, folder)
        rows = _rows(key, events, folder)
        _LIVE.insert(self.conn, rows)
        self.counts["li"] += 1
        self.counts["docs"] += len(rows)
        return LiveState(
            key=key,
            header=header,
            length=length,
            last_event=events[-1] if events else None,
            folder=folder,
            current_docs={row[0] & SEQ_MASK for row in rows if row[4] == "current"},
            persisted=persisted,
            generation=self.generation,
        )

    def _apply_live(self, sid: str, events: Sequence[SessionEvent], folder: SurfaceFolder) -> bool:
        try:
            return _fold(events, folder)
        except SurfaceError as exc:
            raise SessionQueryError(
                ErrorCode.INVALID_SURFACE, f"live session {sid!r} has an invalid surface: {exc}"
            ) from None

    def _grow_live(
        self, old: LiveState, events: Sequence[SessionEvent], persisted: bool
    ) -> LiveState:
        self.txn.begin()
        if old.persisted != persisted:
            self.conn.execute(
                "UPDATE temp.live_sessions SET persisted = ? WHERE key = ?",
                (int(persisted), old.key),
            )
        new_events = events[old.length :]
        replaced = self._apply_live(old.header.id, new_events, old.folder)
        current = old.current_docs
        if replaced:
            gone = [seq for seq in current if not old.folder.is_current(seq)]
            base = old.key << SEQ_BITS
            self.conn.executemany(
                "UPDATE temp.live_rows SET surface = 'shadowed' WHERE id = ?",
                [(base | seq,) for seq in gone],
            )
            current.difference_update(gone)
            self.counts["docs"] += len(gone)
        rows = _rows(old.key, new_events, old.folder)
        _LIVE.insert(self.conn, rows)
        current.update(row[0] & SEQ_MASK for row in rows if row[4] == "current")
        self.counts["li"] += 1
        self.counts["docs"] += len(rows)
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


def _extends(old: LiveState, snapshot: LiveSnapshot) -> bool:
    """Whether ``snapshot`` is ``old``'s session grown by appends (same header, same prefix)."""
    events = snapshot.events
    if snapshot.header != old.header or len(events) < old.length:
        return False
    if old.last_event is None:
        return True
    last = events[old.length - 1]
    return last is old.last_event or last == old.last_event


def _same_listing(
    first: dict[str, PersistedSession], second: dict[str, PersistedSession], ignore: frozenset[str]
) -> bool:
    keys = set(first) - ignore
    if keys != set(second) - ignore:
        return False
    return all(
        first[sid].revision == second[sid].revision and first[sid].header == second[sid].header
        for sid in keys
    )


def live_unchanged(state: IndexState, snapshots: Sequence[LiveSnapshot]) -> bool:
    """Whether every live session is exactly as indexed (ids, headers, lengths)."""
    if state.live_dirty or len(snapshots) != len(state.live):
        return False
    for snapshot in snapshots:
        old = state.live.get(snapshot.header.id)
        if old is None or old.length != len(snapshot.events) or old.header != snapshot.header:
            return False
    return True


def reconcile(
    conn: sqlite3.Connection,
    state: IndexState,
    corpus: Corpus,
    cancel: CancelToken | None = None,
    progress: ProgressCallback | None = None,
) -> IndexUpdate:
    """Bring the index up to date with ``corpus`` (the caller holds the connection lock).

    Raises:
        SessionQueryError: ``PERSISTENCE_FAILED`` (listing unstable twice, or storage errors),
            ``CORRUPT_SESSION``, ``SOURCE_CONFLICT``, ``ABORTED``, or ``INDEX_FAILED`` when
            the write transaction fails (nothing is committed; the next search retries).
    """
    persistence = corpus.persistence
    binding_changed = persistence is not state.binding
    token = corpus.change_token() if persistence is not None else None
    snapshots = corpus.live_snapshots()
    if (
        not binding_changed
        and live_unchanged(state, snapshots)
        and (persistence is None or (token is not None and token == state.token))
    ):
        return IndexUpdate(skipped=True)
    attempts = 0
    for attempts in settle_attempts(cancel):  # noqa: B007 - counted for the BUSY error
        work = _Pass(
            conn=conn,
            state=state,
            corpus=corpus,
            snapshots=snapshots,
            cancel=cancel,
            progress=progress,
            token=token,
        )
        try:
            work.persisted(persistence)
            work.live_sessions(persistence)
            work.txn.commit()
        except _Unstable:
            work.txn.rollback()
            snapshots = corpus.live_snapshots()
            continue
        except sqlite3.Error as exc:
            work.txn.rollback()
            state.live_dirty = True
            check_cancel(cancel)
            raise SessionQueryError(
                ErrorCode.INDEX_FAILED, f"session-search index reconciliation failed: {exc}"
            ) from exc
        except BaseException:
            work.txn.rollback()
            state.live_dirty = True
            raise
        _commit_state(state, work, persistence, token, binding_changed)
        counts = work.counts
        return IndexUpdate(
            persisted_indexed=counts["pi"],
            persisted_removed=counts["pr"],
            live_indexed=counts["li"],
            live_removed=counts["lr"],
            documents_written=counts["docs"],
        )
    raise busy("the session store", attempts)


def _commit_state(
    state: IndexState,
    work: _Pass,
    persistence: SessionPersistence | None,
    token: str | None,
    binding_changed: bool,
) -> None:
    if work.txn.begun or binding_changed:
        state.generation = work.generation
    if binding_changed:
        state.epoch += 1
        state.binding = persistence
    state.token = token
    if work.listing is not None:
        state.listed_ids = frozenset(work.listing)
    elif persistence is None:
        state.listed_ids = frozenset()
    state.live = work.live
    state.live_dirty = False
