"""Ranking single-token queries from the FTS5 index itself, without ``highlight()``.

SPEC §7 ranks by the number of highlighted match spans. The general path counts them with
``highlight()``, which re-reads and re-tokenises every matching document. When the query
normalises to exactly **one token**, every span is one instance of that token (a phrase of
one token has instances that are single, distinct positions, and ``highlight()`` merges only
overlapping instances), so the span count of a document equals the number of positions the
FTS5 index records for that token in it. An ``fts5vocab`` table of type ``instance``
(``term, doc, col, offset``) reads those positions straight from the index: no text is read
and nothing is tokenised.

Invariants:

* The query's token is derived by SQLite with the index's own tokenizer (``unicode61``): the
  sanitised query is written into a connection-local TEMP FTS5 table and read back through
  its ``instance`` vocabulary. Exactly one instance means a single-token query; anything else
  (no token, two or more, even the same token twice) returns ``None`` and the caller keeps
  the ``highlight()`` path. Nothing here re-implements case folding or diacritic removal.
* Used by session search only, and by default only without filters (:func:`worthwhile`;
  the SQL handles filters exactly, the tests compare it filtered too). The result is that of
  :func:`~sessionquery.search.sqlite.query.session_search_sql`: the same candidates (event
  predicates on every matching event), the same best event per session, the same session
  predicates, live shadowing, order and paging; only ``mc`` comes from the vocabulary. The
  persisted (``main.doc_fts``) and the live (``temp.live_fts``) indexes each have a TEMP
  vocabulary table, so live sessions take the fast path too.
* Event search (one session) keeps ``highlight()``: a vocabulary cannot be restricted to one
  session's rowids, so it would read the token's instances in the whole index, which costs
  more than highlighting one session's matches except in the very largest sessions.
* Snippets are not made here: the caller highlights only the rows of the returned page, as
  the general path does, so snippets are byte-identical.
* Every object created lives in the TEMP schema of the connection: the index file's schema
  (and its ``user_version``) is unchanged.
"""

from __future__ import annotations

import contextlib
import sqlite3

from sessionquery.search.sqlite.query import (
    _LIVE_COLUMNS,
    _MATERIALIZED,
    _PERSISTED_COLUMNS,
    SEQ_BITS,
    SEQ_MASK,
    SESSION_ORDER,
    CompiledFilters,
)
from sessionquery.search.sqlite.snippet import sanitize_text

__all__ = [
    "INSTANCES_PER_DOCUMENT",
    "PHRASE_SPREAD",
    "dense",
    "ensure_vocabularies",
    "phrase_is_narrow",
    "query_tokens",
    "session_search_sql",
    "single_token",
    "worthwhile",
]

_TOKENS = "sq_query_tokens"
_TOKENS_VOCAB = "sq_query_tokens_vocab"
_DOC_VOCAB = "sq_doc_vocab"
_LIVE_VOCAB = "sq_live_vocab"
_DOC_TOTALS = "sq_doc_totals"
_LIVE_TOTALS = "sq_live_totals"

INSTANCES_PER_DOCUMENT = 16.0
"""The fast path is taken only while the token has at most this many instances per matching
document on average. It pays one row and one sort step per instance (about 1.3 µs), whereas
the ``highlight()`` path pays per matching document (about 5 to 12 µs for events of a few
hundred characters) and counts long documents in linear time (:mod:`.spans`): a token
repeated many thousand times in a few long documents (a big tool output) is cheaper there.
The commonest word of the 1M-event benchmark corpus averages 4.5 per document."""

_SETUP = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_TOKENS} USING fts5(text, tokenize='unicode61')",
    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_TOKENS_VOCAB} "
    f"USING fts5vocab(temp, {_TOKENS}, instance)",
    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_DOC_VOCAB} "
    "USING fts5vocab(main, doc_fts, instance)",
    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_LIVE_VOCAB} "
    "USING fts5vocab(temp, live_fts, instance)",
    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_DOC_TOTALS} USING fts5vocab(main, doc_fts, row)",
    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_LIVE_TOTALS} USING fts5vocab(temp, live_fts, row)",
)


def ensure_vocabularies(conn: sqlite3.Connection) -> None:
    """Create the TEMP tokenizer table and the vocabulary tables if they are missing.

    The vocabulary tables name their FTS5 table, which is looked up when they are read, so
    they stay valid when the live tables are dropped and recreated.
    """
    for statement in _SETUP:
        conn.execute(statement)


def worthwhile(filters: CompiledFilters) -> bool:
    """Whether the fast path is expected to beat ``highlight()`` for a request's filters.

    Only for unfiltered requests. The vocabulary yields every instance of the token in the
    whole index and they are grouped per document before any filter can apply (about 0.7 s
    for the commonest word at 1M events), whereas the general path highlights only the
    matches that pass the filters; a workspace filter leaving a twelfth of the sessions made
    the general path the faster one (0.64 s against 1.9 s). Both paths give the same result.
    """
    return not filters.session_predicates and not filters.event_predicates


