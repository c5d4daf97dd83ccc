"""The statements a push runs on the team database's tables, one function per step.

Invariants: values are always bound parameters (only fixed column lists are joined into the
SQL); :func:`write_statistics` and :func:`record_changes` touch only rows of the pushing
machine (``mid``) except the two shared counters, which :func:`record_changes` updates as the
batch's last statements so that their row locks are held only until the commit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import psycopg

from sessionquery.team.rows import Delta

__all__ = [
    "DOC_COLUMNS",
    "EVENT_COLUMNS",
    "clean_pending",
    "insert_rows",
    "prune_journal",
    "record_changes",
    "write_index_sessions",
    "write_statistics",
]

EVENT_COLUMNS: Final = "session_id, seq, event_json"
"""The columns of the event rows a push copies (``ws`` and ``mid`` come from the session)."""
DOC_COLUMNS: Final = (
    "session_id, seq, type, time, surface, length, text, norm, tsv, ntokens, title, maxtf"
)
"""The columns of the index-document rows a push copies (``ws`` and ``mid`` likewise)."""
_STAGING: Final = (
    ("sq_events", "sq_push_events", EVENT_COLUMNS),
    ("sqi_docs", "sq_push_docs", DOC_COLUMNS),
)


def insert_rows(
    conn: psycopg.Connection[Any],
    mid: int,
    placed: Mapping[str, int | None],
    events: Sequence[str],
    docs: Sequence[str],
) -> None:
    """Insert event and index-document rows, given as ``COPY`` text
    (:func:`~.rows.copy_lines` of :data:`EVENT_COLUMNS` / :data:`DOC_COLUMNS` values) of
    sessions of machine ``mid`` whose workspaces ``placed`` holds (``{session id: ws}``).

    ``COPY`` goes into this connection's temporary tables (``COPY`` into a table under
    row-level security is not allowed), then one ``INSERT … SELECT`` each, which adds each
    row's workspace and machine and which the policies check row by row."""
    ids, wss = list(placed), list(placed.values())
    for (table, staging, columns), chunks in zip(_STAGING, (events, docs), strict=True):
        if not chunks:
            continue
        conn.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {staging} (LIKE {table}) ON COMMIT DELETE ROWS"
        )
        with conn.cursor() as cur, cur.copy(f"COPY {staging} ({columns}) FROM STDIN") as copy:
            for chunk in chunks:
                copy.write(chunk)
        staged = ", ".join(f"g.{column}" for column in columns.split(", "))
        conn.execute(
            f"INSERT INTO {table} ({columns}, ws, mid) SELECT {staged}, p.ws, %s "
            f"FROM {staging} AS g JOIN unnest(%s::text[], %s::int[]) AS p(id, ws) "
            "ON p.id = g.session_id",
            (mid, ids, wss),
        )


def write_index_sessions(
    conn: psycopg.Connection[Any],
    new: Sequence[tuple[object, ...]],
    changed: Sequence[tuple[object, ...]],
) -> None:
    """Insert (``new``) or update (``changed``) ``sqi_sessions`` rows, each
    ``(created_at, cwd, parent_session, header_json, ws, id, mid)``."""
    arrays = "%s::bigint[], %s::text[], %s::text[], %s::text[], %s::int[], %s::text[], %s::int[]"
    if new:
        conn.execute(
            "INSERT INTO sqi_sessions (created_at, cwd, parent_session, header_json, ws, "
            f"id, mid, revision, generation) SELECT u.*, '', 0 FROM unnest({arrays}) AS u",
            [list(column) for column in zip(*new, strict=True)],
        )
    if changed:
        conn.execute(
            "UPDATE sqi_sessions AS t SET created_at = u.c, cwd = u.w, parent_session = u.p, "
            f"header_json = u.h, ws = u.ws FROM unnest({arrays}) AS u(c, w, p, h, ws, id, mid) "
            "WHERE t.id = u.id AND t.mid = u.mid",
            [list(column) for column in zip(*changed, strict=True)],
        )


