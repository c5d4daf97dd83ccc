"""The PostgreSQL search index's tables, migrations and counting function.

Tables (prefixed ``sqi_``, in the connection's ``search_path``; put ``options=-csearch_path=X``
in the DSN to keep several indexes in one database):

* ``sqi_state``: one row: which corpus the index mirrors (``source``), the corpus change token
  it was last brought up to date with, and the index ``generation`` (bumped by every change);
* ``sqi_sessions``: one row per indexed persisted session (header fields used by filters);
* ``sqi_docs``: one row per event with text, and one per title event (``title`` true; only
  relevance search reads those): metadata, the text, its normal form
  (:func:`~.tokens.normal_form`), its token count (``ntokens``) and a position-less
  ``tsvector`` of its lexemes (GIN indexed). A document whose lexemes exceed the tsvector
  size limit stores ``NULL`` there and is always a candidate (a partial index finds them);
  ``maxtf``: how often its most repeated token occurs (indexed; :mod:`.walk` reads it);
  events are indexed by their impact key (:func:`impact_key`) and titles have a full-text
  index of their own (:mod:`.impact` reads both);
* ``sqi_terms``: for each lexeme, how many rows of ``sqi_docs`` hold it, and in
  ``sqi_state`` how many rows there are and how many tokens they hold (``documents``,
  ``tokens``): the statistics relevance search ranks by, kept current by every update.

Invariants: the index is derived and disposable (a source switch or an unknown schema rebuilds
it); migrations run under an advisory lock, so concurrent openers never race.
"""

from __future__ import annotations

from typing import Any, Final

import psycopg

from sessionquery.search.relevance import K1, B

__all__ = [
    "IMPACT_AVGDL",
    "IMPACT_C2",
    "IMPACT_RETUNE",
    "INDEX_LOCK",
    "SCHEMA_VERSION",
    "TEAM_SOURCE",
    "ensure_schema",
    "impact_key",
    "tune_impact",
]

INDEX_LOCK: Final = 0x5351_494E_4458_0001
"""Advisory lock held (transaction-scoped) by every reconciliation and migration."""

_TABLES: Final = (
    """CREATE TABLE sqi_state (
        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        source text,
        token text,
        generation bigint NOT NULL DEFAULT 0)""",
    "INSERT INTO sqi_state DEFAULT VALUES",
    """CREATE TABLE sqi_sessions (
        id text COLLATE "C" PRIMARY KEY,
        created_at bigint NOT NULL,
        cwd text,
        parent_session text,
        header_json text NOT NULL,
        revision text NOT NULL,
        generation bigint NOT NULL)""",
    """CREATE TABLE sqi_docs (
        session_id text COLLATE "C" NOT NULL REFERENCES sqi_sessions (id) ON DELETE CASCADE,
        seq integer NOT NULL,
        type text NOT NULL,
        time bigint NOT NULL,
        surface text NOT NULL,
        length integer NOT NULL,
        text text NOT NULL,
        norm text NOT NULL,
        tsv tsvector,
        PRIMARY KEY (session_id, seq))""",
    "CREATE INDEX sqi_docs_tsv ON sqi_docs USING gin (tsv)",
    "CREATE INDEX sqi_docs_oversized ON sqi_docs (session_id) WHERE tsv IS NULL",
    # Match spans as FTS5 highlight() counts them: every instance of every pattern (instances
    # may overlap), overlapping ones merged. Used only for queries where summing
    # non-overlapping counts would differ (MatchPlan.simple is false).
    """CREATE FUNCTION sqi_span_count(norm text, patterns text[]) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
    DECLARE
        starts integer[] := '{}';
        ends integer[] := '{}';
        pattern text;
        found integer;
        base integer;
        spans integer := 0;
        span_end integer := -1;
        s integer;
        e integer;
    BEGIN
        FOREACH pattern IN ARRAY patterns LOOP
            base := 0;
            LOOP
                found := strpos(substr(norm, base + 1), pattern);
                EXIT WHEN found = 0;
                starts := starts || (base + found);
                ends := ends || (base + found + length(pattern));
                base := base + found;
            END LOOP;
            IF base = 0 THEN
                RETURN 0;
            END IF;
        END LOOP;
        FOR s, e IN SELECT u.s, u.e FROM unnest(starts, ends) AS u(s, e) ORDER BY 1, 2 LOOP
            IF s >= span_end THEN
                spans := spans + 1;
                span_end := e;
            ELSIF e > span_end THEN
                span_end := e;
            END IF;
        END LOOP;
        RETURN spans;
    END $$""",
)

