"""``SqliteSearch``: the SQLite FTS5 search backend (SPEC §7, shared by processes §13.2).

Any number of ``SqliteSearch`` instances, in any number of processes, open one index path at
once (SQLite WAL). Each instance has one connection, used for a short while at a time (one
query, one batch of writes), and one reconciliation at a time; durable writes are serialised
across processes by the index's write lock (:class:`.schema.WriteLock`, ``flock`` on
``<realpath>.lock``), held only while a reconciliation writes. Identity and lock follow the
real path, so a symlinked path shares them. Every search

1. refuses at once when the backend is configured ``open_at="never"`` (``SEARCH_DISABLED``)
   or the token is already cancelled (``ABORTED``);
2. validates the whole request (query, filters, limit, predicate budget, cursor shape);
3. waits for this instance's reconciliation turn (the wait honours ``cancel``), opens the
   index if needed and reconciles the index with the corpus (:mod:`.reconcile`): another
   process's reconciliation in progress is waited for, within the deadline;
4. checks the cursor's generation (``STALE_CURSOR``) and runs one ranked statement in one read
   transaction (a consistent snapshot of what was committed).

**A search during a build.** When the deadline comes while a build is unfinished (ours or
another process's: ``search_state`` records its progress), the search raises
``INDEX_BUILDING`` with ``context={"sessions_indexed": n, "sessions_total": m}`` instead of
``ABORTED``; every batch committed so far stays, and the next search continues the build.
Otherwise a search past its deadline raises ``ABORTED``. A search never serves results from
a half-reconciled corpus it knows about: it waits (within its deadline) or says why not,
unless it asked for a partial answer (``allow_partial``): then it stops reconciling early
enough to answer from what is committed, and says how much that is (``page.partial``).

One page is read by :class:`.pages.Pages`, in the search's read snapshot.

While a statement runs, an SQLite progress handler polls ``cancel``, so an expiring deadline
interrupts the statement (``ABORTED``) instead of waiting for it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Final, Literal

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model import SessionHeader
from sessionquery.query.backend import Corpus
from sessionquery.query.cancel import CancelToken, check_cancel
from sessionquery.query.types import (
    EventSearchHit,
    PartialIndex,
    SessionSearchHit,
)
from sessionquery.search.base import OpenAt, SearchBase, Window, not_indexed_yet
from sessionquery.search.cursor import CursorPosition, page_offset
from sessionquery.search.request import SearchRequest
from sessionquery.search.sqlite import db, relevance, schema
from sessionquery.search.sqlite.pages import Pages
from sessionquery.search.sqlite.query import (
    SQLITE_FILTERS,
    CompiledFilters,
)
from sessionquery.search.sqlite.reconcile import IndexState, reconcile
from sessionquery.search.update import IndexUpdate, ProgressCallback

__all__ = ["OpenAt", "SqliteSearch"]

JournalMode = Literal["wal", "delete", "truncate", "persist"]

_JOURNAL_MODES: Final = ("wal", "delete", "truncate", "persist")
PROGRESS_STEPS: Final = 1000
"""SQLite VM instructions between two polls of the cancel token during a statement."""
_LOCK_POLL_SECONDS: Final = 0.005
_WRITE_LOCK_POLL_SECONDS: Final = 0.01


def _config_error(message: str) -> SessionQueryError:
    return SessionQueryError(ErrorCode.INVALID_CONFIG, f"session-search SQLite config: {message}")


def _index_path(path: object) -> str:
    if not isinstance(path, str | os.PathLike):
        raise _config_error(f"path must be a string or path, not {type(path).__name__}")
    text = os.fspath(path)  # pyright: ignore[reportUnknownArgumentType]
    if not isinstance(text, str) or not text.strip() or "\x00" in text:
        raise _config_error("path must be a non-blank file path or ':memory:'")
    return text


class SqliteSearch(SearchBase[db.Connection]):
    """A derived SQLite FTS5 index over the corpus, usable as ``SessionQuery(search=...)``.

    Args:
        path: the index file (created ``0600``, parents ``0700``) or ``":memory:"``. Must be
            a dedicated file: a database that is not a sessionquery index is refused and left
            untouched.
        open_at: ``"startup"`` (open and validate now), ``"first-search"`` or ``"never"``
            (search disabled: every search raises ``SEARCH_DISABLED``).
        journal_mode: ``"wal"``, ``"delete"``, ``"truncate"`` or ``"persist"``.
        default_limit: page size when a search passes no ``limit``.
        max_limit: the largest accepted ``limit``.
        snippet_chars: maximum snippet length in code points.

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` for invalid arguments; ``INDEX_FAILED`` when
            ``open_at="startup"`` and the index cannot be opened (in use by another owner,
            not an index of ours, unreadable).
    """

    _FILTERS = SQLITE_FILTERS
    _DAMAGED_HEADER = (
        "session-search index holds a damaged session header; delete the index file to rebuild it"
    )

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        open_at: OpenAt = "startup",
        journal_mode: JournalMode = "wal",
        default_limit: int = 20,
        max_limit: int = 100,
        snippet_chars: int = 240,
    ) -> None:
        self._path = _index_path(path)
        if journal_mode not in _JOURNAL_MODES:
            raise _config_error(
                f"journal_mode must be one of {', '.join(_JOURNAL_MODES)}, not {journal_mode!r}"
            )
        super().__init__(
            open_at=open_at,
            default_limit=default_limit,
            max_limit=max_limit,
            snippet_chars=snippet_chars,
            config_error=_config_error,
        )
        self._journal_mode: JournalMode = journal_mode
        self._real = self._path if self._path == ":memory:" else os.path.realpath(self._path)
        self._turn = threading.Lock()
        """One reconciliation (and the query that follows it) at a time in this instance."""
        self._access = _Access(self)
        self._state = IndexState()
        if open_at == "startup":
            with self._lock:
                self._open()

    # -- lifecycle -------------------------------------------------------------------

    @property
    def path(self) -> str:
        """The index path as configured."""
        return self._path

    def _open(self) -> db.Connection:
        if self._conn is not None:
            return self._conn
        if self._real != ":memory:":
            try:
                schema.ensure_parent(Path(self._real))
            except OSError as exc:
                raise SessionQueryError(
                    ErrorCode.INDEX_FAILED,
                    f"session-search index {self._path!r} failed to open: {exc}",
                ) from exc
        conn = schema.open_index(self._real, self._journal_mode)
        relevance.install(conn)
        self._conn = conn
        return conn

    def _disconnect(self, conn: db.Connection) -> None:
        schema.close_quietly(conn)

    @contextmanager
    def _hold(self, cancel: CancelToken | None) -> Iterator[db.Connection]:
        """Exclusive use of the connection (opening it if needed) with ``cancel`` wired to
        SQLite; held for one statement group only."""
        self._check_open()
        _acquire(self._lock, cancel)
        try:
            self._check_open()
            check_cancel(cancel)
            conn = self._open()
            if cancel is not None:
                conn.set_progress_handler(lambda: cancel.expired, PROGRESS_STEPS)
            try:
                yield conn
            except (db.Error, UnicodeDecodeError) as exc:  # damaged text decodes badly
                check_cancel(cancel)
                raise SessionQueryError(
                    ErrorCode.INDEX_FAILED, f"session-search index query failed: {exc}"
                ) from exc
            finally:
                conn.set_progress_handler(None, 0)
        finally:
            self._lock.release()

    @contextmanager
    def _writing(self, cancel: CancelToken | None) -> Iterator[None]:
        """The index's cross-process write lock, waited for within ``cancel``'s deadline."""
        if self._real == ":memory:":
            with nullcontext():
                yield
            return
        lock = schema.WriteLock(Path(self._real))
        try:
            while not lock.try_acquire():
                check_cancel(cancel)
                time.sleep(_WRITE_LOCK_POLL_SECONDS)
        except OSError as exc:
            raise SessionQueryError(
                ErrorCode.INDEX_FAILED, f"session-search index lock failed: {exc}"
            ) from exc
        try:
            yield
        finally:
            lock.release()

    @contextmanager
    def _reconciled(
        self, corpus: Corpus, cancel: CancelToken | None, *, partial: bool = False
    ) -> Iterator[PartialIndex | None]:
        """Take this instance's turn and reconcile; the turn is held inside the block.

        A deadline that passes while a build is unfinished becomes ``INDEX_BUILDING``; with
        ``partial`` the reconciliation stops early enough to leave the search time to answer
        from the committed part instead, and the block receives how far the build is.
        """
        token = _reconcile_token(cancel) if partial else cancel
        try:
            _acquire(self._turn, token)
        except SessionQueryError as exc:
            progress = self._partial(exc, cancel, corpus) if partial else None
            if progress is None:
                raise self._building_or(exc, cancel, corpus) from None
            yield progress  # another thread is building: read what it committed
            return
        try:
            progress = None
            try:
                reconcile(self._access, self._state, corpus, token)
            except SessionQueryError as exc:
                progress = self._partial(exc, cancel, corpus) if partial else None
                if progress is None:
                    raise self._building_or(exc, cancel, corpus) from None
            yield progress
        finally:
            self._turn.release()

    def _partial(
        self, error: SessionQueryError, cancel: CancelToken | None, corpus: Corpus
    ) -> PartialIndex | None:
        """How far the unfinished build is, when ``error`` is the early stop of a partial
        search's reconciliation (its own deadline has not passed); else ``None``."""
        if error.code is not ErrorCode.ABORTED or cancel is None or cancel.expired:
            return None
        building = self._building_or(error, cancel, corpus)
        if not isinstance(building, SessionQueryError) or building.code is not (
            ErrorCode.INDEX_BUILDING
        ):
            return None
        context = building.context or {}
        done = context.get("sessions_indexed")
        total = context.get("sessions_total")
        return PartialIndex(
            int(done) if isinstance(done, int) else 0,
            int(total) if isinstance(total, int) else None,
        )

    def _building_or(
        self, error: SessionQueryError, cancel: CancelToken | None, corpus: Corpus
    ) -> Exception:
        """``INDEX_BUILDING`` for a deadline that passed during an unfinished build (or before
        the first one got to its first batch), else ``error`` unchanged."""
        if (
            error.code is not ErrorCode.ABORTED
            or cancel is None
            or cancel.cancelled
            or self._closed
            or corpus.persistence is None
        ):
            return error
        try:
            with self._hold(None) as conn:
                done, total, completed = db.one(
                    conn, "SELECT build_done, build_total, completed FROM main.search_state"
                )
        except SessionQueryError:
            return error
        if done >= total and completed:
            return error
        if not total:  # still listing: no honest count yet
            return SessionQueryError(
                ErrorCode.INDEX_BUILDING,
                "the history index is still being built (listing the sessions); try again shortly",
            )
        return SessionQueryError(
            ErrorCode.INDEX_BUILDING,
            f"the history index is still being built: {done:,} of {total:,} sessions; "
            "try again shortly",
            context={"sessions_indexed": int(done), "sessions_total": int(total)},
        )

    # -- the backend's part of the operations (the rest is SearchBase's) ----------------

    def _pages(self) -> Pages:
        """The page reader over this instance's state, header cache and snippet length."""
        return Pages(self._state, self._header, self._snippet_chars)

    def _update(
        self, corpus: Corpus, cancel: CancelToken | None, progress: ProgressCallback | None
    ) -> IndexUpdate:
        """One reconciliation (:mod:`.reconcile`), in this instance's turn."""
        self._check_open()
        _acquire(self._turn, cancel)
        try:
            return reconcile(self._access, self._state, corpus, cancel, progress)
        finally:
            self._turn.release()

    def _sessions(
        self,
        corpus: Corpus,
        request: SearchRequest,
        compiled: CompiledFilters,
        *,
        position: CursorPosition | None,
        cancel: CancelToken | None,
    ) -> Window[SessionSearchHit]:
        with (
            self._reconciled(corpus, cancel, partial=request.allow_partial) as partial,
            self._hold(cancel) as conn,
            _snapshot(conn),
        ):
            (durable,) = db.one(conn, "SELECT global_generation FROM main.search_state")
            state = self._state
            generation = f"{state.epoch}:{durable}:{state.live_generation}"
            offset = page_offset(position, generation)
            persisted = corpus.persistence is not None
            window = self._pages().session_page(
                conn, request, compiled, persisted, offset, generation, cancel
            )
        return replace(window, partial=partial)

    def _events(
        self,
        corpus: Corpus,
        session_id: str,
        request: SearchRequest,
        compiled: CompiledFilters,
        *,
        position: CursorPosition | None,
        cancel: CancelToken | None,
    ) -> tuple[SessionHeader, Window[EventSearchHit]]:
        with (
            self._reconciled(corpus, cancel, partial=request.allow_partial) as partial,
            self._hold(cancel) as conn,
            _snapshot(conn),
        ):
            pages = self._pages()
            try:
                live, key, header, generation = pages.target(conn, corpus, session_id)
            except SessionQueryError as exc:
                if partial is None or exc.code is not ErrorCode.SESSION_NOT_FOUND:
                    raise
                raise not_indexed_yet(partial) from None
            offset = page_offset(position, generation)
            window = pages.event_page(
                conn, request, compiled, live, key, session_id, offset, generation, cancel
            )
        return header, replace(window, partial=partial)


class _Access:
    """What reconciliation may use of a :class:`SqliteSearch` (:class:`.reconcile.IndexAccess`)."""

    __slots__ = ("_search",)

    def __init__(self, search: SqliteSearch) -> None:
        self._search = search

    def hold(self, cancel: CancelToken | None) -> AbstractContextManager[db.Connection]:
        return self._search._hold(cancel)  # pyright: ignore[reportPrivateUsage]

    def writing(self, cancel: CancelToken | None) -> AbstractContextManager[None]:
        return self._search._writing(cancel)  # pyright: ignore[reportPrivateUsage]


_PARTIAL_RESERVE_SECONDS: Final = 0.5
"""At most this much of a partial search's time is kept for answering (less when the whole
deadline is short: a third of what is left)."""


def _reconcile_token(cancel: CancelToken | None) -> CancelToken | None:
    """The token a partial search reconciles under: its own, minus the time it keeps to
    answer from the committed part."""
    if cancel is None or cancel.deadline is None:
        return cancel
    left = cancel.deadline - time.monotonic()
    return cancel.sooner(min(_PARTIAL_RESERVE_SECONDS, max(left, 0.0) / 3))


def _acquire(lock: threading.Lock, cancel: CancelToken | None) -> None:
    """Take ``lock``, polling ``cancel`` while waiting (``ABORTED`` when it expires)."""
    if cancel is None:
        lock.acquire()
        return
    while not lock.acquire(timeout=_LOCK_POLL_SECONDS):
        cancel.check()


@contextmanager
def _snapshot(conn: db.Connection) -> Iterator[None]:
    """One read transaction: every statement inside sees the same committed state."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        if conn.in_transaction:
            conn.set_progress_handler(None, 0)
            conn.execute("COMMIT")
