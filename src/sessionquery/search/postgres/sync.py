"""Synchronising the shared persisted index with the store (one transaction per update).

Invariants:

* Every update holds the index's transaction-scoped advisory lock, so processes sharing the
  index take turns; it commits in batches of at most :data:`BATCH_SESSIONS` sessions and
  :data:`BATCH_BYTES` bytes of stored logs, each all or nothing, and records the store's token
  only with its last batch (an interrupted build keeps its batches; the next update finds
  their revisions current and continues). A search
  that finds the lock taken by another process searches the index as it is (already built)
  instead of waiting; only the very first build of an index is waited for.
* ``sqi_state`` records which corpus the tables mirror (``source``) and the store's change
  token they are current with: a process that finds the token it read already recorded does
  nothing; a different source empties the tables first.
* With a change journal only the sessions it names are looked at (``stat`` each); otherwise a
  listing is compared by revision. A changed session's rows are replaced as a whole.
* **Deadlines hold.** Statements are cancelled on the server when ``cancel`` expires (the
  index's watcher); between them, the Python side checks ``cancel`` between sessions and
  inside one (reading its log, tokenising and copying its rows, every megabyte or so of text,
  :func:`~sessionquery.persistence.documents.checking`), so one big session does not outlive
  the deadline. The batch under way is rolled back whole.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Final

import psycopg

from sessionquery.errors import (
    ErrorCode,
    PersistenceCorrupt,
    PersistenceError,
    PersistenceNotFound,
    SessionQueryError,
)
from sessionquery.model import SurfaceError, SurfaceFolder, extract_event_text
from sessionquery.persistence.base import (
    ChangeJournal,
    DocumentSource,
    PersistedSession,
    SessionPersistence,
)
from sessionquery.persistence.documents import checking, read_check, title_documents
from sessionquery.query.backend import Corpus, IdentifiedStore, RootedStore
from sessionquery.query.cancel import CancelToken, check_cancel
from sessionquery.search.postgres import schema
from sessionquery.search.postgres.tokens import LEXEME_CHARS, lexeme, normal_form, tokens
from sessionquery.search.snippet import sanitize_text
from sessionquery.search.update import ProgressCallback

__all__ = [
    "DocRow",
    "SyncResult",
    "TermStats",
    "doc_row",
    "forget_sessions",
    "max_repeats",
    "sync_persisted",
]

_TSVECTOR_BUDGET: Final = 1_000_000
"""Bytes of lexemes above which a document stores no tsvector (PostgreSQL's limit is 1 MiB)."""

_DocRow = tuple[str, int, str, int, str, int, str, str, str | None, int, bool, int]
"""``(session_id, seq, type, time, surface, length, text, norm, tsv, ntokens, title, maxtf)``."""
DocRow = _DocRow


@dataclass(frozen=True, slots=True)
class SyncResult:
    """What one synchronisation did, and the index generation it left."""

    generation: int
    indexed: int = 0
    removed: int = 0
    documents: int = 0
    busy: bool = False
    """Another process held the update lock; nothing was synchronised."""


def _try_lock(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (schema.INDEX_LOCK,)).fetchone()
    return bool(row and row[0])


def _source_of(persistence: SessionPersistence) -> str:
    """A stable name for the corpus a shared index mirrors (a switch rebuilds the index)."""
    kind = f"{type(persistence).__module__}.{type(persistence).__qualname__}"
    if isinstance(persistence, IdentifiedStore) and isinstance(persistence.store_id, str):
        return f"{kind}:{persistence.store_id}"
    if isinstance(persistence, RootedStore) and isinstance(persistence.root, str):
        return f"{kind}:{persistence.root}"
    return kind


def _lexemes(counts: Mapping[str, int], text: str) -> AbstractSet[str]:
    """The distinct lexemes of a document of ``text`` whose tokens ``counts`` counts (most
    tokens are shorter than a lexeme's cut, and none is longer than the text)."""
    held = counts.keys()
    if len(text) > LEXEME_CHARS and max(map(len, held), default=0) > LEXEME_CHARS:
        return {lexeme(word) for word in held}
    return held


def _tsvector(held: AbstractSet[str], text: str) -> str | None:
    # The lexemes' UTF-8 bytes are at most the text's, at most four a character: joined and
    # counted only for a text long enough to reach the budget.
    budget = _TSVECTOR_BUDGET - 8 * len(held)
    if 4 * len(text) > budget and len("".join(held).encode("utf-8")) > budget:
        return None
    return "'" + "' '".join(sorted(held)) + "'" if held else ""


def _doc_row(  # noqa: PLR0917
    sid: str, seq: int, kind: str, time: int, surface: str, raw: str, title: bool = False
) -> tuple[_DocRow, AbstractSet[str]]:
    """The row of one document and its distinct lexemes (for the term statistics)."""
    text = sanitize_text(raw)
    words = tokens(text)
    counts = Counter(words)  # hashes each token once, for both the lexemes and maxtf
    held = _lexemes(counts, text)
    row = (
        sid,
        seq,
        kind,
        time,
        surface,
        len(text),
        text,
        normal_form(words),
        _tsvector(held, text),
        len(words),
        title,
        max_repeats(counts),
    )
    return row, held


def max_repeats(counts: Mapping[str, int]) -> int:
    """How often the most repeated token occurs (``maxtf``; 0 for none), from each token's
    count: a query of ``P`` phrases has at most ``P`` times as many match spans in the
    document."""
    return max(counts.values(), default=0)


doc_row = _doc_row
"""The ``sqi_docs`` row of one document and its distinct lexemes (team pushes write the same
rows as this index's own updates)."""


class TermStats:
    """Changes to the term statistics (``sqi_state``'s document and token counts, each
    lexeme's document count in ``sqi_terms``) gathered over a batch and written once.

    Written per session, the statistics rows of common lexemes were updated once per session
    in one transaction, and each update of a row a transaction already updated walks the
    versions it left behind: a batch cost grew with the square of its sessions.
    """

    __slots__ = ("documents", "terms", "tokens")

    def __init__(self) -> None:
        self.documents = 0
        self.tokens = 0
        self.terms: dict[str, int] = {}

    def add(self, documents: int, tokens: int, terms: dict[str, int], sign: int = 1) -> None:
        """Count ``documents`` rows of ``tokens`` tokens holding ``terms`` in (``sign`` 1) or
        out (``sign`` -1)."""
        self.documents += sign * documents
        self.tokens += sign * tokens
        held = self.terms
        for term, n in terms.items():
            held[term] = held.get(term, 0) + sign * n

    def flush(self, conn: psycopg.Connection[Any]) -> None:
        """Write the gathered changes (in the caller's transaction) and start again."""
        if self.documents or self.tokens:
            conn.execute(
                "UPDATE sqi_state SET documents = documents + %s, tokens = tokens + %s",
                (self.documents, self.tokens),
            )
        changed = sorted(term for term, n in self.terms.items() if n)
        if changed:
            conn.execute(
                "INSERT INTO sqi_terms (term, docs) SELECT * FROM unnest(%s::text[], "
                "%s::bigint[]) ON CONFLICT (term) DO UPDATE SET docs = sqi_terms.docs + "
                "excluded.docs",
                (changed, [self.terms[term] for term in changed]),
            )
            conn.execute(
                "DELETE FROM sqi_terms WHERE term = ANY(%s::text[]) AND docs <= 0", (changed,)
            )
        self.documents = self.tokens = 0
        self.terms = {}


def forget_sessions(
    conn: psycopg.Connection[Any], ids: Sequence[str], stats: TermStats | None = None
) -> None:
    """Take the rows of sessions ``ids`` out of the term statistics (before deleting them):
    into ``stats`` when given (written by its :meth:`TermStats.flush`), else at once."""
    if not ids:
        return
    pending = TermStats() if stats is None else stats
    row = conn.execute(
        "SELECT count(*), coalesce(sum(ntokens), 0) FROM sqi_docs "
        "WHERE session_id = ANY(%s::text[])",
        (list(ids),),
    ).fetchone()
    assert row is not None
    counts: dict[str, int] = {}
    rows = conn.execute(
        "SELECT t, count(*) FROM sqi_docs, unnest(tsvector_to_array(tsv)) AS t "
        "WHERE session_id = ANY(%s::text[]) AND tsv IS NOT NULL GROUP BY t",
        (list(ids),),
    ).fetchall()
    for term, n in rows:
        counts[str(term)] = int(n)
    for (norm,) in conn.execute(
        "SELECT norm FROM sqi_docs WHERE session_id = ANY(%s::text[]) AND tsv IS NULL",
        (list(ids),),
    ):
        for term in {lexeme(word) for word in str(norm).split(" ") if word}:
            counts[term] = counts.get(term, 0) + 1
    pending.add(int(row[0]), int(row[1]), counts, sign=-1)
    if stats is None:
        pending.flush(conn)


def _storage_error(session_id: str, exc: BaseException) -> SessionQueryError:
    if isinstance(exc, PersistenceCorrupt):
        return SessionQueryError(
            ErrorCode.CORRUPT_SESSION, f"stored session {session_id!r} is corrupt: {exc}"
        )
    return SessionQueryError(
        ErrorCode.PERSISTENCE_FAILED, f"reading stored session {session_id!r} failed: {exc}"
    )


_STORAGE_ERRORS: Final = (PersistenceError, OSError, psycopg.Error, ValueError)


def sync_persisted(
    *,
    conn: psycopg.Connection[Any],
    corpus: Corpus,
    persistence: SessionPersistence,
    token: str | None,
    cancel: CancelToken | None,
    progress: ProgressCallback | None,
) -> SyncResult:
    """Mirror the persisted sessions into the shared tables.

    Sessions are (re)indexed in batches (:func:`_take`), each committed on its own: an
    interrupted build keeps its committed batches, and the next update, which finds their
    revisions current, continues with the rest. The store's token is recorded only
    with the last batch.

    Raises:
        SessionQueryError: ``PERSISTENCE_FAILED``, ``CORRUPT_SESSION``, ``SOURCE_CONFLICT``,
            ``ABORTED``; ``psycopg.Error`` from the database (the running batch is rolled
            back).
    """
    source = _source_of(persistence)
    work = _Batches(conn, corpus, persistence, cancel, progress)
    with conn.transaction():
        row = conn.execute("SELECT source, token, generation FROM sqi_state").fetchone()
        assert row is not None
        if row[0] == schema.TEAM_SOURCE:
            # A team database: every push writes the index rows of what it pushed in the same
            # transaction (sessionquery.team.push), so there is nothing to synchronise.
            return SyncResult(generation=int(row[2]))
        if row[0] == source and row[1] is not None and not _try_lock(conn):
            # Another process is updating the index: search what it holds now rather than
            # wait (the caller does not record the token, so the next search looks again).
            return SyncResult(generation=int(row[2]), busy=True)
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (schema.INDEX_LOCK,))
        row = conn.execute("SELECT source, token, generation FROM sqi_state").fetchone()
        assert row is not None
        stored_source, stored_token, generation = row[0], row[1], int(row[2])
        wiped = stored_source != source
        if wiped:
            conn.execute("TRUNCATE sqi_docs, sqi_sessions, sqi_terms")
            conn.execute("UPDATE sqi_state SET documents = 0, tokens = 0")
            stored_token = None
        elif token is not None and stored_token == token:
            return SyncResult(generation=generation)  # another process already did this work
        entries, gone = _observe(
            conn=conn,
            corpus=corpus,
            persistence=persistence,
            stored_token=stored_token,
            token=token,
            cancel=cancel,
        )
        if not (wiped or entries or gone):
            conn.execute("UPDATE sqi_state SET token = %s", (token,))
            return SyncResult(generation=generation)
        work.total = len(entries)
        if progress is not None and entries:
            progress(0, len(entries))
        if gone:
            forget_sessions(conn, gone)
            conn.execute("DELETE FROM sqi_sessions WHERE id = ANY(%s::text[])", (gone,))
        work.vanished.extend(gone)
        generation += 1
        batch, rest = _take(entries)
        work.run(batch, generation)
        last = not rest
        conn.execute(
            "UPDATE sqi_state SET source = %s, token = %s, generation = %s",
            (source, token if last else None, generation),
        )
    while rest:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (schema.INDEX_LOCK,))
            row = conn.execute("SELECT source, generation FROM sqi_state").fetchone()
            assert row is not None
            if row[0] != source:
                break  # another corpus took the index over meanwhile: its turn now
            generation = int(row[1]) + 1
            batch, rest = _take(rest)
            work.run(batch, generation)
            conn.execute(
                "UPDATE sqi_state SET token = %s, generation = %s",
                (None if rest else token, generation),
            )
    return SyncResult(generation, work.indexed, len(work.vanished), work.written)


