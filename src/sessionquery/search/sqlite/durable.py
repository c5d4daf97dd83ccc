"""The durable part of reconciliation: one pass that plans, reads and writes in batches.

A pass runs while its process holds the index's cross-process write lock
(:class:`~.schema.WriteLock`). It plans from the change journal (O(changed)) or a full listing,
reads each stale session's text documents outside any hold on the connection, and writes them
in batches, each one short ``BEGIN IMMEDIATE`` transaction that also records its sessions'
revisions and the build's progress in ``search_state``; its last commit records the change
token the pass started from. Everything committed stays when a pass is interrupted, and the
next pass continues with what is still stale. See :mod:`.reconcile` for the invariants.

**Deadlines.** Reading checks ``cancel`` inside a log (every few thousand lines or megabyte,
:func:`~sessionquery.persistence.documents.checking`); a batch is written under the SQLite
progress handler, so an expiring token interrupts it between rows. A batch write under way
when the token expires may finish within :data:`WRITE_GRACE_SECONDS`; past that it is
interrupted and rolled back (its sessions stay stale and are read again next time). Batches
are bounded by text size as well as by document count; under a deadline by a smaller size
(:data:`DEADLINE_BATCH_TEXT`), so one batch is a few tens of milliseconds of writing and a
short-deadline search still makes progress. What cannot be split is one document (FTS5
tokenises a document in one step) and one session (a session's rows commit together): under
a deadline, a session with more text than one such batch is written alone, and only when
:data:`WRITE_SECONDS_PER_CHAR` says it ends before the deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model.jsonvalue import compact_json
from sessionquery.persistence.base import DocumentLog, PersistedSession, SessionPersistence
from sessionquery.persistence.documents import title_documents
from sessionquery.query.backend import (
    Corpus,
    DocumentCorpus,
    JournalCorpus,
    RootedStore,
    StatCorpus,
)
from sessionquery.query.cancel import CancelToken, check_cancel
from sessionquery.query.corpus import documents_of
from sessionquery.search.sqlite import db
from sessionquery.search.sqlite.overlay import LiveState
from sessionquery.search.sqlite.rows import (
    DURABLE,
    TITLES,
    DocTables,
    Row,
    document_rows,
    key_range,
)
from sessionquery.search.update import ProgressCallback

__all__ = [
    "BATCH_DOCUMENTS",
    "BATCH_SECONDS",
    "BATCH_TEXT",
    "DEADLINE_BATCH_TEXT",
    "UNBOUND",
    "WRITE_GRACE_SECONDS",
    "WRITE_SECONDS_PER_CHAR",
    "DurablePass",
    "IndexAccess",
    "IndexState",
    "keyed_token",
    "same_listing",
]

BATCH_DOCUMENTS: Final = 2000
"""A batch is committed once it holds this many documents..."""
BATCH_TEXT: Final = 8 << 20
"""...or this many characters of text (bounds a batch of huge documents)..."""
DEADLINE_BATCH_TEXT: Final = 256 << 10
"""...or, under a deadline, this many (about 15 ms of writing on the development machine,
so the batch under way at the deadline usually still commits within the grace below;
without a deadline larger batches build about 10% faster)..."""
BATCH_SECONDS: Final = 0.5
"""...or once this much time was spent reading it, whichever comes first."""
WRITE_GRACE_SECONDS: Final = 0.03
"""How long after its token's deadline (or after its cancellation was first seen) a batch
write under way may still commit; then it is interrupted and rolled back. The deadline is
overrun by at most this plus one insert that :data:`WRITE_SECONDS_PER_CHAR` underestimated."""

WRITE_SECONDS_PER_CHAR: Final = 250e-3 / (1 << 20)
"""A pessimistic cost of writing one character of text into the index (250 ms per MiB: the
FTS5 insert of a megabyte of distinct words measured 120 ms on the development machine; a
megabyte repeating a few words, 5 ms). Under a deadline, a session whose text is larger than
:data:`DEADLINE_BATCH_TEXT` is written alone, and only when this estimate fits before the
deadline: FTS5 tokenises a document in one step that no progress handler can interrupt."""

UNBOUND: Final = object()
""":attr:`IndexState.binding` before any persistence was bound."""


class IndexAccess(Protocol):
    """How reconciliation reaches the index (implemented by :class:`SqliteSearch`)."""

    def hold(self, cancel: CancelToken | None) -> AbstractContextManager[db.Connection]:
        """Exclusive use of the connection for a short while (one batch, one query)."""
        ...

    def writing(self, cancel: CancelToken | None) -> AbstractContextManager[None]:
        """The cross-process write lock, waited for within ``cancel``'s deadline."""
        ...