def query_tokens(conn: sqlite3.Connection, normalized: str) -> list[str]:
    """The tokens of ``normalized`` for ``unicode61``, in query order (repeats kept).

    The text is sanitised exactly as :func:`~sessionquery.search.sqlite.query.quote_phrase`
    sanitises it, so the tokens are the ones the ``MATCH`` phrase looks up.
    """
    ensure_vocabularies(conn)
    # The scratch table holds one row at most: a search interrupted before its cleanup (an
    # expired deadline interrupts every statement) leaves a row that the next one replaces.
    conn.execute(
        f"INSERT OR REPLACE INTO temp.{_TOKENS} (rowid, text) VALUES (1, ?)",
        (sanitize_text(normalized),),
    )
    try:
        rows = conn.execute(f"SELECT term FROM temp.{_TOKENS_VOCAB} ORDER BY offset").fetchall()
    finally:
        with contextlib.suppress(sqlite3.Error):
            conn.execute(f"DELETE FROM temp.{_TOKENS}")
    return [str(term) for (term,) in rows]


def single_token(conn: sqlite3.Connection, normalized: str) -> str | None:
    """The one token ``normalized`` has for ``unicode61``, or ``None`` if it has 0 or 2+."""
    tokens = query_tokens(conn, normalized)
    return tokens[0] if len(tokens) == 1 else None


PHRASE_SPREAD = 4
"""A phrase of distinct tokens takes the fast path only while each of its tokens occurs in
fewer than this many times as many documents as the phrase: reading every occurrence of a
common token (``the parser``) costs more than highlighting the phrase's documents."""


def phrase_is_narrow(conn: sqlite3.Connection, tokens: list[str]) -> bool:
    """Whether every token of the phrase is in fewer than :data:`PHRASE_SPREAD` times as
    many persisted documents as the phrase (counts capped, so each costs little)."""
    count = "SELECT count(*) FROM (SELECT 1 FROM main.doc_fts WHERE doc_fts MATCH ? LIMIT ?)"
    phrase = '"' + " ".join(tokens) + '"'
    (matches,) = conn.execute(count, (phrase, 1_000_000)).fetchone()
    cap = PHRASE_SPREAD * max(1, int(matches))
    for token in tokens:
        (docs,) = conn.execute(count, (f'"{token}"', cap)).fetchone()
        if int(docs) >= cap:
            return False
    return True


def dense(conn: sqlite3.Connection, term: str) -> bool:
    """Whether ``term`` averages more than :data:`INSTANCES_PER_DOCUMENT` instances per
    matching document (FTS5 sums them from its position lists, without a row per instance)."""
    docs = instances = 0
    for table in (_DOC_TOTALS, _LIVE_TOTALS):
        row = conn.execute(f"SELECT doc, cnt FROM temp.{table} WHERE term = ?", (term,)).fetchone()
        if row is not None:
            docs, instances = docs + int(row[0]), instances + int(row[1])
    return instances > INSTANCES_PER_DOCUMENT * docs


_COUNTS = "(SELECT doc, count(*) AS mc FROM temp.{vocab} WHERE term = :term GROUP BY doc)"

_CANDIDATES = (
    "SELECT {src} AS src, m.doc AS rid, m.doc >> {bits} AS key, m.mc AS mc FROM {counts} AS m"
)
# With event predicates, only the events that pass them are candidates (as in the general
# path); without, the rows are not read here at all (every FTS document has its row).
_FILTERED = " JOIN {schema}.{rows} AS r ON r.id = m.doc WHERE 1{where}"

_BEST = (
    "SELECT * FROM (SELECT c.src AS src, c.rid AS rid, c.key AS key, c.mc AS mc, "
    "r.length AS length, r.time AS time, row_number() OVER (PARTITION BY c.key "
    "ORDER BY r.length ASC, r.time DESC, c.rid DESC) AS rn FROM cand AS c "
    "JOIN top AS t ON t.src = c.src AND t.key = c.key AND t.mc = c.mc "
    "JOIN {schema}.{rows} AS r ON r.id = c.rid WHERE c.src = {src}) WHERE rn = 1"
)

_PAGE_ROWS = (
    "SELECT b.src AS src, b.rid AS rid, s.id AS session_id, b.rid & {mask} AS seq, "
    "(SELECT type FROM {schema}.{rows} WHERE id = b.rid) AS type, b.time AS time, "
    "(SELECT surface FROM {schema}.{rows} WHERE id = b.rid) AS surface, "
    "b.mc AS mc, b.length AS length "
    "FROM best AS b JOIN {schema}.{sessions} AS s ON s.key = b.key "
    "WHERE b.src = {src}{shadow}{where}"
)