def write_statistics(
    conn: psycopg.Connection[Any], mid: int, deltas: Mapping[int | None, Delta]
) -> None:
    """Add a batch's changes to the machine's relevance statistics (``-1`` keys the sessions
    without a workspace): one statement for the counts and one for the terms of every
    workspace of the batch, then one deleting the terms no document holds any more."""
    keyed = sorted(
        (((-1 if ws is None else ws), delta) for ws, delta in deltas.items()),
        key=lambda item: item[0],
    )
    counts = [(ws, d.documents, d.tokens) for ws, d in keyed if d.documents or d.tokens]
    if counts:
        conn.execute(
            "INSERT INTO sqi_team_counts (ws, mid, documents, tokens) SELECT w, %s, n, t "
            "FROM unnest(%s::int[], %s::bigint[], %s::bigint[]) AS g(w, n, t) "
            "ON CONFLICT (ws, mid) DO UPDATE SET "
            "documents = sqi_team_counts.documents + excluded.documents, "
            "tokens = sqi_team_counts.tokens + excluded.tokens",
            (mid, *(list(column) for column in zip(*counts, strict=True))),
        )
    # Unsorted: the upsert below reads them in (term, ws) order (so two batches updating the
    # same rows lock them in one order and never deadlock).
    counted = [(ws, delta.terms) for ws, delta in keyed]
    # Lexemes go in unescaped: no token holds what COPY text reserves (tokens' invariants).
    terms = [f"{term}\t{ws}\t{n}\n" for ws, counts in counted for term, n in counts.items() if n]
    if not terms:
        return
    # COPY, then one upsert from the copy: binding tens of thousands of terms as array
    # parameters cost more than the upsert itself.
    conn.execute(
        'CREATE TEMP TABLE IF NOT EXISTS sq_push_terms (term text COLLATE "C", ws integer, '
        "docs bigint) ON COMMIT DELETE ROWS"
    )
    with conn.cursor() as cur, cur.copy("COPY sq_push_terms (term, ws, docs) FROM STDIN") as copy:
        copy.write("".join(terms))
    conn.execute(
        "INSERT INTO sqi_team_terms (term, ws, mid, docs) SELECT g.term, g.ws, %s, g.docs "
        "FROM sq_push_terms AS g ORDER BY g.term, g.ws "
        "ON CONFLICT (term, ws, mid) DO UPDATE SET docs = sqi_team_terms.docs + excluded.docs",
        (mid,),
    )
    if any(n < 0 for _ws, counts in counted for n in counts.values()):
        conn.execute(
            "DELETE FROM sqi_team_terms AS k USING sq_push_terms AS g "
            "WHERE g.docs < 0 AND k.term = g.term AND k.ws = g.ws AND k.mid = %s AND k.docs <= 0",
            (mid,),
        )


def record_changes(
    conn: psycopg.Connection[Any],
    mid: int,
    store_id: str,
    changed: Sequence[str],
    workspaces: Sequence[int | None],
) -> None:
    """Journal the batch's changed sessions (``workspaces``: each one's ``ws``, as just
    written) and bump the two shared counters (last)."""
    row = conn.execute(
        "UPDATE sq_store SET change_counter = change_counter + %s RETURNING change_counter",
        (len(changed),),
    ).fetchone()
    assert row is not None
    last = int(row[0])
    counters = list(range(last - len(changed) + 1, last + 1))
    ids = list(changed)
    conn.execute(
        "INSERT INTO sq_changes (change_id, session_id, ws, mid) SELECT c, s, w, %s "
        "FROM unnest(%s::bigint[], %s::text[], %s::int[]) AS u(c, s, w)",
        (mid, counters, ids, list(workspaces)),
    )
    conn.execute(
        "UPDATE sq_sessions AS t SET revision = u.c FROM unnest(%s::text[], %s::bigint[]) "
        "AS u(s, c) WHERE t.id = u.s",
        (ids, counters),
    )
    conn.execute(
        "UPDATE sqi_sessions AS t SET revision = %s || ':' || u.c, generation = u.c "
        "FROM unnest(%s::text[], %s::bigint[]) AS u(s, c) WHERE t.id = u.s",
        (store_id, ids, counters),
    )
    conn.execute("UPDATE sqi_state SET generation = generation + 1")


def prune_journal(conn: psycopg.Connection[Any], mid: int, keep: int) -> None:
    """Delete the machine's journal rows older than the newest ``keep`` changes; an index
    holding an older token then lists the store once (``sq_store.pruned_through``)."""
    with conn.transaction():
        row = conn.execute("SELECT change_counter FROM sq_store").fetchone()
        assert row is not None
        through = int(row[0]) - keep
        if through > 0:
            conn.execute(
                "DELETE FROM sq_changes WHERE mid = %s AND change_id <= %s", (mid, through)
            )
            conn.execute(
                "UPDATE sq_store SET pruned_through = %s WHERE pruned_through < %s",
                (through, through),
            )


def clean_pending(conn: psycopg.Connection[Any]) -> bool:
    """Empty the full-text indexes' pending lists (``sq_clean_pending``, made by ``team
    init``), so that no search reads through what a push added; whether the database has
    the function (one set up by an older version gets it when ``team init`` runs again)."""
    row = conn.execute("SELECT to_regprocedure('sq_clean_pending()') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return False
    conn.execute("SELECT sq_clean_pending()")
    return True