_RELEVANCE: Final = (
    # Derived data: the rows written before this migration lack token counts and titles, so
    # the index is emptied and the next update rebuilds it.
    "TRUNCATE sqi_docs, sqi_sessions",
    "UPDATE sqi_state SET token = NULL, source = NULL, generation = generation + 1",
    "ALTER TABLE sqi_docs ADD COLUMN ntokens integer NOT NULL DEFAULT 0",
    "ALTER TABLE sqi_docs ADD COLUMN title boolean NOT NULL DEFAULT false",
    "ALTER TABLE sqi_state ADD COLUMN documents bigint NOT NULL DEFAULT 0",
    "ALTER TABLE sqi_state ADD COLUMN tokens bigint NOT NULL DEFAULT 0",
    """CREATE TABLE sqi_terms (
        term text COLLATE "C" PRIMARY KEY,
        docs bigint NOT NULL)""",
)

_TEAM: Final = (
    # A team database (sessionquery.team): pushes write these rows themselves, tagged with
    # the session's workspace and machine (``ws``/``mid``, ids of ``sq_workspaces`` and
    # ``sq_machines``) so that row-level security filters them; the statistics of relevance
    # search are kept per workspace and machine (each machine adds to its own rows only, and
    # a role reads the sums over the workspaces it may see). An index of another corpus
    # leaves all of this empty or NULL.
    "ALTER TABLE sqi_sessions ADD COLUMN ws integer, ADD COLUMN mid integer",
    "ALTER TABLE sqi_docs ADD COLUMN ws integer, ADD COLUMN mid integer",
    "CREATE INDEX sqi_sessions_ws ON sqi_sessions (ws)",
    """CREATE TABLE sqi_team_terms (
        term text COLLATE "C" NOT NULL,
        ws integer NOT NULL,
        mid integer NOT NULL,
        docs bigint NOT NULL,
        PRIMARY KEY (term, ws, mid))""",
    """CREATE TABLE sqi_team_counts (
        ws integer NOT NULL,
        mid integer NOT NULL,
        documents bigint NOT NULL,
        tokens bigint NOT NULL,
        PRIMARY KEY (ws, mid))""",
)

_NEWEST: Final = (
    # The listing order (newest ``created_at`` first, ties by id): the newest page of a large
    # index is read from the index, not sorted out of every visible row. Row-level security's
    # predicate (sessionquery.team) is then a filter on the rows read in this order.
    "CREATE INDEX sqi_sessions_newest ON sqi_sessions (created_at DESC, id)",
)

_MAXTF: Final = (
    # Each document's most repeated token count (``maxtf``): a query of P phrases has at most
    # P * maxtf match spans there, so a common word's best sessions are looked for among the
    # documents of the highest maxtf first (.walk). Rows written before are counted here
    # (a team index cannot be rebuilt by an update: pushes wrote it); writers supply it.
    "ALTER TABLE sqi_docs ADD COLUMN maxtf integer",
    """CREATE FUNCTION pg_temp.sqi_max_tf(norm text) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT AS $$
        SELECT coalesce(max(n), 0)::integer FROM (SELECT count(*) AS n
        FROM unnest(string_to_array(btrim(norm, ' '), '  ')) AS w GROUP BY w COLLATE "C") AS c
    $$""",
    "UPDATE sqi_docs SET maxtf = pg_temp.sqi_max_tf(norm)",
    "DROP FUNCTION pg_temp.sqi_max_tf(text)",
    "ALTER TABLE sqi_docs ALTER COLUMN maxtf SET NOT NULL",
    "CREATE INDEX sqi_docs_maxtf ON sqi_docs (maxtf)",
)

IMPACT_C2: Final = K1 * (1.0 - B)
"""The BM25 constant ``c2`` the impact key is computed with (the kernel's)."""
IMPACT_AVGDL: Final = 32.0
"""The average document length the impact key assumes while the index is empty."""
IMPACT_RETUNE: Final = 1.5
"""The key is computed again when the average length has moved this factor away from it."""


def impact_key(alias: str, c3: float) -> str:
    """A document's impact key: ``maxtf / (maxtf + IMPACT_C2 + c3 * ntokens)``, in float8
    (the columns of ``alias``, when given), ``c3`` being ``k1 * b / avgdl`` for the average
    length the index was keyed for (``sqi_state.impact_c3``). No term can score more there
    than the kernel's ``c1`` times this key, times ``max(1, IMPACT_C2 / c2', c3 / c3')`` for
    the search's own ``c2'`` and ``c3'`` (:mod:`.impact`)."""
    prefix = f"{alias}." if alias else ""
    maxtf, ntokens = f"{prefix}maxtf::float8", f"{prefix}ntokens::float8"
    return f"({maxtf} / ({maxtf} + {IMPACT_C2!r}::float8 + {float(c3)!r}::float8 * {ntokens}))"


