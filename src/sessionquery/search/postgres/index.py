"""``PostgresSearch``: the SPEC §7 search backend on PostgreSQL (SPEC §13.5).

One instance owns one connection and serialises its work behind one lock. Every search

1. refuses at once when disabled (``SEARCH_DISABLED``) or already cancelled (``ABORTED``);
2. validates the whole request (query, match mode, filters, limit, budgets, cursor);
3. brings the shared persisted index up to date (:meth:`PostgresSearch.update`): under a
   transaction-scoped advisory lock, so any number of processes share one index; by the
   store's change journal when it has one (only the changed sessions are read), else by
   comparing revisions with a listing; nothing at all when the change token is unchanged,
   and nothing either while another process is updating an already built index
   (:mod:`.sync`);
4. updates this process's live overlay (:mod:`.overlay`) and merges its hits with one ranked
   statement over the persisted documents (a session search of common words: the first of a
   few bounded ones that fills the page, :mod:`.walk`).

While statements run, a watcher thread cancels them on the server as soon as ``cancel``
expires (``ABORTED`` within a few tens of milliseconds); the running batch of an
interrupted update is rolled back (committed batches stay).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

import psycopg
from psycopg.pq import TransactionStatus

from sessionquery.errors import (
    ErrorCode,
    SessionQueryError,
)
from sessionquery.model import SessionHeader
from sessionquery.query.backend import Corpus
from sessionquery.query.cancel import CancelToken, check_cancel
from sessionquery.query.types import (
    EventSearchHit,
    PartialIndex,
    SessionRecord,
    SessionSearchHit,
)
from sessionquery.search.base import OpenAt, SearchBase, Window, not_indexed_yet
from sessionquery.search.bounded import is_long, phrases_of
from sessionquery.search.cursor import CursorPosition, page_offset
from sessionquery.search.postgres import schema, walk
from sessionquery.search.postgres.modes import ModeSearches
from sessionquery.search.postgres.overlay import LiveHit, LiveOverlay
from sessionquery.search.postgres.sql import (
    POSTGRES_FILTERS,
    CompiledFilters,
    event_search_sql,
    match_params,
)
from sessionquery.search.postgres.sync import sync_persisted
from sessionquery.search.postgres.tokens import (
    MatchPlan,
    first_match,
    match_plan,
    tokens,
)
from sessionquery.search.request import SearchRequest
from sessionquery.search.snippet import MATCH_MARK, snippet_from_highlight
from sessionquery.search.update import IndexUpdate, ProgressCallback

__all__ = ["PostgresSearch"]

_LOCK_POLL_SECONDS: Final = 0.005
_PARTIAL_RESERVE_SECONDS: Final = 0.5
"""At most this much of a partial search's time is kept for answering (a third of what is
left when that is less)."""
_WATCH_SECONDS: Final = 0.01


def _config_error(message: str) -> SessionQueryError:
    return SessionQueryError(
        ErrorCode.INVALID_CONFIG, f"session-search PostgreSQL config: {message}"
    )


class PostgresSearch(SearchBase[psycopg.Connection[Any]], ModeSearches):
    """A PostgreSQL full-text index over the corpus, usable as ``SessionQuery(search=...)``.

    The persisted part of the index lives in the database named by ``dsn`` and is shared by
    every process that uses it; keep one database (or schema, via ``search_path``) per corpus.

    Args:
        dsn: a libpq connection string or URI.
        open_at: ``"startup"`` (connect and create the tables now), ``"first-search"`` or
            ``"never"`` (every search raises ``SEARCH_DISABLED``).
        default_limit: page size when a search passes no ``limit``.
        max_limit: the largest accepted ``limit``.
        snippet_chars: maximum snippet length in code points.
        connect_timeout: seconds to wait for the server when connecting.

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` for invalid arguments; ``INDEX_FAILED`` when
            ``open_at="startup"`` and the server cannot be reached or refuses.
    """

    _FILTERS = POSTGRES_FILTERS

    def __init__(
        self,
        dsn: str,
        *,
        open_at: OpenAt = "startup",
        default_limit: int = 20,
        max_limit: int = 100,
        snippet_chars: int = 240,
        connect_timeout: float = 10.0,
    ) -> None:
        if not isinstance(dsn, str) or not dsn.strip():
            raise _config_error("dsn must be a non-empty connection string")
        super().__init__(
            open_at=open_at,
            default_limit=default_limit,
            max_limit=max_limit,
            snippet_chars=snippet_chars,
            config_error=_config_error,
        )
        self._dsn = dsn
        self._timeout = max(1, round(connect_timeout))
        self._overlay = LiveOverlay()
        self._binding: object = None
        self._token: str | None = None
        self._generation = 0
        self._cancel_sent = threading.Event()
        if open_at == "startup":
            with self._lock:
                self._open()

    # -- lifecycle -------------------------------------------------------------------

    def _open(self) -> psycopg.Connection[Any]:
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        self._binding, self._token = None, None  # a new connection re-checks the index
        try:
            # Never prepared: a prepared search gets a generic plan after a few runs, one that
            # knows neither the words nor the limit (a common word's bounded search, .walk,
            # cost 8 times more under it).
            conn = psycopg.connect(
                self._dsn,
                autocommit=True,
                connect_timeout=self._timeout,
                prepare_threshold=None,
            )
        except psycopg.Error as exc:
            raise SessionQueryError(
                ErrorCode.INDEX_FAILED, f"session-search PostgreSQL index cannot connect: {exc}"
            ) from exc
        try:
            # No JIT compilation: a search's expressions are short-lived, and compiling them
            # cost about 100 ms for every query the planner thought large (a relevance search
            # of common words ran 4-20 % slower with it on the real-size history).
            conn.execute("SET jit = off")
            with conn.transaction():
                schema.ensure_schema(conn)
                schema.tune_impact(conn)
        except psycopg.Error as exc:
            conn.close()
            raise SessionQueryError(
                ErrorCode.INDEX_FAILED, f"session-search PostgreSQL index failed to open: {exc}"
            ) from exc
        self._conn = conn
        return conn

    def _disconnect(self, conn: psycopg.Connection[Any]) -> None:
        conn.close()

    def __del__(self) -> None:
        # An index dropped without close() still hangs up its connection.
        conn = getattr(self, "_conn", None)
        if conn is not None:
            conn.close()

    @contextmanager
    def _connection(self, cancel: CancelToken | None) -> Iterator[psycopg.Connection[Any]]:
        """Hold the connection (opening it if needed), with ``cancel`` wired to the server."""
        self._check_open()
        if cancel is None:
            self._lock.acquire()
        else:
            while not self._lock.acquire(timeout=_LOCK_POLL_SECONDS):
                cancel.check()
        try:
            self._check_open()
            check_cancel(cancel)
            conn = self._open()
            self._cancel_sent.clear()
            try:
                with _watch(conn, cancel, self._cancel_sent):
                    yield conn
            except psycopg.Error as exc:
                check_cancel(cancel)
                raise SessionQueryError(
                    ErrorCode.INDEX_FAILED, f"session-search PostgreSQL query failed: {exc}"
                ) from exc
            finally:
                _hang_up_if_unsettled(conn, self._cancel_sent)
        finally:
            self._lock.release()

    # -- reconciliation ----------------------------------------------------------------

    def _update(
        self, corpus: Corpus, cancel: CancelToken | None, progress: ProgressCallback | None
    ) -> IndexUpdate:
        """Synchronise the shared index (:mod:`.sync`) and this process's live overlay."""
        with self._connection(cancel) as conn:
            return self._reconcile(conn, corpus, cancel, progress)

    def _reconcile(
        self,
        conn: psycopg.Connection[Any],
        corpus: Corpus,
        cancel: CancelToken | None,
        progress: ProgressCallback | None = None,
    ) -> IndexUpdate:
        persistence = corpus.persistence
        token = corpus.change_token() if persistence is not None else None
        snapshots = corpus.live_snapshots()
        indexed = removed = docs = 0
        skipped = True
        if persistence is not None and (
            persistence is not self._binding or token is None or token != self._token
        ):
            synced = sync_persisted(
                conn=conn,
                corpus=corpus,
                persistence=persistence,
                token=token,
                cancel=cancel,
                progress=progress,
            )
            self._generation = synced.generation
            indexed, removed, docs = synced.indexed, synced.removed, synced.documents
            self._binding, self._token = persistence, None if synced.busy else token
            skipped = False
        elif persistence is None:
            self._binding, self._token = None, None
        if (snapshots and (indexed or removed)) or not self._overlay.unchanged(snapshots):
            persisted: frozenset[str] = frozenset()
            if persistence is not None:
                live_ids = [snapshot.header.id for snapshot in snapshots]
                rows = conn.execute(
                    "SELECT id FROM sqi_sessions WHERE id = ANY(%s::text[])", (live_ids,)
                ).fetchall()
                persisted = frozenset(str(row[0]) for row in rows)
            live_indexed, live_removed = self._overlay.update(snapshots, persisted)
            return IndexUpdate(
                persisted_indexed=indexed,
                persisted_removed=removed,
                live_indexed=live_indexed,
                live_removed=live_removed,
                documents_written=docs,
            )
        if skipped:
            return IndexUpdate(skipped=True)
        return IndexUpdate(
            persisted_indexed=indexed, persisted_removed=removed, documents_written=docs
        )

    def _search_sync(
        self,
        conn: psycopg.Connection[Any],
        corpus: Corpus,
        cancel: CancelToken | None,
        allow_partial: bool,
    ) -> PartialIndex | None:
        """Reconcile before a search; with ``allow_partial``, stop early enough to answer
        from what is indexed when the store is still being indexed (how much: returned)."""
        if not allow_partial or cancel is None or cancel.deadline is None:
            self._reconcile(conn, corpus, cancel)
            return None
        left = cancel.deadline - time.monotonic()
        token = cancel.sooner(min(_PARTIAL_RESERVE_SECONDS, max(left, 0.0) / 3))
        try:
            with _watch(conn, token, self._cancel_sent):
                self._reconcile(conn, corpus, token)
        except SessionQueryError as exc:
            if exc.code is not ErrorCode.ABORTED or cancel.expired:
                raise
        except psycopg.errors.QueryCanceled:
            if cancel.expired or not token.expired:
                raise
        else:
            return None
        return PartialIndex(_indexed_sessions(conn), None)

    # -- one page of a search (the steps around it are SearchBase's) ---------------------

    def _sessions(
        self,
        corpus: Corpus,
        request: SearchRequest,
        compiled: CompiledFilters,
        *,
        position: CursorPosition | None,
        cancel: CancelToken | None,
    ) -> Window[SessionSearchHit]:
        sessions, events = request.session_filters, request.event_filters
        page_size = request.page_size
        if request.plan.ranked:
            return self._relevance_sessions(
                corpus, request, compiled, position=position, cancel=cancel
            )
        words = tokens(request.text)
        check_cancel(cancel)  # a long query's tokens took a while
        phrases = phrases_of(words, request.plan.words)
        if is_long(phrases):
            return self._long_sessions(corpus, words, phrases, request, compiled, position, cancel)
        plan = match_plan(request.text, request.plan.words)
        with self._connection(cancel) as conn:
            partial = self._search_sync(conn, corpus, cancel, request.allow_partial)
            generation = f"{self._generation}:{self._overlay.generation}"
            offset = page_offset(position, generation)
            ranked: list[tuple[tuple[Any, ...], object]] = []
            if plan is not None:
                live = self._overlay.best_per_session(plan, sessions, events)
                ranked = [(hit.session_key(), hit) for hit in live]
                start = offset if not live else 0
                if corpus.persistence is not None:
                    params = {
                        **compiled.params,
                        **match_params(plan),
                        "live": sorted(self._overlay.sessions),
                        "lim": offset + page_size + 1 - start,
                        "off": start,
                    }
                    rows = walk.ranked_sessions(conn, plan, compiled, params)
                    ranked += [((-r[6], r[5], -r[3], r[0], -r[1]), r) for r in rows]
                ranked.sort(key=lambda item: item[0])
                window = ranked[offset - start :]
            else:
                window = []
            hits = self._session_hits(conn, plan, [item for _key, item in window[:page_size]])
        return Window(hits, len(window) > page_size, generation, offset, partial=partial)

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
        events, page_size = request.event_filters, request.page_size
        if request.plan.ranked:
            return self._relevance_events(
                corpus, session_id, request, compiled, position=position, cancel=cancel
            )
        words = tokens(request.text)
        check_cancel(cancel)  # a long query's tokens took a while
        phrases = phrases_of(words, request.plan.words)
        if is_long(phrases):
            return self._long_events(
                corpus, session_id, words, phrases, request, compiled, position, cancel
            )
        plan = match_plan(request.text, request.plan.words)
        with self._connection(cancel) as conn:
            partial = self._search_sync(conn, corpus, cancel, request.allow_partial)
            live = self._overlay.sessions.get(session_id)
            if live is not None:
                header, generation = live.header, f"live:{live.generation}"
                offset = page_offset(position, generation)
                found = [] if plan is None else self._overlay.search(plan, live, events)
                window: list[Any] = found[offset : offset + page_size + 1]
                hits = [_live_event_hit(hit, self._snippet(plan, hit.doc.text)) for hit in window]
            else:
                header, generation = self._persisted_target(conn, corpus, session_id, partial)
                offset = page_offset(position, generation)
                window = []
                if plan is not None:
                    params = {
                        **compiled.params,
                        **match_params(plan),
                        "sid": session_id,
                        "lim": page_size + 1,
                        "off": offset,
                    }
                    window = conn.execute(event_search_sql(plan, compiled), params).fetchall()
                hits = [
                    EventSearchHit(
                        session_id=session_id,
                        seq=int(seq),
                        type=str(kind),
                        time=int(time),
                        surface=surface,
                        snippet=self._snippet(plan, str(text)),
                    )
                    for seq, kind, time, surface, _length, _mc, text in window[:page_size]
                ]
        return header, Window(
            hits[:page_size], len(window) > page_size, generation, offset, partial=partial
        )

    # -- helpers ---------------------------------------------------------------------

    def _persisted_target(
        self,
        conn: psycopg.Connection[Any],
        corpus: Corpus,
        session_id: str,
        partial: PartialIndex | None = None,
    ) -> tuple[SessionHeader, str]:
        """The header and generation of an indexed stored session; ``INDEX_BUILDING`` (not
        ``SESSION_NOT_FOUND``) for one an unfinished build (``partial``) has not reached."""
        if corpus.persistence is not None:
            row = conn.execute(
                "SELECT header_json, generation FROM sqi_sessions WHERE id = %s", (session_id,)
            ).fetchone()
            if row is not None:
                return self._header(str(row[0])), f"persisted:{row[1]}"
            if partial is not None:
                raise not_indexed_yet(partial)
        raise SessionQueryError(ErrorCode.SESSION_NOT_FOUND, f"session {session_id!r} not found")

    def _snippet(self, plan: MatchPlan | None, text: str) -> str:
        first = None if plan is None else first_match(text, plan)
        highlighted = text if first is None else text[:first] + MATCH_MARK + text[first:]
        return snippet_from_highlight(highlighted, self._snippet_chars)

    def _session_hits(
        self, conn: psycopg.Connection[Any], plan: MatchPlan | None, items: list[object]
    ) -> list[SessionSearchHit]:
        hits = []
        for item in items:
            if isinstance(item, LiveHit):
                session = item.session
                record = SessionRecord(session.header, live=True, persisted=session.persisted)
                best = _live_event_hit(item, self._snippet(plan, item.doc.text))
            else:
                row: tuple[Any, ...] = item  # type: ignore[assignment]
                sid, seq, kind, time, surface, _length, _mc, header_json, text = row
                record = SessionRecord(self._header(str(header_json)), live=False, persisted=True)
                best = EventSearchHit(
                    session_id=str(sid),
                    seq=int(seq),
                    type=str(kind),
                    time=int(time),
                    surface=surface,
                    snippet=self._snippet(plan, str(text)),
                )
            hits.append(SessionSearchHit(record=record, best_match=best))
        return hits


def _live_event_hit(hit: LiveHit, snippet: str) -> EventSearchHit:
    doc = hit.doc
    return EventSearchHit(
        session_id=hit.session.header.id,
        seq=doc.seq,
        type=doc.type,
        time=doc.time,
        surface=hit.surface,
        snippet=snippet,
    )


@contextmanager
def _watch(
    conn: psycopg.Connection[Any], cancel: CancelToken | None, sent: threading.Event
) -> Iterator[None]:
    """Cancel the running statement on the server as soon as ``cancel`` expires (``sent``
    is set once a cancel request went out)."""
    if cancel is None:
        yield
        return
    done = threading.Event()

    def watch() -> None:
        while not done.wait(_WATCH_SECONDS):
            if cancel.expired:
                sent.set()
                try:
                    conn.cancel_safe(timeout=1.0)
                except psycopg.Error:
                    pass
                return

    watcher = threading.Thread(target=watch, name="sessionquery-pg-cancel", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


def _indexed_sessions(conn: psycopg.Connection[Any]) -> int:
    """How many sessions the shared index holds, asked right after a reconciliation was
    cut short by its own cancel request.

    That request may have stopped the ``ROLLBACK`` which ended the cut-short transaction
    (psycopg only logs a failed rollback), leaving the connection in a failed transaction.
    The watcher that sent it has been joined, so the server holds the request by now; one
    that still lands on the count itself is answered by asking again."""
    try:
        return _count_sessions(conn)
    except psycopg.errors.QueryCanceled:
        return _count_sessions(conn)


def _count_sessions(conn: psycopg.Connection[Any]) -> int:
    if conn.info.transaction_status is TransactionStatus.INERROR:
        conn.rollback()
    row = conn.execute("SELECT count(*) FROM sqi_sessions").fetchone()
    return int(row[0]) if row else 0


def _hang_up_if_unsettled(conn: psycopg.Connection[Any], cancel_sent: threading.Event) -> None:
    """Close ``conn`` when a cancel request went out for it or a transaction is left open.

    A cancel request is asynchronous: it stops whatever statement the server runs when it
    arrives, which may be the ``ROLLBACK`` that ends the cancelled transaction (leaving the
    connection in a failed transaction) or the next call's first statement. The next call
    opens a fresh connection instead (:meth:`PostgresSearch._open`)."""
    if cancel_sent.is_set() or conn.info.transaction_status is not TransactionStatus.IDLE:
        conn.close()
