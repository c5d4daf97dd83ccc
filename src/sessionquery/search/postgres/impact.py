"""Relevance session search of common words on PostgreSQL without scoring every match.

A session's relevance is its best event's score plus its best title's (the kernel,
:mod:`sessionquery.search.relevance`), so a word that half the documents hold made every
search of it score all of them, and scoring is the expensive part (a candidate's term counts
are read from its normal form). Every stored event has an *impact key*
(:func:`~.schema.impact_key`, indexed, made for the corpus's average length by
:func:`~.schema.tune_impact`): no term scores more in an event than ``c1 * key * slack``
(:func:`slack` covers a corpus whose average length has moved since). A relevance search of
common words then:

1. scores exactly every title holding a term (titles have their own full-text index, and
   are few), every document holding one of its *rare* terms (the most selective, while they
   hold at most :data:`RARE_DOCUMENTS` visible documents together or :data:`RARE_SHARE` of
   those holding a term), and, with no rare term, every document holding all the question's
   words when those are few (only they can hold the whole question as a phrase);
2. reads the events holding one of the other terms in key order, ``depth`` of them
   (:data:`DEPTHS`), scoring them. Every event left unread has a key of at most the last one
   read (or, when fewer than ``depth`` were found among the events looked at, of the last
   one looked at), so it scores at most ``factor * c1 * key * slack``: ``factor`` is the
   most the other terms can weigh together (with their coverage boost, and the phrase boost
   when the phrase's holders were not scored);
3. a session scores at most its best event read (or the unread events' bound, if higher)
   plus its best title (every title holding a term was read). For ``lim`` rows from ``off``,
   let ``floor`` be the ``off + lim``-th best score of what was read: when the bound stays
   below it, every session of the answer is among those whose bound reaches ``floor``, and
   ranking only those, every document of theirs exactly as before, gives the same rows as
   ranking every match.

Otherwise the next depth is read; when none closes the gap (or one leaves it wider than
:data:`_HOPELESS`), every match is ranked as before. A question takes this path only when its
terms hold at least :data:`WALK_DOCUMENTS` visible documents, and more than its first depth
would look at (:data:`SCAN_RATIO`). The rows and their order are
those of :func:`~.relevance.session_relevance_sql` in every case.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import psycopg

from sessionquery.search.postgres.relevance import (
    Stored,
    match_predicate,
    read_totals,
    scored_sql,
    session_relevance_sql,
    stored_counts,
)
from sessionquery.search.postgres.schema import IMPACT_C2, impact_key
from sessionquery.search.postgres.sql import COLUMNS, oversized_or
from sessionquery.search.postgres.tokens import lexeme
from sessionquery.search.predicates import CompiledFilters
from sessionquery.search.relevance import PHRASE_FACTOR, RelevancePlan

__all__ = [
    "DEPTHS",
    "MAX_SCAN",
    "MAX_SESSIONS",
    "MAX_SLACK",
    "RARE_DOCUMENTS",
    "SCAN_RATIO",
    "WALK_DOCUMENTS",
    "ranked",
    "ranked_sessions",
    "slack",
]

WALK_DOCUMENTS: Final = 8192
"""Questions whose terms hold at least this many visible documents (summed) may walk; below,
scoring every candidate costs a few tens of milliseconds at most."""
RARE_DOCUMENTS: Final = 4096
"""The most selective terms are scored exactly while their documents number at most this."""
RARE_SHARE: Final = 0.25
"""... or at most this share of the documents holding a term (a rarer word of several common
ones: scoring its documents costs less than a walk that bounds nothing)."""
DEPTHS: Final = (1024, 4096)
"""Events read in key order; after the last depth, every candidate is ranked."""
MAX_SCAN: Final = 65536
"""Documents looked at in key order for one depth's candidates, at most (the expected share
of candidates among them sets how many: a scope holding few is not searched for through the
whole index)."""
SCAN_RATIO: Final = 0.5
"""A question walks only when its first depth looks at fewer documents than this times the
documents holding its terms: the key's order is every word's, so a word that few of many
documents hold is met only far down it, and scoring every candidate costs less (at 10
million events, "error": 43,278 documents, a first depth looking at 42,700; walked 0.26 s,
every match ranked 0.19 s)."""
MAX_SESSIONS: Final = 1024
"""Sessions ranked in full at most before the last depth; more means the bounds are not
tight yet. After the last depth, more are ranked while their documents number less than half
the matches (:func:`_few_documents`)."""
MAX_SLACK: Final = 2.0
"""The walk is not tried over an index keyed for a corpus this much shorter on average than
the one searched (its bounds would be this much looser; the owner's next open or ``team init``
keys it again, :func:`~.schema.tune_impact`)."""
_HOPELESS: Final = 1.25
"""A depth whose bounds exceed the page's floor by more than this factor ends the walk."""
_MARGIN: Final = 1.0 + 1e-9
"""The bounds are widened by this: scores are float sums, the bounds real-valued."""