def _tables(live: bool) -> tuple[str, str, str, str]:
    if live:
        return _LIVE_VOCAB, "temp", "live_rows", "live_sessions"
    return _DOC_VOCAB, "main", "doc_rows", "persisted_sessions"


def _predicates(predicates: list[str], live: bool) -> str:
    columns = _LIVE_COLUMNS if live else _PERSISTED_COLUMNS
    return "".join(f" AND {p.format_map(columns)}" for p in predicates)


def _positions(live: bool, tokens: int) -> list[str]:
    """One materialised CTE per phrase token: its (doc, offset) occurrences in one index."""
    vocab = _tables(live)[0]
    return [
        f"pos{int(live)}_{i} AS {_MATERIALIZED}"
        f"(SELECT doc, offset FROM temp.{vocab} WHERE term = :t{i})"
        for i in range(tokens)
    ]


def _phrase_counts(live: bool, tokens: int) -> str:
    """Occurrences of the phrase ``:t0 :t1 ...`` per document: token ``i`` at ``offset + i``.

    For a phrase whose tokens are all different, occurrences never overlap, so this is the
    span count (the caller checks the tokens)."""
    name = f"pos{int(live)}_"
    joins = "".join(
        f" JOIN {name}{i} AS p{i} ON p{i}.doc = p0.doc AND p{i}.offset = p0.offset + {i}"
        for i in range(1, tokens)
    )
    return f"(SELECT p0.doc AS doc, count(*) AS mc FROM {name}0 AS p0{joins} GROUP BY p0.doc)"


def _candidates(live: bool, filters: CompiledFilters, tokens: int = 1) -> str:
    vocab, schema, rows, _sessions = _tables(live)
    counts = _COUNTS.format(vocab=vocab) if tokens == 1 else _phrase_counts(live, tokens)
    sql = _CANDIDATES.format(src=int(live), bits=SEQ_BITS, counts=counts)
    if filters.event_predicates:
        where = _predicates(filters.event_predicates, live)
        sql += _FILTERED.format(schema=schema, rows=rows, where=where)
    return sql


def _best(live: bool) -> str:
    _vocab, schema, rows, _sessions = _tables(live)
    return _BEST.format(schema=schema, rows=rows, src=int(live))


def _page_rows(live: bool, filters: CompiledFilters) -> str:
    _vocab, schema, rows, sessions = _tables(live)
    shadow = "" if live else " AND s.id NOT IN (SELECT id FROM temp.live_sessions)"
    return _PAGE_ROWS.format(
        mask=SEQ_MASK,
        schema=schema,
        rows=rows,
        sessions=sessions,
        src=int(live),
        shadow=shadow,
        where=_predicates(filters.session_predicates, live),
    )


def session_search_sql(
    filters: CompiledFilters, *, include_persisted: bool, tokens: int = 1
) -> str:
    """The fast twin of ``query.session_search_sql``; binds ``:term :lim :off`` + filters
    (``tokens`` > 1: a phrase of that many distinct tokens, bound as ``:t0 :t1 ...``).

    Same result, cheaper order of work. Event predicates apply to every candidate, as there
    (only then are all candidates' rows read). A session's best event is chosen in two
    integer steps: its highest match count (``GROUP BY`` over counts alone), then, among the
    candidates that reach it, the shortest, newest, highest ``rid`` (inside one session the
    order of ``seq``); lengths and times are read for those candidates only. Session
    predicates, the live shadowing and the session's existence are the same for every event
    of a session, so applying them to the best events (at most one per session) selects the
    same sessions; names, types and surfaces are read for those rows only. This relies on
    the index invariant that every FTS5 document has its row (both are written together).
    """
    live = [True, False] if include_persisted else [True]
    positions = "".join(
        f"{cte}, " for branch in live if tokens > 1 for cte in _positions(branch, tokens)
    )
    candidates = " UNION ALL ".join(_candidates(branch, filters, tokens) for branch in live)
    bests = " UNION ALL ".join(_best(branch) for branch in live)
    pages = " UNION ALL ".join(_page_rows(branch, filters) for branch in live)
    return (
        f"WITH {positions}cand AS {_MATERIALIZED}({candidates}), "
        f"top AS {_MATERIALIZED}(SELECT src, key, max(mc) AS mc FROM cand GROUP BY src, key), "
        f"best AS {_MATERIALIZED}({bests}) "
        f"SELECT src, rid, session_id, seq, type, time, surface FROM ({pages}) "
        f"ORDER BY {SESSION_ORDER} LIMIT :lim OFFSET :off"
    )