BATCH_SESSIONS = 200
"""Sessions (re)indexed per committed batch, at most..."""
BATCH_BYTES = 8 << 20
"""...and stored bytes of their logs (a batch holds at least one session), so an interrupted
batch loses little work."""


def _take(entries: list[PersistedSession]) -> tuple[list[PersistedSession], list[PersistedSession]]:
    """The next batch of ``entries`` and the rest."""
    size = 0
    for count, entry in enumerate(entries[:BATCH_SESSIONS]):
        size += entry.size_bytes or 0
        if size > BATCH_BYTES and count:
            return entries[:count], entries[count:]
    return entries[:BATCH_SESSIONS], entries[BATCH_SESSIONS:]


class _Batches:
    """The running totals of one synchronisation across its batches."""

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        corpus: Corpus,
        persistence: SessionPersistence,
        cancel: CancelToken | None,
        progress: ProgressCallback | None,
    ) -> None:
        self.conn, self.corpus, self.persistence = conn, corpus, persistence
        self.cancel, self.progress = cancel, progress
        self.total = self.indexed = self.written = 0
        self.vanished: list[str] = []
        self.stats = TermStats()

    def run(self, batch: list[PersistedSession], generation: int) -> None:
        """Index ``batch`` in the caller's transaction."""
        vanished: list[str] = []
        for entry in batch:
            check_cancel(self.cancel)
            count = _index_one(
                conn=self.conn,
                corpus=self.corpus,
                persistence=self.persistence,
                entry=entry,
                generation=generation,
                cancel=self.cancel,
                stats=self.stats,
            )
            if count is None:
                vanished.append(entry.header.id)
            else:
                self.written += count
            self.indexed += 1
            if self.progress is not None:
                self.progress(self.indexed, self.total)
        if vanished:
            forget_sessions(self.conn, vanished, self.stats)
            self.conn.execute("DELETE FROM sqi_sessions WHERE id = ANY(%s::text[])", (vanished,))
        self.stats.flush(self.conn)
        self.vanished.extend(vanished)
        if batch:
            _merge_pending(self.conn)
            with self.conn.transaction():
                schema.tune_impact(self.conn)