@dataclass(slots=True)
class IndexState:
    """This process's side of a shared index (valid only with its connection).

    Attributes:
        epoch: bumped whenever another persistence is bound (cursors of the old one go stale).
        binding: the persistence the durable part was last reconciled against.
        token: the keyed change token this process last completed a reconciliation at.
        deferred: persisted ids not read because they were live here.
        live_generation: bumped whenever the overlay changes.
        live: the overlay's sessions.
        live_dirty: the overlay may disagree with ``live`` (a pass failed): rebuild it.
    """

    epoch: int = 0
    binding: object = UNBOUND
    token: str | None = None
    deferred: frozenset[str] = frozenset()
    live_generation: int = 0
    live: dict[str, LiveState] = field(default_factory=dict[str, LiveState])
    live_dirty: bool = False


def _identity(persistence: SessionPersistence) -> str:
    kind = type(persistence)
    root = persistence.root if isinstance(persistence, RootedStore) else ""
    return f"{kind.__module__}.{kind.__qualname__}:{root}"


def keyed_token(persistence: SessionPersistence, token: str | None) -> str | None:
    """The token prefixed with the persistence's identity, so a token stored in the shared
    index is never mistaken for one of another store."""
    return None if token is None else f"{_identity(persistence)}\n{token}"


class _WriteGrace(CancelToken):
    """What a batch write runs under: expires :data:`WRITE_GRACE_SECONDS` after ``token``'s
    deadline (after its cancellation was first seen, for a cancelled token) and then raises
    ``token``'s own ``ABORTED``."""

    __slots__ = ("_token", "_until")

    def __init__(self, token: CancelToken) -> None:
        super().__init__()
        self._token = token
        self._until: float | None = None

    @property
    def expired(self) -> bool:
        token = self._token
        if not token.expired:
            return False
        now = time.monotonic()
        if self._until is None:
            start = token.deadline if token.deadline is not None and not token.cancelled else now
            self._until = start + WRITE_GRACE_SECONDS
        return now >= self._until

    def check(self) -> None:
        if self.expired:
            self._token.check()


def _write_token(cancel: CancelToken | None) -> CancelToken | None:
    return None if cancel is None else _WriteGrace(cancel)


def _fits_before_deadline(cancel: CancelToken | None, chars: int) -> None:
    """Raise ``cancel``'s ``ABORTED`` now when tokenising a document of ``chars`` characters
    (one uninterruptible FTS5 step) is expected to end later than
    :data:`WRITE_GRACE_SECONDS` after its deadline; the batch is then rolled back whole."""
    if cancel is None or cancel.deadline is None or chars <= DEADLINE_BATCH_TEXT:
        return
    left = cancel.deadline + WRITE_GRACE_SECONDS - time.monotonic()
    if chars * WRITE_SECONDS_PER_CHAR > left:
        raise SessionQueryError(
            ErrorCode.ABORTED,
            f"session query was aborted (indexing a document of {chars:,} characters would "
            "outlast the deadline; a search with more time, or an update without a deadline, "
            "indexes it)",
        )


def _stored_size(item: tuple[PersistedSession, tuple[int, str] | None]) -> int:
    return item[0].size_bytes or 0


def _text_size(document_log: DocumentLog) -> int:
    return sum(len(document.text) for document in document_log.documents)


def _header_json(document_log: DocumentLog) -> str:
    return compact_json(document_log.header.to_json())


def _conflict(session_id: str) -> SessionQueryError:
    return SessionQueryError(
        ErrorCode.SOURCE_CONFLICT,
        f"session {session_id!r} has incompatible headers in two observations",
    )


def _read(corpus: Corpus, entry: PersistedSession, cancel: CancelToken | None) -> DocumentLog:
    sid = entry.header.id
    if isinstance(corpus, DocumentCorpus):
        document_log = corpus.read_documents(sid, cancel)
    else:  # a corpus without the fast path: fold the exact read
        log = corpus.read_persisted(sid, cancel)
        document_log = DocumentLog(
            log.session,
            entry.revision,
            len(log.events),
            documents_of(sid, log.events),
            title_documents(log.events),
        )
    if not document_log.header.is_compatible(entry.header):
        raise _conflict(sid)
    return document_log