def tune_impact(conn: psycopg.Connection[Any]) -> bool:
    """Key the events' impact index (``sqi_docs_impact``) for the corpus's average length
    when it has none yet or the length has moved :data:`IMPACT_RETUNE` away from its key
    (the owner of the tables only; others leave it as it is); whether it was rebuilt.

    The key's constant is recorded in ``sqi_state.impact_c3`` in the same transaction as
    the index, so a search reads the key the index holds.
    """
    row = conn.execute(
        "SELECT s.impact_c3, pg_has_role(current_user, c.relowner, 'USAGE') "
        "FROM sqi_state AS s, pg_class AS c WHERE c.oid = 'sqi_docs'::regclass"
    ).fetchone()
    if row is None or not row[1]:
        return False
    counts = conn.execute(
        "SELECT (SELECT documents FROM sqi_state) + coalesce(sum(documents), 0), "
        "(SELECT tokens FROM sqi_state) + coalesce(sum(tokens), 0) FROM sqi_team_counts"
    ).fetchone()
    documents, tokens = (int(counts[0] or 0), int(counts[1] or 0)) if counts else (0, 0)
    avgdl = tokens / documents if documents and tokens else IMPACT_AVGDL
    wanted = K1 * B / avgdl
    if row[0] is not None and 1 / IMPACT_RETUNE <= float(row[0]) / wanted <= IMPACT_RETUNE:
        return False
    conn.execute("DROP INDEX IF EXISTS sqi_docs_impact")
    conn.execute(
        f"CREATE INDEX sqi_docs_impact ON sqi_docs ({impact_key('', wanted)} DESC) WHERE NOT title"
    )
    conn.execute("UPDATE sqi_state SET impact_c3 = %s", (wanted,))
    return True


_IMPACT: Final = (
    # Events in the order of their impact key (the index is made by tune_impact, for the
    # corpus's average length) and the titles' own full-text index: a relevance search of
    # common words scores the matching titles and the events that can score most, and stops
    # when the events left cannot change its page (.impact).
    "ALTER TABLE sqi_state ADD COLUMN impact_c3 double precision",
    "CREATE INDEX sqi_docs_titles ON sqi_docs USING gin (tsv) WHERE title",
)

TEAM_SOURCE: Final = "team"
"""``sqi_state.source`` of a team database: pushes write the index, searches never sync it."""

MIGRATIONS: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    ("m001_initial", _TABLES),
    ("m002_relevance", _RELEVANCE),
    ("m003_team", _TEAM),
    ("m004_newest", _NEWEST),
    ("m005_maxtf", _MAXTF),
    ("m006_impact", _IMPACT),
)
SCHEMA_VERSION: Final = len(MIGRATIONS)

_DROP: Final = (
    "DROP TABLE IF EXISTS sqi_team_terms",
    "DROP TABLE IF EXISTS sqi_team_counts",
    "DROP TABLE IF EXISTS sqi_terms",
    "DROP TABLE IF EXISTS sqi_docs",
    "DROP TABLE IF EXISTS sqi_sessions",
    "DROP TABLE IF EXISTS sqi_state",
    "DROP FUNCTION IF EXISTS sqi_span_count(text, text[])",
    "DELETE FROM sqi_migrations",
)


def _is_current(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute("SELECT to_regclass('sqi_migrations') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return False
    applied = {str(r[0]) for r in conn.execute("SELECT name FROM sqi_migrations")}
    return applied == {name for name, _ in MIGRATIONS}


def ensure_schema(conn: psycopg.Connection[Any]) -> None:
    """Create or migrate the index tables (the caller commits).

    An index written by a newer version (unknown migrations) is derived data: it is dropped
    and rebuilt rather than refused.
    """
    if _is_current(conn):
        return  # the common case takes no lock: a long update elsewhere never delays an open
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (INDEX_LOCK,))
    conn.execute(
        "CREATE TABLE IF NOT EXISTS sqi_migrations (name text PRIMARY KEY, "
        "applied_at timestamptz NOT NULL DEFAULT now())"
    )
    applied = {str(row[0]) for row in conn.execute("SELECT name FROM sqi_migrations")}
    if applied - {name for name, _ in MIGRATIONS}:
        for statement in _DROP:
            conn.execute(statement)
        applied = set()
    for name, statements in MIGRATIONS:
        if name not in applied:
            for statement in statements:
                conn.execute(statement)
            conn.execute("INSERT INTO sqi_migrations (name) VALUES (%s)", (name,))