@dataclass(frozen=True, slots=True)
class _Walk:
    """How one search walks.

    Attributes:
        rare: the first ``rare`` terms are scored exactly in every document holding them.
        phrases: every document that may hold the whole question as a phrase (all its
            words) is scored exactly.
        terms: the terms walked (plan positions), the rest.
        factor: the most the terms walked weigh together in an event left unread (the
            coverage boost included, and the phrase boost when it may apply).
        keyed: the impact index's constant (``sqi_state.impact_c3``).
        share: about which share of the documents hold a term walked.
        matches: the documents holding a term (what ranking every match scores).
    """

    rare: int
    phrases: bool
    terms: tuple[int, ...]
    factor: float
    keyed: float
    share: float
    matches: int


def _walk(  # noqa: PLR0917
    plan: RelevancePlan, rare: int, phrases: bool, keyed: float, held: Sequence[int], documents: int
) -> _Walk:
    """The walk of a plan, ``held`` documents holding each term (``documents`` in all)."""
    rest = tuple(range(rare, len(plan.terms)))
    weights = sorted((plan.weights[i] for i in rest), reverse=True)
    factor = max(sum(weights[:m]) * plan.coverage[m - 1] for m in range(1, len(rest) + 1))
    if plan.phrase and not rare and not phrases:
        factor *= PHRASE_FACTOR  # an event left unread may hold the phrase
    share = _share(held, rare, documents)
    return _Walk(rare, phrases, rest, factor, keyed, share, sum(held))


def _share(held: Sequence[int], rare: int, documents: int) -> float:
    """About which share of the ``documents`` hold a term walked (those from ``rare`` on)."""
    walked = sum(held[rare:])
    return walked / max(documents, walked, 1)


def _scan(depth: int, share: float) -> int:
    """Documents looked at in key order for ``depth`` candidates of terms ``share`` of the
    documents hold (half as many again as expected, at most :data:`MAX_SCAN`)."""
    return min(MAX_SCAN, max(depth, math.ceil(depth * 1.5 / share))) if share else MAX_SCAN


def _walk_sql(plan: RelevancePlan, filters: CompiledFilters, walk: _Walk) -> str:
    """The ``depth + 1`` candidates of highest key among the ``scan`` events of highest key,
    scored, and the last of those events: one row per session, ``session_id, title, best
    score, candidates, lowest key, last key``."""
    key = impact_key("d", walk.keyed)
    source = (
        f"(SELECT d.*, {key} AS k, row_number() OVER (ORDER BY {key} DESC) AS rn "
        f"FROM sqi_docs AS d WHERE NOT d.title ORDER BY {key} DESC LIMIT %(scan)s) AS d"
    )
    if filters.session_predicates:
        source += " JOIN sqi_sessions AS s ON s.id = d.session_id"
    hit = (
        f"({match_predicate(plan, 'wtsq', walk.terms, every=False)} "
        f"AND NOT (d.session_id = ANY(%(live)s::text[])){filters.where(COLUMNS)})"
    )
    scored = scored_sql(
        plan,
        filters,
        "",
        source=source,
        condition=f"({hit} OR d.rn = %(scan)s)",
        tail=" ORDER BY d.k DESC LIMIT %(depth)s + 1",
        carry=(("d.k", "k"), (hit, "hit"), ("d.rn = %(scan)s", "last")),
    )
    return (
        "SELECT x.session_id, x.title, max(x.sc) FILTER (WHERE x.hit), "
        "count(*) FILTER (WHERE x.hit), min(x.k) FILTER (WHERE x.hit), "
        f"min(x.k) FILTER (WHERE x.last) FROM ({scored}) AS x GROUP BY x.session_id, x.title"
    )