@dataclass(slots=True)
class _Plan:
    """What the durable part of one reconciliation must do."""

    stale: list[tuple[PersistedSession, tuple[int, str] | None]] = field(
        default_factory=list[tuple[PersistedSession, tuple[int, str] | None]]
    )
    removed: list[int] = field(default_factory=list[int])
    deferred: set[str] = field(default_factory=set[str])
    listing: dict[str, PersistedSession] | None = None
    total: int = 0


class DurablePass:
    """The durable part of one reconciliation; the caller holds the write lock."""

    def __init__(
        self,
        access: IndexAccess,
        state: IndexState,
        corpus: Corpus,
        *,
        cancel: CancelToken | None,
        progress: ProgressCallback | None,
        live_ids: frozenset[str],
        swapped: bool,
    ) -> None:
        self.access = access
        self.state = state
        self.corpus = corpus
        self.cancel = cancel
        self.progress = progress
        self.live_ids = live_ids
        self.swapped = swapped
        persistence = corpus.persistence
        assert persistence is not None
        self.persistence = persistence
        self.raw_token = corpus.change_token()
        self.token = keyed_token(persistence, self.raw_token)
        self.indexed = self.documents = self._written = 0
        self.settled = True
        """Whether the store held still during this pass, as far as it could be told."""
        self.plan = _Plan()

    # -- planning ----------------------------------------------------------------------

    def _base(self, conn: db.Connection) -> str | None:
        if self.swapped:
            return None
        if self.state.token is not None:
            return self.state.token
        stored, done, total = db.one(
            conn, "SELECT token, build_done, build_total FROM main.search_state"
        )
        return str(stored) if stored is not None and done == total else None

    def _changed(self, base: str | None) -> frozenset[str] | None:
        if base is None or self.token is None:
            return None
        if base == self.token:
            return frozenset()
        prefix = _identity(self.persistence) + "\n"
        corpus = self.corpus
        if not base.startswith(prefix) or not isinstance(corpus, StatCorpus):
            return None
        if not isinstance(corpus, JournalCorpus):
            return None
        return corpus.changed_since(base[len(prefix) :])

    def plan_work(self) -> _Plan:
        with self.access.hold(self.cancel) as conn:
            base = self._base(conn)
        changed = self._changed(base)
        due = {sid for sid in self.state.deferred if sid not in self.live_ids}
        if changed is None or ((changed or due) and not isinstance(self.corpus, StatCorpus)):
            self._plan_listing()
        else:
            self._plan_changed(changed | due)
        return self.plan

    def _plan_listing(self) -> None:
        plan = self.plan
        listing = {p.header.id: p for p in self.corpus.list_persisted(self.cancel)}
        with self.access.hold(self.cancel) as conn:
            rows: list[tuple[Any, ...]] = conn.execute(
                "SELECT id, key, revision FROM main.persisted_sessions"
            ).fetchall()
            if any(type(key) is not int or revision is None for _sid, key, revision in rows):
                # Bytes damaged inside the index file: INDEX_FAILED, never a raw error.
                raise db.Damaged("main.persisted_sessions holds a damaged row")
        indexed = {str(sid): (int(key), str(revision)) for sid, key, revision in rows}
        for sid, entry in listing.items():
            row = indexed.get(sid)
            if row is not None and row[1] == entry.revision:
                continue
            if sid in self.live_ids:
                plan.deferred.add(sid)
            else:
                plan.stale.append((entry, row))
        plan.removed = [key for sid, (key, _rev) in indexed.items() if sid not in listing]
        plan.listing = listing
        plan.total = len(listing) - len(plan.deferred)

    def _plan_changed(self, ids: frozenset[str] | set[str]) -> None:
        plan = self.plan
        plan.deferred = {sid for sid in self.state.deferred if sid in self.live_ids}
        with self.access.hold(self.cancel) as conn:
            (count,) = db.one(conn, "SELECT count(*) FROM main.persisted_sessions")
        plan.total = int(count)
        corpus = self.corpus
        for sid in sorted(ids):
            assert isinstance(corpus, StatCorpus)  # plan_work lists instead when it cannot
            entry = corpus.stat_persisted(sid, self.cancel)
            with self.access.hold(self.cancel) as conn:
                found = conn.execute(
                    "SELECT key, revision FROM main.persisted_sessions WHERE id = ?", (sid,)
                ).fetchone()
                if found is not None and (type(found[0]) is not int or found[1] is None):
                    raise db.Damaged("main.persisted_sessions holds a damaged row")
            row = None if found is None else (int(found[0]), str(found[1]))
            if entry is None:
                if row is not None:
                    plan.removed.append(row[0])
                    plan.total -= 1
                continue
            if row is not None and row[1] == entry.revision:
                continue
            if sid in self.live_ids:
                plan.deferred.add(sid)
                continue
            plan.stale.append((entry, row))
            plan.total += row is None

    # -- writing -------------------------------------------------------------------------

    def run(self) -> None:
        """Plan, then read and write in batches; the last commit records the token.

        Sets :attr:`settled` to false when a listed session vanished before it was read, or
        (stores without a change token) when a second listing differs from the first.
        """
        plan = self.plan_work()
        stale = plan.stale
        # Smallest logs first: one huge log that needs several searches' deadlines to read
        # never holds the rest of the history back.
        stale.sort(key=_stored_size)
        if stale:
            with self.access.hold(self.cancel) as conn:  # other processes see the build's size
                conn.execute(
                    "UPDATE main.search_state SET build_done = ?, build_total = ?",
                    (plan.total - len(stale), plan.total),
                )
        if self.progress is not None and stale:
            self.progress(0, len(stale))
        batch: list[tuple[tuple[int, str] | None, DocumentLog]] = []
        batch_documents = batch_text = 0
        started = time.monotonic()
        for done, (entry, row) in enumerate(stale, 1):
            if self.cancel is not None and self.cancel.expired:
                self._flush(batch, len(stale) - done + 1, final=False)  # within the grace
                check_cancel(self.cancel)
            try:
                document_log = _read(self.corpus, entry, self.cancel)
            except SessionQueryError as exc:
                if exc.code is ErrorCode.SESSION_NOT_FOUND:
                    # Deleted since it was listed: the moved token (or, without one, the
                    # settling check below) brings the reconciliation back to drop it.
                    self.settled = False
                    continue
                if exc.code is ErrorCode.ABORTED:  # keep what was read, within the grace
                    self._flush(batch, len(stale) - done + 1, final=False)
                raise
            size = _text_size(document_log)
            hurried = self.cancel is not None and self.cancel.deadline is not None
            text_limit = DEADLINE_BATCH_TEXT if hurried else BATCH_TEXT  # (may be set late)
            batch.append((row, document_log))
            batch_documents += len(document_log.documents)
            batch_text += size
            if (
                batch_documents >= BATCH_DOCUMENTS
                or batch_text >= text_limit
                or time.monotonic() - started >= BATCH_SECONDS
            ):
                self._flush(batch, len(stale) - done, final=False)
                batch, batch_documents, batch_text, started = [], 0, 0, time.monotonic()
            if self.progress is not None:
                self.progress(done, len(stale))
        self._flush(batch, 0, final=False)
        if stale and self.raw_token is None and plan.listing is not None and self.settled:
            # Without a change token only a second listing can tell whether the store moved
            # while it was read (with one, the token recorded below is the one read first).
            again = {p.header.id: p for p in self.corpus.list_persisted(self.cancel)}
            self.settled = same_listing(plan.listing, again, self.live_ids)
        self._flush([], 0, final=True)

    def _flush(
        self,
        batch: list[tuple[tuple[int, str] | None, DocumentLog]],
        remaining: int,
        *,
        final: bool,
    ) -> None:
        """Write ``batch`` in one transaction, interrupted (and rolled back) once the token
        expired more than :data:`WRITE_GRACE_SECONDS` ago."""
        plan = self.plan
        if not batch and not final:
            return
        with self.access.hold(_write_token(self.cancel)) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._write(conn, batch, remaining, final=final)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.set_progress_handler(None, 0)  # the rollback itself must not abort
                    conn.execute("ROLLBACK")
                raise
        self.indexed += len(batch)
        self.documents += self._written
        if final:
            self.state.deferred = frozenset(plan.deferred)

    def _write(
        self,
        conn: db.Connection,
        batch: list[tuple[tuple[int, str] | None, DocumentLog]],
        remaining: int,
        *,
        final: bool,
    ) -> None:
        plan = self.plan
        (generation,) = db.one(conn, "SELECT global_generation FROM main.search_state")
        if type(generation) is not int:
            # Bytes damaged inside the index file: INDEX_FAILED, never a raw error.
            raise db.Damaged("main.search_state holds a damaged generation")
        generation += 1
        self._written = 0
        for row, document_log in batch:
            self._written += self._write_session(conn, row, document_log, generation)
        changed = bool(batch)
        if final:
            for key in plan.removed:
                DURABLE.delete_key(conn, key)
                TITLES.delete_key(conn, key)
                conn.execute("DELETE FROM main.persisted_sessions WHERE key = ?", (key,))
            changed = changed or bool(plan.removed)
            token = None if plan.deferred else self.token
            conn.execute("UPDATE main.search_state SET token = ?, completed = 1", (token,))
        if changed:
            conn.execute("UPDATE main.search_state SET global_generation = ?", (generation,))
        conn.execute(
            "UPDATE main.search_state SET build_done = ?, build_total = ?",
            (max(plan.total - remaining, 0), plan.total),
        )

    def _write_session(
        self,
        conn: db.Connection,
        row: tuple[int, str] | None,
        document_log: DocumentLog,
        generation: int,
    ) -> int:
        header = document_log.header
        values = (
            header.created_at,
            header.cwd,
            header.parent_session,
            _header_json(document_log),
            document_log.revision,
            generation,
        )
        if row is None:
            existing = conn.execute(
                "SELECT key FROM main.persisted_sessions WHERE id = ?", (header.id,)
            ).fetchone()
            if existing is not None:  # indexed meanwhile by an earlier, interrupted pass
                row = (int(existing[0]), "")
        if row is None:
            conn.execute(
                "INSERT INTO main.persisted_sessions (created_at, cwd, parent_session, "
                "header_json, revision, generation, id) VALUES (?,?,?,?,?,?,?)",
                (*values, header.id),
            )
            key = conn.last_insert_rowid()
            rows = document_rows(key, document_log.documents)
            _fits_before_deadline(self.cancel, max((len(row[1]) for row in rows), default=0))
            DURABLE.insert(conn, rows)
            titles = document_rows(key, document_log.titles)
            TITLES.insert(conn, titles)
            return len(rows) + len(titles)
        key = row[0]
        conn.execute(
            "UPDATE main.persisted_sessions SET created_at = ?, cwd = ?, parent_session = ?, "
            "header_json = ?, revision = ?, generation = ? WHERE key = ?",
            (*values, key),
        )
        rows = document_rows(key, document_log.documents)
        written = _rewrite(
            conn, DURABLE, key, rows, lambda chars: _fits_before_deadline(self.cancel, chars)
        )
        return written + _rewrite(conn, TITLES, key, document_rows(key, document_log.titles))


