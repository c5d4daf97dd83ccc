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
a half-reconciled corpus it knows about: it waits (within its deadline) or says why not.

While a statement runs, an SQLite progress handler polls ``cancel``, so an expiring deadline
interrupts the statement (``ABORTED``) instead of waiting for it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Final, Literal

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model import SessionHeader
from sessionquery.query.backend import Corpus, SearchMatch
from sessionquery.query.cancel import CancelToken, check_cancel
from sessionquery.query.types import EventSearchHit, SessionRecord, SessionSearchHit
from sessionquery.search.base import OpenAt, SearchBase, Window
from sessionquery.search.cursor import CursorPosition, page_offset
from sessionquery.search.relevance import TITLE_WEIGHT, RelevancePlan, plan_relevance
from sessionquery.search.request import SearchRequest
from sessionquery.search.snippet import (
    MATCH_MARK,
    snippet_around,
    snippet_from_highlight,
)
from sessionquery.search.sqlite import db, relevance, schema, spans
from sessionquery.search.sqlite.query import (
    SEQ_BITS,
    SEQ_MASK,
    SQLITE_FILTERS,
    CompiledFilters,
    event_search_sql,
    highlight_sql,
    query_tokens,
    quote_phrase,
    session_search_sql,
    text_sql,
    words_expression,
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
    def _reconciled(self, corpus: Corpus, cancel: CancelToken | None) -> Iterator[None]:
        """Take this instance's turn and reconcile; the turn is held inside the block.

        A deadline that passes while a build is unfinished becomes ``INDEX_BUILDING``.
        """
        try:
            _acquire(self._turn, cancel)
        except SessionQueryError as exc:
            raise self._building_or(exc, cancel, corpus) from None
        try:
            try:
                reconcile(self._access, self._state, corpus, cancel)
            except SessionQueryError as exc:
                raise self._building_or(exc, cancel, corpus) from None
            yield
        finally:
            self._turn.release()

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
        text, mode, page_size = request.text, request.mode, request.page_size
        with self._reconciled(corpus, cancel), self._hold(cancel) as conn, _snapshot(conn):
            (durable,) = db.one(conn, "SELECT global_generation FROM main.search_state")
            state = self._state
            generation = f"{state.epoch}:{durable}:{state.live_generation}"
            offset = page_offset(position, generation)
            persisted = corpus.persistence is not None
            if mode == "relevance":
                return self._relevance_sessions(
                    conn,
                    request,
                    compiled,
                    persisted=persisted,
                    offset=offset,
                    generation=generation,
                    cancel=cancel,
                )
            matcher = self._matcher(conn, text, mode, cancel)
            sql = session_search_sql(compiled, include_persisted=persisted)
            params = {
                **compiled.params,
                "q": matcher.expression,
                "overlap": db.overlapping(matcher.phrases),
                "lim": page_size + 1,
                "off": offset,
            }
            rows = conn.execute(sql, params).fetchall()
            hits = [self._session_hit(conn, matcher, row) for row in rows[:page_size]]
        return Window(hits, len(rows) > page_size, generation, offset)

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
        text, mode, page_size = request.text, request.mode, request.page_size
        with self._reconciled(corpus, cancel), self._hold(cancel) as conn, _snapshot(conn):
            live, key, header, generation = self._target(conn, corpus, session_id)
            offset = page_offset(position, generation)
            if mode == "relevance":
                window = self._relevance_events(
                    conn,
                    request,
                    compiled,
                    live=live,
                    key=key,
                    session_id=session_id,
                    offset=offset,
                    generation=generation,
                    cancel=cancel,
                )
                return header, window
            matcher = self._matcher(conn, text, mode, cancel)
            params = {
                **compiled.params,
                "q": matcher.expression,
                "overlap": db.overlapping(matcher.phrases),
                "lo": key << SEQ_BITS,
                "hi": (key << SEQ_BITS) | SEQ_MASK,
                "lim": page_size + 1,
                "off": offset,
            }
            rows = conn.execute(event_search_sql(compiled, live=live), params).fetchall()
            hits = [
                self._event_hit(conn, matcher, live, session_id, row[:5])
                for row in rows[:page_size]
            ]
        return header, Window(hits, len(rows) > page_size, generation, offset)

    # -- relevance -------------------------------------------------------------------

    @staticmethod
    def _plan(conn: db.Connection, text: str) -> RelevancePlan | None:
        return plan_relevance(
            query_tokens(conn, text),
            relevance.corpus_stats(conn),
            lambda words: relevance.document_counts(conn, words),
        )

    def _relevance_sessions(
        self,
        conn: db.Connection,
        request: SearchRequest,
        compiled: CompiledFilters,
        *,
        persisted: bool,
        offset: int,
        generation: str,
        cancel: CancelToken | None,
    ) -> Window[SessionSearchHit]:
        page_size = request.page_size
        plan = self._plan(conn, request.text)
        if plan is None:
            return Window([], False, generation, offset)
        relevance.collect_sessions(
            conn,
            plan,
            compiled,
            include_persisted=persisted,
            page=page_size + 1 + offset,
            title_weight=TITLE_WEIGHT,
        )
        sql = relevance.session_page_sql(include_persisted=persisted)
        rows = conn.execute(sql, {"lim": page_size + 1, "off": offset}).fetchall()
        hits = []
        for src, title, rid, session_id, *event, _score in rows[:page_size]:
            live = src == 1
            sid = str(session_id)
            best = self._relevance_hit(
                conn, plan, cancel, live=live, title=bool(title), session_id=sid, row=(rid, *event)
            )
            assert isinstance(rid, int)
            record = self._record(conn, live, sid, rid)
            hits.append(SessionSearchHit(record=record, best_match=best))
        return Window(hits, len(rows) > page_size, generation, offset, plan.corrections)

    def _relevance_events(
        self,
        conn: db.Connection,
        request: SearchRequest,
        compiled: CompiledFilters,
        *,
        live: bool,
        key: int,
        session_id: str,
        offset: int,
        generation: str,
        cancel: CancelToken | None,
    ) -> Window[EventSearchHit]:
        page_size = request.page_size
        plan = self._plan(conn, request.text)
        if plan is None:
            return Window([], False, generation, offset)
        with relevance.installed_plan(plan) as installed:
            params = {
                **compiled.params,
                "q": relevance.or_expression(plan),
                "plan": installed.plan_id,
                "title_weight": TITLE_WEIGHT,
                "lo": key << SEQ_BITS,
                "hi": (key << SEQ_BITS) | SEQ_MASK,
                "lim": page_size + 1,
                "off": offset,
            }
            rows = conn.execute(relevance.event_relevance_sql(compiled, live=live), params)
            found = rows.fetchall()
        hits = [
            self._relevance_hit(
                conn,
                plan,
                cancel,
                live=live,
                title=bool(title),
                session_id=session_id,
                row=(rid, *event),
            )
            for title, rid, *event in found[:page_size]
        ]
        return Window(hits, len(found) > page_size, generation, offset, plan.corrections)

    def _relevance_hit(
        self,
        conn: db.Connection,
        plan: RelevancePlan,
        cancel: CancelToken | None,
        *,
        live: bool,
        title: bool,
        session_id: str,
        row: Sequence[object],
    ) -> EventSearchHit:
        """The hit for one ranked document, its snippet cut around the most selective
        searched word it holds."""
        rid = row[0]
        assert isinstance(rid, int)
        term = next(
            (
                word
                for word in plan.terms
                if conn.execute(
                    relevance.holds_term_sql(live, title), {"q": _quoted(word), "rid": rid}
                ).fetchone()
            ),
            plan.terms[0],
        )
        matcher = spans.Matcher(_quoted(term), ((term,),), cancel)
        return self._event_hit(conn, matcher, live, session_id, row, title=title)

    # -- helpers ---------------------------------------------------------------------

    def _record(self, conn: db.Connection, live: bool, session_id: str, rid: int) -> SessionRecord:
        if live:
            state = self._state.live[session_id]
            return SessionRecord(state.header, live=True, persisted=state.persisted)
        (header_json,) = db.one(
            conn,
            "SELECT header_json FROM main.persisted_sessions WHERE key = ?",
            (rid >> SEQ_BITS,),
        )
        return SessionRecord(self._header(str(header_json)), live=False, persisted=True)

    def _target(
        self, conn: db.Connection, corpus: Corpus, session_id: str
    ) -> tuple[bool, int, SessionHeader, str]:
        live = self._state.live.get(session_id)
        if live is not None:
            return True, live.key, live.header, f"live:{live.generation}"
        if corpus.persistence is not None:
            row = conn.execute(
                "SELECT key, header_json, generation FROM main.persisted_sessions WHERE id = ?",
                (session_id,),
            ).fetchone()
            if row is not None:
                key, header_json, generation = row
                header = self._header(str(header_json))
                return False, int(key), header, f"persisted:{self._state.epoch}:{generation}"
        raise SessionQueryError(ErrorCode.SESSION_NOT_FOUND, f"session {session_id!r} not found")

    @staticmethod
    def _matcher(
        conn: db.Connection, text: str, match: SearchMatch, cancel: CancelToken | None
    ) -> spans.Matcher:
        """The MATCH expression of the normalised query in the given mode and its phrases;
        registers the long-document span counter for this search."""
        tokens = query_tokens(conn, text)
        if match == "phrase":
            return spans.Matcher(quote_phrase(text), (tuple(tokens),), cancel)
        distinct = tuple(dict.fromkeys(tokens))
        return spans.Matcher(
            words_expression(distinct), tuple((token,) for token in distinct), cancel
        )

    def _snippet(
        self,
        conn: db.Connection,
        matcher: spans.Matcher,
        live: bool,
        rid: int,
        title: bool = False,
    ) -> str:
        stored = conn.execute(text_sql(live, title), {"rid": rid}).fetchone()
        if stored is not None and int(stored[1]) > spans.SMALL_DOCUMENT:
            # Long document: locate the first span without highlighting all of it.
            text = str(stored[0])
            first = spans.first_span_offset(conn, text, matcher.expression, matcher.cancel)
            return snippet_around(text, first, self._snippet_chars)
        row = conn.execute(
            highlight_sql(live, title), {"q": matcher.expression, "mark": MATCH_MARK, "rid": rid}
        ).fetchone()
        return snippet_from_highlight(str(row[0]) if row else "", self._snippet_chars)

    def _event_hit(
        self,
        conn: db.Connection,
        matcher: spans.Matcher,
        live: bool,
        session_id: str,
        row: Sequence[object],
        *,
        title: bool = False,
    ) -> EventSearchHit:
        rid, seq, kind, time, surface = row
        assert isinstance(rid, int) and isinstance(seq, int) and isinstance(time, int)
        return EventSearchHit(
            session_id=session_id,
            seq=seq,
            type=str(kind),
            time=time,
            surface=surface,  # type: ignore[arg-type]  # stored from SurfaceClass values
            snippet=self._snippet(conn, matcher, live, rid, title),
        )

    def _session_hit(
        self, conn: db.Connection, matcher: spans.Matcher, row: Sequence[object]
    ) -> SessionSearchHit:
        src, rid, session_id, *event = row
        assert isinstance(rid, int)
        sid = str(session_id)
        live = src == 1
        record = self._record(conn, live, sid, rid)
        best = self._event_hit(conn, matcher, live, sid, (rid, *event))
        return SessionSearchHit(record=record, best_match=best)


def _quoted(word: str) -> str:
    """A single-token FTS5 phrase for ``word`` (a token of the index's own tokenizer)."""
    return '"' + word.replace('"', '""') + '"'


class _Access:
    """What reconciliation may use of a :class:`SqliteSearch` (:class:`.reconcile.IndexAccess`)."""

    __slots__ = ("_search",)

    def __init__(self, search: SqliteSearch) -> None:
        self._search = search

    def hold(self, cancel: CancelToken | None) -> AbstractContextManager[db.Connection]:
        return self._search._hold(cancel)  # pyright: ignore[reportPrivateUsage]

    def writing(self, cancel: CancelToken | None) -> AbstractContextManager[None]:
        return self._search._writing(cancel)  # pyright: ignore[reportPrivateUsage]


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