def _exact_sql(plan: RelevancePlan, filters: CompiledFilters, rare: int, phrases: bool) -> str:
    """Every document holding one of the first ``rare`` terms (or, with ``phrases``, every
    one that may hold the whole question as a phrase: all its words) and every title holding
    any term, scored; rows as a walk's."""
    live = f" AND NOT (d.session_id = ANY(%(live)s::text[])){filters.where(COLUMNS)}"
    titles = match_predicate(plan, "rtsq", range(len(plan.terms)), every=False)
    parts = [scored_sql(plan, filters, "", condition=f"d.title AND {titles}{live}")]
    if rare:
        match = match_predicate(plan, "etsq", range(rare), every=False)
        parts.append(scored_sql(plan, filters, "", condition=f"NOT d.title AND {match}{live}"))
    elif phrases:
        match = oversized_or("d.tsv @@ %(ptsq)s::tsquery", "strpos(d.norm, %(rphrase)s) > 0")
        parts.append(scored_sql(plan, filters, "", condition=f"NOT d.title AND {match}{live}"))
    union = " UNION ALL ".join(f"({part})" for part in parts)
    return (
        "SELECT x.session_id, x.title, max(x.sc), count(*), NULL::float8, NULL::float8 "
        f"FROM ({union}) AS x GROUP BY x.session_id, x.title"
    )


def _tsquery(plan: RelevancePlan, terms: Sequence[int]) -> str:
    return " | ".join(f"'{lexeme(plan.terms[i])}'" for i in terms)


def slack(constants: tuple[float, float, float], keyed: float) -> float:
    """How much more than ``c1 * key`` a term can score in an event of impact key ``key``,
    for a search of BM25 ``constants`` ``(c1, c2, c3)`` over an index keyed with ``keyed``
    (``sqi_state.impact_c3``): the key's ``c2`` and ``c3`` over the search's (a corpus whose
    average length is not the key's)."""
    _c1, c2, c3 = constants
    return max(1.0, IMPACT_C2 / c2, keyed / c3)


class _Reading:
    """What the documents read so far say: each session's best event and best title read
    (exact scores; every title is read), and the most an unread event can score."""

    def __init__(self, plan: RelevancePlan, walk: _Walk) -> None:
        self._unit = walk.factor * plan.constants[0] * slack(plan.constants, walk.keyed)
        self._unit *= _MARGIN
        self.best: tuple[dict[str, float], dict[str, float]] = ({}, {})  # events, titles
        self._total: dict[str, float] = {}  # each session's best event read + best title
        self.unread = self._unit  # before any event is read (no key exceeds 1)

    def add(self, rows: Sequence[tuple[Any, ...]], depth: int | None = None) -> None:
        """Take the rows of :func:`_exact_sql`, or of :func:`_walk_sql` read at ``depth``."""
        # One pass and no call per row: a common word's titles are tens of thousands of rows
        # (45,235 for the most common word at 10 million events, where converting each value
        # read made this loop half of the search's own CPU outside the driver).
        hits, lowest, last = 0, 1.0, None
        events, titles = self.best
        total = self._total
        for sid, title, score, found, low, end in rows:
            hits += found
            if low is not None and low < lowest:
                lowest = low
            if end is not None:
                last = end
            if score is None or not score > 0.0:
                continue
            if title:
                if score > titles.get(sid, 0.0):
                    titles[sid] = score
                    total[sid] = score + events.get(sid, 0.0)
            elif score > events.get(sid, 0.0):
                events[sid] = score
                total[sid] = score + titles.get(sid, 0.0)
        if depth is None:
            return
        # Every event of a higher key than the last read was read. With fewer candidates than
        # asked for, the events looked at were all read, and those not looked at have a key
        # of at most the last of them (or there are none).
        if last is not None:
            edge = float(last)
        elif hits > depth:
            edge = float(lowest)
        else:
            edge = 0.0
        self.unread = self._unit * edge

    def floor(self, wanted: int) -> float:
        """The ``wanted``-th best session score read (0.0 with fewer sessions)."""
        best = heapq.nlargest(wanted, self._total.values())
        return best[-1] if len(best) >= wanted else 0.0

    def candidates(self, floor: float) -> list[str]:
        """The sessions read whose score may reach ``floor``."""
        unread = self.unread
        if unread >= floor:
            return sorted(self._total)  # an unread event alone may reach it
        # A session's bound is its best title plus its best event read or, when higher, the
        # unread events' bound: its score read, or its title plus that bound (the same sums).
        return sorted(
            {s for s, score in self._total.items() if score >= floor}
            | {s for s, title in self.best[1].items() if title + unread >= floor}
        )


