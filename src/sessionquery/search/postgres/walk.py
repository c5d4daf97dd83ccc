"""Session search of common words on PostgreSQL without ranking every match (``phrase`` and
``words``).

Sessions rank by their best event's match spans first (SPEC §7), so a word that half the
documents hold made every search of it count and rank all of them. Every stored document
keeps ``maxtf``, how often its most repeated token occurs (indexed), and a query of ``P``
phrases has at most ``P * maxtf`` spans in a document. So one statement
(:func:`~.sql.session_search_sql` with ``deepest``) looks at the documents of the highest
``maxtf`` in that order, at most :data:`WINDOW` for each candidate wanted, and reads the
first ``depth`` candidates among them; ``x``, the lowest ``maxtf`` of what it looked at,
bounds every candidate left out (at most ``P * x`` spans), and:

* the events of more than ``P * x`` spans are all among those read, so ranking them gives
  exactly the sessions whose best event has more than ``P * x`` spans, each with that best
  event, in the §7 order;
* every other session's best event has at most ``P * x`` spans and ranks after all of them.
  When they fill the rows asked for (``lim``, from ``off``), those rows are the answer; when
  the candidates read are all there are (``x`` is 0), the rows are the answer too.

Otherwise the next depth of :data:`DEPTHS` is tried (unless the share of candidates among
the documents looked at says that filling it would read more than half the candidates, or
cost more than ranking every match: :data:`LOOK_COST`), and after the last every match is
ranked as before. Only a query whose rarest lexeme at least :data:`WALK_DOCUMENTS` visible
documents hold takes this path (fewer candidates are ranked at once, from the full-text
index, as fast).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import psycopg

from sessionquery.search.postgres.relevance import stored_counts
from sessionquery.search.postgres.sql import session_search_sql
from sessionquery.search.postgres.tokens import MatchPlan
from sessionquery.search.predicates import CompiledFilters

__all__ = ["DEPTHS", "LOOK_COST", "WALK_DOCUMENTS", "ranked", "ranked_sessions"]

DEPTHS: Final = (64, 256, 4096)
"""Candidates read, highest ``maxtf`` first, before every match is ranked (a depth of at least
half the candidates is not tried: ranking them all costs about the same)."""
WINDOW: Final = 16
"""Documents looked at in ``maxtf`` order for each candidate a depth reads, at most: the
candidates of a phrase of common words are a few of the documents holding its words, and
looking through most of those (each one's tsvector read) to fill a depth cost more than
ranking every match."""
LOOK_COST: Final = 16
"""A document looked at in ``maxtf`` order costs about this many times one ranked through the
full-text index: the most repeated tokens are those of the longest documents (at 10 million
events, a depth of 4,096 for ``error`` looked at 21,156 documents in 1.5 s; ranking its
43,278 matches took 0.15 s). A depth expected to look at more than the matches over this is
not tried."""
WALK_DOCUMENTS: Final = 8192
"""The rarest lexeme of a query held by at least this many documents takes the depths. Below
it, ranking every candidate costs a few tens of milliseconds at most, and a depth that does
not fill the page (the word is rarely its documents' most repeated one) is wasted work."""


def ranked_sessions(
    conn: psycopg.Connection[Any],
    plan: MatchPlan,
    filters: CompiledFilters,
    params: Mapping[str, Any],
) -> list[tuple[Any, ...]]:
    """The rows of :func:`~.sql.session_search_sql` for ``params`` (``lim`` rows from
    ``off``), read from the candidates of the highest ``maxtf`` when the words are common."""
    return ranked(conn, plan, filters, params)[0]


def ranked(
    conn: psycopg.Connection[Any],
    plan: MatchPlan,
    filters: CompiledFilters,
    params: Mapping[str, Any],
) -> tuple[list[tuple[Any, ...]], int]:
    """:func:`ranked_sessions` and the depth that answered (0: every match was ranked)."""
    counts = stored_counts(conn, plan.lexemes)
    held = min((counts.get(term, 0) for term in plan.lexemes), default=0)
    if held >= WALK_DOCUMENTS:
        wanted = int(params["lim"])
        deepest = session_search_sql(plan, filters, deepest=True)
        share = 1.0  # of the documents looked at that are candidates (none looked at yet)
        for depth in DEPTHS:
            looked = min(depth / share, depth * WINDOW) if share else depth * WINDOW
            if 2 * depth > share * held or LOOK_COST * looked > held:
                break  # about as many as there are, or as ranking them all cost: rank them all
            scan = depth * WINDOW
            rows = conn.execute(
                deepest, {**params, "depth": depth, "scan": scan, "phrases": len(plan.phrases)}
            ).fetchall()
            x, hits, seen = (int(value) for value in rows[0][-3:])
            found = [row[:-3] for row in rows if row[0] is not None]
            if x == 0 or len(found) >= wanted:
                return found, depth  # x is 0: every candidate was read
            share = hits / max(seen, 1)
    return conn.execute(session_search_sql(plan, filters), params).fetchall(), 0