def _merge_pending(conn: psycopg.Connection[Any]) -> None:
    """Merge the GIN indexes' pending lists now, not at the next vacuum.

    New rows first go to the index's unsorted pending list, which every search must scan in
    full: after a bulk write that made a rare-word search 20 times slower. Merging is the
    work the index needs anyway. A role that may not do it (not the owner) leaves the list to
    autovacuum.
    """
    try:
        with conn.transaction():
            for index in ("sqi_docs_tsv", "sqi_docs_titles"):
                conn.execute("SELECT gin_clean_pending_list(%s::regclass)", (index,))
    except psycopg.errors.InsufficientPrivilege:
        pass


def _observe(
    *,
    conn: psycopg.Connection[Any],
    corpus: Corpus,
    persistence: SessionPersistence,
    stored_token: str | None,
    token: str | None,
    cancel: CancelToken | None,
) -> tuple[list[PersistedSession], list[str]]:
    """``(sessions to (re)index, indexed ids no longer stored)``."""
    changed: frozenset[str] | None = None
    if stored_token is not None and token is not None and isinstance(persistence, ChangeJournal):
        try:
            changed = persistence.changed_since(stored_token)
        except _STORAGE_ERRORS as exc:
            raise _storage_error("(journal)", exc) from exc
    if changed is None:
        listing = {entry.header.id: entry for entry in corpus.list_persisted(cancel)}
        rows = conn.execute("SELECT id, revision FROM sqi_sessions").fetchall()
        gone = [str(sid) for sid, _ in rows if sid not in listing]
    else:
        listing = {}
        for sid in sorted(changed):
            check_cancel(cancel)
            try:
                entry = persistence.stat(sid)
            except _STORAGE_ERRORS as exc:
                raise _storage_error(sid, exc) from exc
            if entry is not None:
                listing[sid] = entry
        rows = conn.execute(
            "SELECT id, revision FROM sqi_sessions WHERE id = ANY(%s::text[])",
            (sorted(changed),),
        ).fetchall()
        gone = [str(sid) for sid, _ in rows if sid not in listing]
    revisions = {str(sid): str(revision) for sid, revision in rows}
    stale = [e for sid, e in listing.items() if revisions.get(sid) != e.revision]
    return stale, gone