def _few_documents(conn: psycopg.Connection[Any], sessions: Sequence[str], walk: _Walk) -> bool:
    """Whether the ``sessions`` hold fewer documents than half the walk's matches: ranking
    them (every document of theirs) then costs less than ranking every match (at 10 million
    events, the most common word's 1,186 sessions left after the last depth: 0.4 s in all
    instead of 1.9 s)."""
    row = conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM sqi_docs WHERE session_id = ANY(%(s)s::text[]) "
        "LIMIT %(most)s) AS x",
        {"s": list(sessions), "most": walk.matches // 2},
    ).fetchone()
    return row is not None and int(row[0]) < walk.matches // 2


def _few_phrases(
    conn: psycopg.Connection[Any],
    plan: RelevancePlan,
    counts: Mapping[str, int],
    documents: int,
) -> bool:
    """Whether at most :data:`RARE_DOCUMENTS` documents hold every word of the question (so
    those that may hold it as a phrase are few enough to score exactly): surely when one of
    its words is that rare; else counted, up to one more, when independent words would be
    held together that rarely."""
    held = [counts.get(lexeme(word), 0) for word in plan.phrase]
    if min(held, default=0) <= RARE_DOCUMENTS:
        return True
    if math.prod(n / max(documents, 1) for n in held) * documents > RARE_DOCUMENTS:
        return False
    row = conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM sqi_docs AS d WHERE d.tsv @@ %(ptsq)s::tsquery "
        "LIMIT %(most)s) AS x",
        {"ptsq": _all_words(plan), "most": RARE_DOCUMENTS + 1},
    ).fetchone()
    return row is not None and int(row[0]) <= RARE_DOCUMENTS


def _all_words(plan: RelevancePlan) -> str:
    """The tsquery of every word of the question (its phrase)."""
    return " & ".join(sorted({f"'{lexeme(word)}'" for word in plan.phrase}))


def ranked_sessions(
    conn: psycopg.Connection[Any],
    plan: RelevancePlan,
    filters: CompiledFilters,
    params: Mapping[str, Any],
    stored: Stored | None = None,
) -> list[tuple[Any, ...]]:
    """The rows of :func:`~.relevance.session_relevance_sql` for ``params`` (``lim`` rows
    from ``off``), read through the impact key when the terms are common (``stored``: the
    search's stored statistics read so far, :class:`~.relevance.Stored`)."""
    return ranked(conn, plan, filters, params, stored)[0]


