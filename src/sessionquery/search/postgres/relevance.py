"""Relevance search on PostgreSQL: the index's statistics and the ranked SQL.

The ranking is the kernel's (:mod:`sessionquery.search.relevance`); this module reads the
statistics the index keeps current (``sqi_state.documents``/``tokens``, ``sqi_terms``, and a
team database's per-workspace ``sqi_team_counts``/``sqi_team_terms``, summed) beside
the live overlay's own, and evaluates the kernel's score formula in SQL with exactly its
sequence of IEEE operations, so a document scores the same float here as on SQLite.

Invariants:

* A word's document count is looked up by its lexeme (the token cut to
  :data:`~.tokens.LEXEME_CHARS` characters): two different tokens longer than that which
  share their first characters count as one word (a documented corner case; SQLite counts
  whole tokens).
* A word's frequency in a document is the number of occurrences of its normal-form pattern
  (`` word ``) in the document's normal form, which is exactly its token count there; a
  candidate found through a cut lexeme that does not hold the whole word scores 0 and is
  left out, as SQLite never finds it.
* No value is interpolated: words, weights, constants and filter values are bound
  parameters; only generated parameter names are joined into the SQL.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg

from sessionquery.search.postgres.overlay import LiveOverlay, LiveSession
from sessionquery.search.postgres.sql import COLUMNS, documents_of, holds, oversized_or
from sessionquery.search.postgres.tokens import lexeme, normal_form
from sessionquery.search.predicates import CompiledFilters
from sessionquery.search.relevance import PHRASE_FACTOR, TITLE_WEIGHT, CorpusStats, RelevancePlan

__all__ = [
    "Stored",
    "corpus_stats",
    "document_counts",
    "event_relevance_sql",
    "in_scope",
    "match_predicate",
    "read_totals",
    "relevance_params",
    "scored_sql",
    "session_relevance_sql",
    "stored_counts",
]


@dataclass(slots=True)
class Stored:
    """What one search read of the stored statistics, each value read once.

    Attributes:
        read: whether the totals were read (:func:`corpus_stats`).
        documents: stored documents the connection may see (the index's and a team's).
        tokens: their tokens.
        keyed: the constant the impact index is keyed with (``sqi_state.impact_c3``;
            ``None``: no index yet).
        counts: each lexeme read and how many of those documents hold it (0: none).
    """

    read: bool = False
    documents: int = 0
    tokens: int = 0
    keyed: float | None = None
    counts: dict[str, int] = field(default_factory=dict)


_HELD = (
    "(SELECT term, docs FROM sqi_terms WHERE term = ANY(%(t)s::text[]) UNION ALL "
    "SELECT term, docs FROM sqi_team_terms WHERE term = ANY(%(t)s::text[])) AS k GROUP BY term"
)
_TERMS = f"SELECT term, sum(docs) FROM {_HELD}"
# The totals (the row whose term is NULL) and the terms' counts in one statement: a search
# plans with both, and under load every round trip waits for the server's turn.
_TOTALS_AND_TERMS = (
    "SELECT NULL::text, (SELECT documents FROM sqi_state) + coalesce(sum(documents), 0), "
    "(SELECT tokens FROM sqi_state) + coalesce(sum(tokens), 0), "
    "(SELECT impact_c3 FROM sqi_state) FROM sqi_team_counts "
    f"UNION ALL SELECT term, sum(docs), NULL::numeric, NULL::float8 FROM {_HELD}"
)


def corpus_stats(
    conn: psycopg.Connection[Any],
    overlay: LiveOverlay,
    *,
    include_persisted: bool,
    stored: Stored | None = None,
    words: Iterable[str] = (),
) -> CorpusStats:
    """Documents and tokens of the stored index (when searched) and the live overlay; the
    stored counts of ``words`` are read in the same statement, into ``stored`` (a search's:
    read once, then kept)."""
    documents, tokens = overlay.totals()
    if include_persisted:
        known = stored if stored is not None else Stored()
        if not known.read:
            read_totals(conn, known, {lexeme(word) for word in words} - known.counts.keys())
        documents += known.documents
        tokens += known.tokens
    return CorpusStats(documents, tokens)


def read_totals(conn: psycopg.Connection[Any], stored: Stored, lexemes: set[str]) -> None:
    """Read the totals (the team's statistics sit in per-workspace rows beside the index's
    own: a role reads the sums over the workspaces it may see) and the counts of
    ``lexemes`` into ``stored``."""
    rows = conn.execute(_TOTALS_AND_TERMS, {"t": sorted(lexemes)}).fetchall()
    found: dict[str, int] = {}
    for term, documents, tokens, keyed in rows:
        if term is None:
            stored.documents = int(documents or 0)
            stored.tokens = int(tokens or 0)
            stored.keyed = float(keyed) if keyed is not None else None
        else:
            found[str(term)] = int(documents)
    stored.read = True
    stored.counts.update({term: found.get(term, 0) for term in lexemes})


def document_counts(
    conn: psycopg.Connection[Any],
    overlay: LiveOverlay,
    words: Sequence[str],
    *,
    include_persisted: bool,
    stored: Stored | None = None,
) -> Mapping[str, int]:
    """How many documents (stored, when searched, and live) hold each of ``words``; the
    stored counts read are kept in ``stored`` (see :func:`stored_counts`)."""
    counts = {word: overlay.document_count(word) for word in words}
    if include_persisted and words:
        found = stored_counts(conn, {lexeme(word) for word in words}, stored)
        for word in words:
            counts[word] += found.get(lexeme(word), 0)
    return counts


def stored_counts(
    conn: psycopg.Connection[Any], lexemes: Iterable[str], stored: Stored | None = None
) -> dict[str, int]:
    """How many stored documents the connection may see hold each of ``lexemes`` (absent:
    none): the index's own statistics plus a team database's visible per-workspace ones.

    ``stored`` (one search's): counts read before, not read again (a search plans with its
    words' counts, then bounds its walk with them: one query instead of two, each a
    row-level-security read of every workspace's and machine's rows of a word); the counts
    read now are added to it.
    """
    wanted = set(lexemes)
    missing = wanted if stored is None else wanted - stored.counts.keys()
    found: dict[str, int] = {}
    if missing:
        rows = conn.execute(_TERMS, {"t": sorted(missing)}).fetchall()
        found = {str(term): int(docs) for term, docs in rows}
    if stored is None:
        return found
    stored.counts.update({term: found.get(term, 0) for term in missing})
    return {term: stored.counts[term] for term in wanted if stored.counts[term]}


def _session_where(filters: CompiledFilters) -> str:
    return "".join(f" AND {p.format_map(COLUMNS)}" for p in filters.session_predicates)


def in_scope(
    conn: psycopg.Connection[Any],
    overlay: LiveOverlay,
    filters: CompiledFilters,
    word: str,
    *,
    live: Sequence[LiveSession],
    session_id: str | None = None,
    include_persisted: bool,
) -> bool:
    """Whether a document of a session in the search's scope holds ``word``: one session
    (``session_id``), or the stored sessions the filters keep and the ``live`` ones."""
    if any(word in session.vocabulary for session in live):
        return True
    if not include_persisted or (session_id is not None and session_id in overlay.sessions):
        return False
    scope = (
        " AND d.session_id = %(sid)s"
        if session_id is not None
        else (" AND NOT (d.session_id = ANY(%(live)s::text[]))")
    )
    row = conn.execute(
        f"SELECT 1 FROM {documents_of(filters) if session_id is None else 'sqi_docs AS d'} "
        "WHERE (d.tsv @@ %(tsq)s::tsquery OR d.tsv IS NULL) AND strpos(d.norm, %(pattern)s) > 0"
        f"{scope}{_session_where(filters) if session_id is None else ''} LIMIT 1",
        {
            **(filters.params if session_id is None else {}),
            "tsq": f"'{lexeme(word)}'",
            "pattern": normal_form([word]),
            "sid": session_id,
            "live": sorted(overlay.sessions),
        },
    ).fetchone()
    return row is not None


def relevance_params(plan: RelevancePlan) -> dict[str, object]:
    """The bound values of :func:`session_relevance_sql` / :func:`event_relevance_sql`."""
    c1, c2, c3 = plan.constants
    params: dict[str, object] = {
        "rtsq": " | ".join(f"'{lexeme(term)}'" for term in plan.terms),
        "c1": c1,
        "c2": c2,
        "c3": c3,
        "tw": TITLE_WEIGHT,
    }
    for i, (term, weight) in enumerate(zip(plan.terms, plan.weights, strict=True)):
        params[f"rp{i}"] = normal_form([term])
        params[f"rw{i}"] = weight
    for held, factor in enumerate(plan.coverage, 1):
        params[f"rc{held}"] = factor
    params["rphrase"] = normal_form(plan.phrase) if plan.phrase else ""
    params["rpf"] = PHRASE_FACTOR
    return params


def _frequency(i: int) -> str:
    """Occurrences of term ``i``'s pattern in the candidate's normal form ``c.n`` (read out
    of its compressed storage once per candidate): the bytes a replace removes over the
    pattern's bytes (exact, as whole occurrences are removed; a text without the pattern
    comes back as it is, after one scan)."""
    name = f"%(rp{i})s"
    return f"(octet_length(c.n) - octet_length(replace(c.n, {name}, ''))) / octet_length({name})"


def match_predicate(plan: RelevancePlan, tsquery: str, terms: Sequence[int], *, every: bool) -> str:
    """The candidates holding any (or, ``every``, all) of the plan's terms ``terms``: the
    tsvector matches the bound tsquery ``tsquery``, or an oversized document (no tsvector)
    holds the term patterns (:func:`~.sql.oversized_or`)."""
    joiner = " AND " if every else " OR "
    # strpos: an oversized document is long, and strpos stops at the first match
    contains = joiner.join(f"strpos(d.norm, %(rp{i})s) > 0" for i in terms)
    return oversized_or(f"d.tsv @@ %({tsquery})s::tsquery", contains)


def scored_sql(
    plan: RelevancePlan,
    filters: CompiledFilters,
    extra: str,
    *,
    source: str | None = None,
    condition: str | None = None,
    tail: str = " OFFSET 0",
    carry: Sequence[tuple[str, str]] = (),
) -> str:
    """Every candidate row with its term frequencies (``tf<i>``) and its score (``sc``).

    The candidates are the rows of ``source`` (default: the documents, joined with their
    sessions when a filter needs them) holding any term and passing ``extra`` and the filters,
    or, given, those passing ``condition``; ``tail`` ends their statement, and each
    ``(expression, name)`` of ``carry`` is a column they carry along.
    """
    count = len(plan.terms)
    if condition is None:
        match = match_predicate(plan, "rtsq", range(count), every=False)
        condition = f"{match}{extra}{filters.where(COLUMNS)}"
    frequencies = ", ".join(f"{_frequency(i)} AS tf{i}" for i in range(count))
    carried = "".join(f", {expression} AS {name}" for expression, name in carry)
    names = ("session_id", "seq", "type", "time", "surface", "length", "title", "ntokens")
    kept = ", ".join(f"c.{name}" for name in (*names, *(name for _e, name in carry)))
    # Each level ends in OFFSET 0, so none is folded into the next: the normal form is
    # decompressed once per candidate (``n``, a plain copy) and each frequency computed once.
    candidates = (
        f"SELECT d.session_id, d.seq, d.type, d.time, d.surface, d.length, d.title, "
        f"d.ntokens{carried}, d.norm || '' AS n "
        f"FROM {source or documents_of(filters)} WHERE {condition}{tail}"
    )
    counted = f"SELECT {kept}, c.n, {frequencies} FROM ({candidates}) AS c OFFSET 0"
    # Only a candidate holding every term of the phrase can hold the phrase: the others are
    # not scanned for it.
    needed = [f"c.tf{i} > 0" for i, term in enumerate(plan.terms) if term in plan.phrase]
    phrase = holds("c.n", "%(rphrase)s") if plan.phrase else "false"
    if plan.phrase and needed:
        phrase = f"CASE WHEN {' AND '.join(needed)} THEN {phrase} ELSE false END"
    tf_columns = "".join(f", c.tf{i}" for i in range(count))
    inner = f"SELECT {kept}{tf_columns}, {phrase} AS ph FROM ({counted}) AS c OFFSET 0"
    # Python's event_score, operation for operation: 0.0, then for each term with tf > 0
    # score += w * (tf * c1) / (tf + (c2 + c3 * D)); then * phrase factor (when the phrase
    # is held), then * coverage[held - 1].
    bm25 = "0.0::float8"
    for i in range(count):
        term = f"%(rw{i})s * (f.tf{i} * %(c1)s) / (f.tf{i} + (%(c2)s + %(c3)s * f.ntokens))"
        bm25 = f"({bm25} + CASE WHEN f.tf{i} > 0 THEN {term} ELSE 0.0::float8 END)"
    held = " + ".join(f"(f.tf{i} > 0)::int" for i in range(count))
    factors = " ".join(f"WHEN {m} THEN %(rc{m})s" for m in range(1, count + 1))
    boosted = f"(CASE WHEN f.ph THEN {bm25} * %(rpf)s ELSE {bm25} END)"
    score = f"{boosted} * (CASE ({held}) {factors} ELSE 1.0::float8 END)"
    tfs = ", ".join(f"f.tf{i}" for i in range(count))
    kept = "".join(f", f.{name}" for _expression, name in carry)
    return (
        f"SELECT f.session_id, f.seq, f.type, f.time, f.surface, f.length, f.title{kept}, "
        f"{tfs}, CASE WHEN f.title THEN %(tw)s * ({score}) ELSE {score} END AS sc "
        f"FROM ({inner}) AS f"
    )


def session_relevance_sql(
    plan: RelevancePlan, filters: CompiledFilters, *, only: bool = False
) -> str:
    """Stored sessions (not live) ranked by relevance with their best document; with
    ``only``, just the sessions of the bound ``only`` ids (read by session).

    Binds :func:`relevance_params`, ``live`` (ids to leave out), ``lim``, ``off``, the
    filters' (and ``only``). Rows: ``session_id, seq, type, time, surface, length, score,
    header_json, text, title, tf0..``.
    """
    count = len(plan.terms)
    extra = " AND NOT (d.session_id = ANY(%(live)s::text[]))"
    source = None
    if only:
        # session by session through the primary key, whatever the planner guesses of them
        source = (
            "unnest(%(only)s::text[]) AS o(id) CROSS JOIN LATERAL (SELECT * FROM sqi_docs AS d "
            "WHERE d.session_id = o.id OFFSET 0) AS d"
        )
        if filters.session_predicates:
            source += " JOIN sqi_sessions AS s ON s.id = d.session_id"
    scored = scored_sql(plan, filters, extra, source=source)
    tfs = ", ".join(f"b.tf{i}" for i in range(count))
    return (
        f"WITH cand AS MATERIALIZED (SELECT * FROM ({scored}) AS x WHERE x.sc > 0), "
        "top AS (SELECT session_id, max(sc) FILTER (WHERE NOT title) AS best_event, "
        "max(sc) FILTER (WHERE title) AS best_title, "
        "coalesce(max(sc) FILTER (WHERE NOT title), 0.0::float8) + "
        "coalesce(max(sc) FILTER (WHERE title), 0.0::float8) AS score "
        "FROM cand GROUP BY session_id), "
        # The page's sessions score at least its last row's score: only the sessions that
        # do (ties included) have their best document looked for.
        "cut AS (SELECT score FROM top ORDER BY score DESC "
        "OFFSET greatest(%(lim)s + %(off)s - 1, 0) LIMIT 1), "
        "chosen AS (SELECT * FROM top WHERE score >= coalesce((SELECT score FROM cut), "
        "'-Infinity'::float8)), "
        "best AS (SELECT c.*, t.score, row_number() OVER (PARTITION BY c.session_id ORDER BY "
        "c.length ASC, c.time DESC, c.seq DESC) AS rn FROM cand AS c JOIN chosen AS t "
        "ON t.session_id = c.session_id WHERE (NOT c.title AND c.sc = t.best_event) OR "
        "(c.title AND t.best_event IS NULL AND c.sc = t.best_title)), "
        "page AS (SELECT * FROM best WHERE rn = 1 ORDER BY score DESC, length ASC, time DESC, "
        "session_id ASC, seq DESC LIMIT %(lim)s OFFSET %(off)s) "
        f"SELECT b.session_id, b.seq, b.type, b.time, b.surface, b.length, b.score, "
        f"s.header_json, d.text, b.title, {tfs} FROM page AS b "
        "JOIN sqi_sessions AS s ON s.id = b.session_id "
        "JOIN sqi_docs AS d ON d.session_id = b.session_id AND d.seq = b.seq "
        "ORDER BY b.score DESC, b.length ASC, b.time DESC, b.session_id ASC, b.seq DESC"
    )


def event_relevance_sql(plan: RelevancePlan, filters: CompiledFilters) -> str:
    """Documents (events and titles) of one stored session ``sid`` ranked by relevance.

    Binds :func:`relevance_params`, ``sid``, ``lim``, ``off`` and the filters'. Rows:
    ``seq, type, time, surface, length, score, text, title, tf0..``.
    """
    count = len(plan.terms)
    scored = scored_sql(plan, filters, " AND d.session_id = %(sid)s")
    tfs = ", ".join(f"x.tf{i}" for i in range(count))
    return (
        f"SELECT x.seq, x.type, x.time, x.surface, x.length, x.sc, d.text, x.title, {tfs} "
        f"FROM ({scored}) AS x JOIN sqi_docs AS d ON d.session_id = x.session_id "
        "AND d.seq = x.seq WHERE x.sc > 0 "
        "ORDER BY x.sc DESC, x.length ASC, x.time DESC, x.seq DESC LIMIT %(lim)s OFFSET %(off)s"
    )