def _rewrite(
    conn: db.Connection,
    tables: DocTables,
    key: int,
    rows: list[Row],
    before: Callable[[int], None] | None = None,
) -> int:
    """Write only the difference between the stored rows of ``key`` in ``tables`` and ``rows``.

    An appended log keeps its earlier documents untouched (no re-tokenising); documents whose
    surface class changed are updated in place. ``before`` is called with the length of the
    longest text to be tokenised (inserted, or deleted from the FTS5 index) before any is.
    """
    existing = {
        int(rid): (str(text), str(kind), int(time), str(surface))
        for rid, text, kind, time, surface in conn.execute(
            f"SELECT id, text, type, time, surface FROM {tables.rows} WHERE id BETWEEN ? AND ?",
            key_range(key),
        )
    }
    inserts: list[Row] = []
    deletes: list[tuple[int]] = []
    updates: list[tuple[str, int]] = []
    longest = 0  # the longest text FTS5 tokenises here (deleting a row re-tokenises it)
    for row in rows:
        old = existing.pop(row[0], None)
        if old is None:
            inserts.append(row)
            longest = max(longest, len(row[1]))
        elif old[:3] != (row[1], row[2], row[3]):
            deletes.append((row[0],))
            inserts.append(row)
            longest = max(longest, len(row[1]), len(old[0]))
        elif old[3] != row[4]:
            updates.append((row[4], row[0]))
    deletes.extend((rid,) for rid in existing)
    longest = max([longest, *(len(old[0]) for old in existing.values())])
    if before is not None:
        before(longest)
    tables.delete_ids(conn, deletes)
    conn.executemany(f"UPDATE {tables.rows} SET surface = ? WHERE id = ?", updates)
    tables.insert(conn, inserts)
    return len(inserts) + len(updates)


def same_listing(
    first: dict[str, PersistedSession], second: dict[str, PersistedSession], ignore: frozenset[str]
) -> bool:
    keys = set(first) - ignore
    if keys != set(second) - ignore:
        return False
    return all(
        first[sid].revision == second[sid].revision and first[sid].header == second[sid].header
        for sid in keys
    )