def ranked(
    conn: psycopg.Connection[Any],
    plan: RelevancePlan,
    filters: CompiledFilters,
    params: Mapping[str, Any],
    stored: Stored | None = None,
) -> tuple[list[tuple[Any, ...]], int]:
    """:func:`ranked_sessions` and the event depth that answered (0: every match was
    ranked)."""
    counts = stored_counts(conn, {lexeme(word) for word in (*plan.terms, *plan.phrase)}, stored)
    held = [counts.get(lexeme(term), 0) for term in plan.terms]
    if sum(held) >= WALK_DOCUMENTS:
        rare = _rare(held)
        documents, keyed = _index(conn, stored)
        # not keyed yet, or for documents of another length: the bounds would not be tight;
        # terms that few of the documents hold: met only far down the key's order
        short = _scan(DEPTHS[0], _share(held, rare, documents)) < SCAN_RATIO * sum(held)
        if (
            rare < len(held)
            and keyed is not None
            and slack(plan.constants, keyed) <= MAX_SLACK
            and short
        ):
            phrases = bool(plan.phrase) and not rare and _few_phrases(conn, plan, counts, documents)
            walk = _walk(plan, rare, phrases, keyed, held, documents)
            found = _bounded(conn, plan, filters, params, walk)
            if found is not None:
                return found
    return conn.execute(session_relevance_sql(plan, filters), params).fetchall(), 0


def _rare(held: Sequence[int]) -> int:
    """How many of the most selective terms (``held`` documents each, rarest first) are
    scored exactly: while they hold at most :data:`RARE_DOCUMENTS` documents together, or
    :data:`RARE_SHARE` of the documents holding a term (at 10 million events, "fix the failing
    test": 21,000 documents of "failing" scored and "fix" and "test" walked, 0.43 s, instead of
    a walk of all three that bounded nothing and ranking their 180,000 documents, 1.05 s)."""
    most = max(RARE_DOCUMENTS, RARE_SHARE * sum(held))
    rare = 0
    while rare < len(held) and sum(held[: rare + 1]) <= most:
        rare += 1
    return rare


def _index(conn: psycopg.Connection[Any], stored: Stored | None) -> tuple[int, float | None]:
    """Stored documents the connection may see (the index's and the team's counts), and the
    constant the impact index is keyed with (``None``: no index yet); read once a search
    (:func:`~.relevance.read_totals`)."""
    known = stored if stored is not None else Stored()
    if not known.read:
        read_totals(conn, known, set())
    return known.documents, known.keyed


def _bounded(
    conn: psycopg.Connection[Any],
    plan: RelevancePlan,
    filters: CompiledFilters,
    params: Mapping[str, Any],
    walk: _Walk,
) -> tuple[list[tuple[Any, ...]], int] | None:
    """The answer through the walk, or ``None`` when no depth bounds it."""
    rare = walk.rare
    bound = {
        **params,
        "wtsq": _tsquery(plan, walk.terms),
        "etsq": _tsquery(plan, range(rare)),
        "ptsq": _all_words(plan),
    }
    reading = _Reading(plan, walk)
    reading.add(conn.execute(_exact_sql(plan, filters, rare, walk.phrases), bound).fetchall())
    wanted = int(params["off"]) + int(params["lim"])
    for n, depth in enumerate(DEPTHS):
        if n or reading.unread >= reading.floor(wanted):  # no event read may be needed
            scan = _scan(depth, walk.share)
            sql = _walk_sql(plan, filters, walk)
            rows = conn.execute(sql, {**bound, "depth": depth, "scan": scan}).fetchall()
            reading.add(rows, depth)
        floor = reading.floor(wanted)
        if reading.unread and reading.unread >= floor:  # (no event unread: all were read)
            if 0.0 < floor * _HOPELESS < reading.unread:
                return None  # deeper reading would not close the gap
            continue  # a session none of whose events was read could still reach the page
        ranked = reading.candidates(floor)
        last = n == len(DEPTHS) - 1
        if len(ranked) > MAX_SESSIONS and not (last and _few_documents(conn, ranked, walk)):
            continue
        if not ranked:
            return [], depth
        sql = session_relevance_sql(plan, filters, only=True)
        return conn.execute(sql, {**params, "only": ranked}).fetchall(), depth
    return None