def _index_one(
    *,
    conn: psycopg.Connection[Any],
    corpus: Corpus,
    persistence: SessionPersistence,
    entry: PersistedSession,
    generation: int,
    cancel: CancelToken | None,
    stats: TermStats,
) -> int | None:
    """(Re)write one session's rows, their statistics into ``stats``; ``None`` when it
    vanished meanwhile."""
    with checking(None if cancel is None else cancel.check):
        return _write_one(
            conn=conn,
            corpus=corpus,
            persistence=persistence,
            entry=entry,
            generation=generation,
            cancel=cancel,
            stats=stats,
        )


def _write_one(
    *,
    conn: psycopg.Connection[Any],
    corpus: Corpus,
    persistence: SessionPersistence,
    entry: PersistedSession,
    generation: int,
    cancel: CancelToken | None,
    stats: TermStats,
) -> int | None:
    sid = entry.header.id
    tick = read_check()
    if isinstance(persistence, DocumentSource):
        try:
            log = persistence.read_documents(sid)
        except PersistenceNotFound:
            return None
        except _STORAGE_ERRORS as exc:
            raise _storage_error(sid, exc) from exc
        header, revision = log.header, log.revision
        built = []
        for d in log.documents:
            tick(len(d.text))
            built.append(_doc_row(sid, d.seq, d.type, d.time, d.surface, d.text))
        for d in log.titles:
            built.append(_doc_row(sid, d.seq, d.type, d.time, d.surface, d.text, title=True))
    else:
        cold = corpus.read_persisted(sid, cancel)
        header, revision = cold.session, entry.revision
        folder = SurfaceFolder()
        try:
            for event in cold.events:
                folder.apply(event)
        except SurfaceError as exc:
            raise SessionQueryError(
                ErrorCode.CORRUPT_SESSION, f"stored session {sid!r} is corrupt: {exc}"
            ) from None
        built = []
        for event in cold.events:
            text = extract_event_text(event)
            tick(len(text))
            if text:
                surface = folder.surface_class(event.seq)
                built.append(_doc_row(sid, event.seq, event.type, event.time, surface, text))
        for d in title_documents(cold.events):
            built.append(_doc_row(sid, d.seq, d.type, d.time, d.surface, d.text, title=True))
    if not header.is_compatible(entry.header):
        raise SessionQueryError(
            ErrorCode.SOURCE_CONFLICT,
            f"session {sid!r} has incompatible headers in two observations",
        )
    rows = [row for row, _terms in built]
    terms: dict[str, int] = {}
    for _row, held in built:
        for term in held:
            terms[term] = terms.get(term, 0) + 1
    forget_sessions(conn, [sid], stats)
    conn.execute("DELETE FROM sqi_sessions WHERE id = %s", (sid,))
    conn.execute(
        "INSERT INTO sqi_sessions (id, created_at, cwd, parent_session, header_json, "
        "revision, generation) VALUES (%s, %s, %s, %s, %s, %s, %s)",
        (
            sid,
            header.created_at,
            header.cwd,
            header.parent_session,
            json.dumps(header.to_json(), separators=(",", ":")),
            revision,
            generation,
        ),
    )
    with (
        conn.cursor() as cur,
        cur.copy(
            "COPY sqi_docs (session_id, seq, type, time, surface, length, text, norm, tsv, "
            "ntokens, title, maxtf) FROM STDIN"
        ) as copy,
    ):
        for row in rows:
            tick(row[5])
            copy.write_row(row)
    stats.add(len(rows), sum(row[9] for row in rows), terms)
    return len(rows)
