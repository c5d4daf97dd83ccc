"""The live-first corpus: every session the query service can see, and how one is loaded.

A session that is live in the store is read from memory and persistence is never consulted
for it. Any other session comes from the persistence: its listing entry (``stat``), then a
cold read (``open_read`` + ``read()``) with the crash-tail closers of
:func:`~sessionquery.model.interrupted_turn_closers` appended **in memory only**. Cold reads
go through the prepared cache (:mod:`sessionquery.query.cache`), validated by (persistence
identity, revision). A session that becomes live while it is being read cold is returned
live. The listed header and the read header of one id must be compatible
(:meth:`SessionHeader.is_compatible`), as must a live and a persisted header of one id;
otherwise ``SOURCE_CONFLICT``.

Foreign errors are mapped here, where they enter: ``PersistenceNotFound`` →
``SESSION_NOT_FOUND``, ``PersistenceCorrupt`` → ``CORRUPT_SESSION``, any other storage
failure → ``PERSISTENCE_FAILED``.

Stores change while they are observed (other processes create, append to and delete
sessions). An observation that must be consistent and found the store changing underneath it
is retried with bounded, growing pauses inside the caller's deadline (:func:`settle_attempts`);
if it still cannot settle, the answer is the retryable ``BUSY`` (:func:`busy`), never
``PERSISTENCE_FAILED``, which is kept for a store that really cannot be read.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Protocol

from sessionquery.errors import (
    ErrorCode,
    PersistenceCorrupt,
    PersistenceNotFound,
    SessionQueryError,
)
from sessionquery.model import (
    SessionEvent,
    SessionHeader,
    TitleSnapshot,
    fold_title,
    interrupted_turn_closers,
    validate_session_id,
)
from sessionquery.model.surface import SurfaceError
from sessionquery.persistence.base import (
    ChangeJournal,
    ChangeTokenSource,
    DocumentLog,
    DocumentSource,
    NewestListing,
    PersistedSession,
    ReadHandle,
    SessionPersistence,
    SkeletonHandle,
    TextDocument,
    TitleSource,
)
from sessionquery.persistence.documents import checking, event_documents, title_documents
from sessionquery.query.backend import LiveSnapshot
from sessionquery.query.cache import PreparedCache
from sessionquery.query.cancel import CancelToken, check_cancel
from sessionquery.query.filters import IdIn
from sessionquery.query.outline import OutlinedLog
from sessionquery.query.prepared import PreparedLog
from sessionquery.query.types import SessionLog, SessionRecord

__all__ = [
    "SETTLE_BUDGET_S",
    "LiveSession",
    "LiveStore",
    "ServiceCorpus",
    "busy",
    "documents_of",
    "mapped",
    "not_found",
    "settle_attempts",
]

SETTLE_BUDGET_S = 2.0
"""The longest a changing store is retried when the caller has no earlier deadline."""

_FIRST_PAUSE_S = 0.005
_LONGEST_PAUSE_S = 0.2

# Whatever a persistence raises is foreign (SPEC §6 "any other storage failure"): beyond our
# own Persistence*/OSError/ValueError, a third-party store may raise anything, and the
# service promises callers only SessionQueryError for failures of the corpus.
_STORAGE_ERRORS = (Exception,)


class LiveSession(Protocol):
    """What the corpus reads of a live session (:class:`sessionquery.live.Session`)."""

    @property
    def id(self) -> str: ...

    @property
    def header(self) -> SessionHeader: ...

    @property
    def inherited_event_count(self) -> int: ...

    @property
    def events(self) -> Sequence[SessionEvent]: ...


class LiveStore(Protocol):
    """What the corpus reads of the live store (:class:`sessionquery.live.SessionStore`)."""

    def get(self, session_id: str) -> LiveSession | None: ...

    def sessions(self) -> Sequence[LiveSession]: ...


def not_found(session_id: str) -> SessionQueryError:
    """The ``SESSION_NOT_FOUND`` error for ``session_id``."""
    return SessionQueryError(ErrorCode.SESSION_NOT_FOUND, f"session {session_id!r} not found")


def busy(what: str, attempts: int) -> SessionQueryError:
    """The retryable ``BUSY`` error: ``what`` kept changing through ``attempts`` observations."""
    return SessionQueryError(
        ErrorCode.BUSY,
        f"{what} kept changing while it was read ({attempts} attempts); try again shortly",
        context={"attempts": attempts},
    )


def settle_attempts(cancel: CancelToken | None, budget_s: float = SETTLE_BUDGET_S) -> Iterator[int]:
    """Attempt numbers (1, 2, ...) for observing a store that may change underneath.

    The first two attempts follow each other at once; later ones after pauses that double
    from 5 ms up to 200 ms. Attempts stop when the next pause would end past the caller's
    deadline or past ``budget_s`` from now, whichever is first; the caller then raises
    :func:`busy`. Cancellation is checked before every attempt (``ABORTED``).
    """
    start = time.monotonic()
    give_up = start + budget_s
    if cancel is not None and cancel.deadline is not None:
        give_up = min(give_up, cancel.deadline)
    pause = _FIRST_PAUSE_S
    attempt = 1
    while True:
        check_cancel(cancel)
        yield attempt
        if attempt >= 2:
            if time.monotonic() + pause >= give_up:
                return
            # A pause between observations of a store another process is changing; not a
            # synchronisation with anything of ours.
            time.sleep(pause)
            pause = min(pause * 2, _LONGEST_PAUSE_S)
        attempt += 1


def _conflict(session_id: str, what: str) -> SessionQueryError:
    return SessionQueryError(
        ErrorCode.SOURCE_CONFLICT,
        f"session {session_id!r} has incompatible headers in {what}",
    )


def _checking(cancel: CancelToken | None) -> AbstractContextManager[None]:
    """``cancel`` checked inside a long listing or read of the persistence, not only between
    calls (:func:`~sessionquery.persistence.documents.checking`)."""
    return checking(None if cancel is None else cancel.check)


@contextmanager
def _closed_on_failure(handle: ReadHandle) -> Iterator[None]:
    """Close ``handle`` when the block fails; the block's own failure is the one worth
    reporting, so a failure to close then is dropped."""
    try:
        yield
    except BaseException:
        with suppress(*_STORAGE_ERRORS):
            handle.close()
        raise


@contextmanager
def mapped(session_id: str, action: str) -> Iterator[None]:
    """Translate storage exceptions raised inside the block into ``SessionQueryError``."""
    try:
        yield
    except SessionQueryError:
        raise
    except PersistenceNotFound:
        raise not_found(session_id) from None
    except PersistenceCorrupt as error:
        raise SessionQueryError(
            ErrorCode.CORRUPT_SESSION, f"stored session {session_id!r} is corrupt: {error}"
        ) from error
    except _STORAGE_ERRORS as error:
        raise SessionQueryError(
            ErrorCode.PERSISTENCE_FAILED,
            f"failed to {action} stored session {session_id!r}: {error}",
        ) from error


@contextmanager
def _listing(cancel: CancelToken | None) -> Iterator[None]:
    """A listing read of the persistence, ``cancel`` checked inside it; a failure is
    ``PERSISTENCE_FAILED`` (the deadline's ``ABORTED`` passes as it is)."""
    try:
        with _checking(cancel):
            yield
    except _STORAGE_ERRORS as error:
        if isinstance(error, SessionQueryError) and error.code is ErrorCode.ABORTED:
            raise  # the deadline, checked inside a long listing
        raise SessionQueryError(
            ErrorCode.PERSISTENCE_FAILED, f"session persistence listing failed: {error}"
        ) from error


def _storable(session_id: object) -> bool:
    """Whether a session could have this id (anything else is in no store's listing)."""
    try:
        validate_session_id(session_id)
    except ValueError:
        return False
    return True


class ServiceCorpus:
    """The query service's corpus; implements :class:`sessionquery.query.backend.Corpus`.

    Args:
        store: the live store, or ``None``.
        persistence: the durable store, or ``None``.
        cache: the prepared cold-read cache shared by every read of the service.
        outlines: the cache of outlined logs (each holding its read handle), or ``None`` for
            one of the default size.
    """

    def __init__(
        self,
        store: LiveStore | None,
        persistence: SessionPersistence | None,
        cache: PreparedCache[PreparedLog],
        outlines: PreparedCache[OutlinedLog] | None = None,
    ) -> None:
        self._store = store
        self._persistence = persistence
        self._cache = cache
        self._outlines = outlines or PreparedCache(cache.capacity, discard=OutlinedLog.close)

    # -- the Corpus protocol -------------------------------------------------------------

    @property
    def persistence(self) -> SessionPersistence | None:
        """The bound persistence, or ``None``."""
        return self._persistence

    def live_ids(self) -> frozenset[str]:
        """Ids of the sessions live right now."""
        if self._store is None:
            return frozenset()
        return frozenset(session.id for session in self._store.sessions())

    def live_headers(self) -> list[SessionHeader]:
        """The header of every live session."""
        return [] if self._store is None else [s.header for s in self._store.sessions()]

    def live_snapshots(self) -> list[LiveSnapshot]:
        """Every live session, each cut at its current length."""
        if self._store is None:
            return []
        return [
            LiveSnapshot(session.header, session.inherited_event_count, session.events)
            for session in self._store.sessions()
        ]

    def list_persisted(self, cancel: CancelToken | None = None) -> list[PersistedSession]:
        """The persistence listing (empty without persistence).

        Raises:
            SessionQueryError: ``PERSISTENCE_FAILED`` or ``ABORTED``.
        """
        check_cancel(cancel)
        if self._persistence is None:
            return []
        with _listing(cancel):
            listing = list(self._persistence.list())
        check_cancel(cancel)
        return listing

    def persisted_entries(
        self, ids: Sequence[str], cancel: CancelToken | None = None
    ) -> list[PersistedSession]:
        """The listing entries of those of ``ids`` that are persisted (no promised order).

        A persistence that pages its listing itself (``NewestListing``, the PostgreSQL store)
        is asked for these ids only, one indexed query, where :meth:`list_persisted` would
        read every header; any other is listed (an id no session can have is simply absent).

        Raises:
            SessionQueryError: ``PERSISTENCE_FAILED`` or ``ABORTED``.
        """
        persistence = self._persistence
        wanted = list(dict.fromkeys(i for i in ids if _storable(i)))
        if not isinstance(persistence, NewestListing):
            chosen = set(wanted)
            return [entry for entry in self.list_persisted(cancel) if entry.header.id in chosen]
        check_cancel(cancel)
        if not wanted:
            return []
        with _listing(cancel):
            entries = persistence.list_newest([IdIn(tuple(wanted))], after=None, limit=len(wanted))
        check_cancel(cancel)
        return entries

    def read_persisted(self, session_id: str, cancel: CancelToken | None = None) -> SessionLog:
        """A cold read of one persisted log (crash-tail closers appended in memory).

        A prepared copy already in the cache is reused, but a miss is not added to it: a
        backend indexing the whole store would otherwise push out the logs being read.

        Raises:
            SessionQueryError: ``SESSION_NOT_FOUND``, ``CORRUPT_SESSION``,
                ``PERSISTENCE_FAILED``, ``SOURCE_CONFLICT`` or ``ABORTED``.
        """
        with self.persisted_log(session_id, None, cancel, remember=False) as log:
            return SessionLog(log.header, log.inherited_event_count, tuple(log.events))

    def change_token(self) -> str | None:
        """The persistence's store-wide change token, or ``None`` if it offers none.

        Raises:
            SessionQueryError: ``PERSISTENCE_FAILED`` when the token cannot be read.
        """
        persistence = self._persistence
        if not isinstance(persistence, ChangeTokenSource):
            return None
        try:
            token = persistence.change_token()
        except _STORAGE_ERRORS as error:
            raise SessionQueryError(
                ErrorCode.PERSISTENCE_FAILED, f"session persistence change token failed: {error}"
            ) from error
        return None if token is None else str(token)

    # -- what search indexing reads -------------------------------------------------------

    def stat_persisted(
        self, session_id: str, cancel: CancelToken | None = None
    ) -> PersistedSession | None:
        """One persisted session's listing entry, or ``None`` when it is not stored.

        Raises:
            SessionQueryError: ``PERSISTENCE_FAILED``, ``CORRUPT_SESSION`` or ``ABORTED``.
        """
        check_cancel(cancel)
        if self._persistence is None:
            return None
        with mapped(session_id, "look up"), _checking(cancel):
            return self._persistence.stat(session_id)

    def changed_since(self, token: str) -> frozenset[str] | None:
        """Ids of the persisted sessions changed since ``token``, or ``None`` when unknown.

        ``None`` also when the persistence keeps no change journal or its journal fails: the
        caller then lists in full. Read the new token (:meth:`change_token`) before this.
        """
        persistence = self._persistence
        if not isinstance(persistence, ChangeJournal):
            return None
        try:
            changed = persistence.changed_since(token)
        except _STORAGE_ERRORS:
            return None  # cannot tell: the full listing is always right
        return None if changed is None else frozenset(changed)

    def read_documents(self, session_id: str, cancel: CancelToken | None = None) -> DocumentLog:
        """The searchable documents of one persisted log (crash-tail closers included).

        Uses the persistence's :class:`DocumentSource` capability when it has one, else a cold
        read folded here; both give the same documents for a valid log.

        Raises:
            SessionQueryError: ``SESSION_NOT_FOUND``, ``CORRUPT_SESSION``,
                ``PERSISTENCE_FAILED`` or ``ABORTED``.
        """
        check_cancel(cancel)
        persistence = self._persistence
        if persistence is None:
            raise not_found(session_id)
        if isinstance(persistence, DocumentSource):
            with mapped(session_id, "read"), _checking(cancel):
                return persistence.read_documents(session_id)
        with mapped(session_id, "look up"), _checking(cancel):
            listed = persistence.stat(session_id)
        if listed is None:
            raise not_found(session_id)
        log = self.read_persisted(session_id, cancel)
        return DocumentLog(
            log.session,
            listed.revision,
            len(log.events),
            documents_of(session_id, log.events),
            title_documents(log.events),
            title=fold_title(log.events),
            title_read=True,
        )

    # -- service-side reads --------------------------------------------------------------

    def live_log(self, session_id: str) -> PreparedLog | None:
        """The live session ``session_id`` as a prepared log, or ``None`` if it is not live."""
        session = None if self._store is None else self._store.get(session_id)
        if session is None:
            return None
        return PreparedLog(session.header, session.inherited_event_count, session.events, live=True)

    def records(self, cancel: CancelToken | None = None) -> list[SessionRecord]:
        """Every session, newest ``created_at`` first, ties by id; no log is read.

        Raises:
            SessionQueryError: ``PERSISTENCE_FAILED``, ``SOURCE_CONFLICT`` or ``ABORTED``.
        """
        check_cancel(cancel)
        by_id: dict[str, SessionRecord] = {}
        for entry in self.list_persisted(cancel):
            header = entry.header
            seen = by_id.get(header.id)
            if seen is not None and not seen.header.is_compatible(header):
                raise _conflict(header.id, "the persistence listing")
            by_id[header.id] = SessionRecord(
                header, live=False, persisted=True, archived=entry.archived
            )
        if self._store is not None:
            for session in self._store.sessions():
                header = session.header
                listed = by_id.get(header.id)
                if listed is not None and not listed.header.is_compatible(header):
                    raise _conflict(header.id, "the live store and the persistence")
                by_id[header.id] = SessionRecord(
                    header,
                    live=True,
                    persisted=listed is not None,
                    archived=listed is not None and listed.archived,
                )
        check_cancel(cancel)
        return sorted(by_id.values(), key=lambda record: (-record.header.created_at, record.id))

    @contextmanager
    def open_log(self, session_id: str, cancel: CancelToken | None = None) -> Iterator[PreparedLog]:
        """Load one session live-first; the log stays pinned in the cache inside the block.

        Raises:
            SessionQueryError: ``SESSION_NOT_FOUND``, ``CORRUPT_SESSION``,
                ``PERSISTENCE_FAILED``, ``SOURCE_CONFLICT`` or ``ABORTED``.
        """
        check_cancel(cancel)
        live = self.live_log(session_id)
        if live is not None:
            yield live
            return
        if self._persistence is None:
            raise not_found(session_id)
        with self.persisted_log(session_id, None, cancel) as log:
            # The session may have gone live while we read it cold: live wins.
            yield self.live_log(session_id) or log

    @contextmanager
    def persisted_log(
        self,
        session_id: str,
        listed: PersistedSession | None,
        cancel: CancelToken | None = None,
        *,
        remember: bool = True,
    ) -> Iterator[PreparedLog]:
        """Read one persisted log through the prepared cache; pinned inside the block.

        Args:
            session_id: the id to read.
            listed: its listing entry when the caller already has one; else ``stat`` is used.
            cancel: checked before the listing, before and after the cold read.
            remember: whether a freshly read log is added to the cache.

        Raises:
            SessionQueryError: ``SESSION_NOT_FOUND``, ``CORRUPT_SESSION``,
                ``PERSISTENCE_FAILED``, ``SOURCE_CONFLICT`` or ``ABORTED``.
        """
        check_cancel(cancel)
        persistence = self._persistence
        if persistence is None:
            raise not_found(session_id)
        if listed is None:
            with mapped(session_id, "look up"), _checking(cancel):
                listed = persistence.stat(session_id)
            if listed is None:
                raise not_found(session_id)
        if listed.header.id != session_id:
            raise _conflict(session_id, "the persistence listing (the listed id differs)")
        slot = self._cache.acquire(session_id, persistence, listed.revision)
        if slot is None:
            check_cancel(cancel)
            with _checking(cancel):
                log = self._cold_read(persistence, session_id)
            if not remember:
                self._check_listed(listed, log)
                check_cancel(cancel)
                yield log
                return
            slot = self._cache.insert(session_id, persistence, listed.revision, log)
        try:
            self._check_listed(listed, slot.log)
            check_cancel(cancel)
            yield slot.log
        finally:
            self._cache.release(slot)

    @contextmanager
    def outlined_log(
        self, session_id: str, cancel: CancelToken | None = None
    ) -> Iterator[OutlinedLog]:
        """Load one session live-first for outlines and windows; pinned inside the block.

        A persisted log already prepared (read whole) is outlined from its events; else one
        whose store gives skeletons is outlined from them (and kept, with its read handle, in
        the outline cache); else it is read whole through :meth:`persisted_log`.

        Raises:
            SessionQueryError: as :meth:`open_log`.
        """
        check_cancel(cancel)
        live = self.live_log(session_id)
        if live is not None:
            yield live.outlined(None)
            return
        persistence = self._persistence
        if persistence is None:
            raise not_found(session_id)
        with mapped(session_id, "look up"), _checking(cancel):
            listed = persistence.stat(session_id)
        if listed is None:
            raise not_found(session_id)
        with self._cached(session_id, persistence, listed) as prepared:
            if prepared is not None:
                yield self._live_instead(session_id) or prepared.outlined(listed.revision)
                return
        slot = self._outlines.acquire(session_id, persistence, listed.revision)
        if slot is None:
            check_cancel(cancel)
            with _checking(cancel):
                outlined = self._outline_read(persistence, session_id, listed.revision)
            if outlined is None:  # the store cannot outline: read it whole
                with self.persisted_log(session_id, listed, cancel) as log:
                    yield self._live_instead(session_id) or log.outlined(listed.revision)
                return
            slot = self._outlines.insert(session_id, persistence, listed.revision, outlined)
        try:
            if not listed.header.is_compatible(slot.log.header):
                raise _conflict(session_id, "the persistence listing and the stored log")
            check_cancel(cancel)
            yield self._live_instead(session_id) or slot.log
        finally:
            self._outlines.release(slot)

    def _live_instead(self, session_id: str) -> OutlinedLog | None:
        """The session as live, when it went live while it was read cold (live wins)."""
        live = self.live_log(session_id)
        return None if live is None else live.outlined(None)

    @staticmethod
    def _outline_read(
        persistence: SessionPersistence, session_id: str, revision: str
    ) -> OutlinedLog | None:
        """An outlined log read through a handle that gives skeletons, else ``None``."""
        with mapped(session_id, "read"):
            handle = persistence.open_read(session_id)
            if not isinstance(handle, SkeletonHandle):
                handle.close()
                return None
            with _closed_on_failure(handle):
                return OutlinedLog.of_handle(handle, revision=revision)

    def persisted_title(
        self, session_id: str, listed: PersistedSession, cancel: CancelToken | None = None
    ) -> tuple[SessionHeader, TitleSnapshot | None]:
        """The header and title of one persisted log: from the prepared cache when it holds
        the log, else through the persistence's own title read (:class:`TitleSource`, bounded
        memory whatever the log's size) when it has one, else from a cold read.

        Raises:
            SessionQueryError: as :meth:`persisted_log`.
        """
        check_cancel(cancel)
        persistence = self._persistence
        if persistence is None:
            raise not_found(session_id)
        with self._cached(session_id, persistence, listed) as prepared:
            if prepared is not None:
                return prepared.header, prepared.title()
        if isinstance(persistence, TitleSource):
            with mapped(session_id, "read"), _checking(cancel):
                header, title = persistence.read_title(session_id)
            if not listed.header.is_compatible(header):
                raise _conflict(session_id, "the persistence listing and the stored log")
            check_cancel(cancel)
            return header, title
        with self.persisted_log(session_id, listed, cancel) as log:
            return log.header, log.title()

    @contextmanager
    def _cached(
        self, session_id: str, persistence: SessionPersistence, listed: PersistedSession
    ) -> Iterator[PreparedLog | None]:
        """The log ``listed`` names when the prepared cache holds it, pinned inside the block,
        else ``None``; ``SOURCE_CONFLICT`` when the listing names another id or log."""
        if listed.header.id != session_id:
            raise _conflict(session_id, "the persistence listing (the listed id differs)")
        slot = self._cache.acquire(session_id, persistence, listed.revision)
        if slot is None:
            yield None
            return
        try:
            self._check_listed(listed, slot.log)
            yield slot.log
        finally:
            self._cache.release(slot)

    @staticmethod
    def _check_listed(listed: PersistedSession, log: PreparedLog) -> None:
        if not listed.header.is_compatible(log.header):
            raise _conflict(log.session_id, "the persistence listing and the stored log")

    @staticmethod
    def _cold_read(persistence: SessionPersistence, session_id: str) -> PreparedLog:
        with mapped(session_id, "read"):
            handle = persistence.open_read(session_id)
            with _closed_on_failure(handle):
                header = handle.header
                inherited = handle.inherited_event_count
                stored = handle.read()
            handle.close()
        closers = interrupted_turn_closers(stored)
        events = tuple(stored) + tuple(closers) if closers else tuple(stored)
        return PreparedLog(header, inherited, events, live=False)


def documents_of(session_id: str, events: Sequence[SessionEvent]) -> list[TextDocument]:
    """The searchable documents of a whole log (events with non-empty text, seq order).

    Raises:
        SessionQueryError: ``CORRUPT_SESSION`` when the log does not fold.
    """
    try:
        return event_documents(events)
    except SurfaceError as error:
        raise SessionQueryError(
            ErrorCode.CORRUPT_SESSION, f"stored session {session_id!r} is corrupt: {error}"
        ) from None
