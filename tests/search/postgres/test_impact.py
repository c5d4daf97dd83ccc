"""Relevance session search of common words through the impact key
(search.postgres.impact): the same pages as SQLite whatever depth answers, a shallow depth
answers when the best sessions stand out, and the key bounds what a term scores."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from postgres_support import PostgresServer
from search_sqlite_support import FakeCorpus, all_session_pages, build_corpus, corpus_of
from sessionquery.query.filters import CwdIn
from sessionquery.query.types import SessionSearchPage
from sessionquery.search.postgres import PostgresSearch, impact
from sessionquery.search.postgres import relevance as pg_relevance
from sessionquery.search.postgres.overlay import LiveOverlay
from sessionquery.search.postgres.schema import IMPACT_C2, IMPACT_RETUNE, impact_key, tune_impact
from sessionquery.search.postgres.sql import compile_filters
from sessionquery.search.postgres.tokens import tokens
from sessionquery.search.relevance import K1, B, plan_relevance
from sessionquery.search.sqlite import SqliteSearch

WORDS = ["the", "fix", "test", "fix", "the", "a", "rare", "fix.test"]


def shape(page: SessionSearchPage) -> list[tuple[object, ...]]:
    return [
        (h.record.header.id, h.record.live, h.best_match.seq, h.best_match.snippet)
        for h in page.items
    ]


def all_pages(search: object, corpus: object, query: str, **kw: object) -> list[object]:
    return list(all_session_pages(search, corpus, query, shape, match="relevance", **kw))


FILLER = [f"z{i}" for i in range(60)]
# words of the questions, then (often) words no question asks: events of many keys
docs = st.builds(
    lambda words, filler: " ".join(words + FILLER[:filler]),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
    st.sampled_from([0, 0, 1, 3, 10, 60]),
)


@pytest.fixture
def shallow(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every question may walk (small depths, as the corpora are small)."""
    monkeypatch.setattr(impact, "WALK_DOCUMENTS", 0)
    monkeypatch.setattr(impact, "RARE_DOCUMENTS", 1)
    monkeypatch.setattr(impact, "RARE_SHARE", 0.0)
    monkeypatch.setattr(impact, "DEPTHS", (1, 3, 8, 200))
    monkeypatch.setattr(impact, "_HOPELESS", math.inf)  # read on to the last depth
    monkeypatch.setattr(impact, "SCAN_RATIO", math.inf)  # however few documents hold them


@pytest.mark.slow
@pytest.mark.usefixtures("shallow")
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    persisted=st.dictionaries(
        st.sampled_from("mnopqrstuvw"), st.lists(docs, min_size=1, max_size=4), max_size=11
    ),
    live=st.dictionaries(st.sampled_from("LM"), st.lists(docs, min_size=1, max_size=3), max_size=1),
    query=st.one_of(
        st.sampled_from(["the", "fix", "test", "fix.test"]),  # one word: walked
        st.sampled_from(["rare fix", "test rare", "rare fix test"]),  # a rare word and others
        st.lists(st.sampled_from(WORDS), min_size=2, max_size=3).map(" ".join),
    ),
)
def test_pages_read_through_the_impact_key_equal_sqlite_pages(
    postgres_server: PostgresServer,
    persisted: dict[str, list[str]],
    live: dict[str, list[str]],
    query: str,
) -> None:
    # sessions of words no question asks, so that no asked word is held by half the
    # documents (its weight would be the floor, and every score alike)
    others = {f"x{i:02d}": ["z1 z2 z3", "z4", "z5 z6"] for i in range(16)}
    corpus = build_corpus({**persisted, **others}, live)
    dsn = postgres_server.new_schema()
    try:
        with PostgresSearch(dsn) as pg, SqliteSearch(":memory:") as lite:
            for kw in ({}, {"session_filters": [CwdIn(["/w"])]}):
                assert all_pages(pg, corpus, query, **kw) == all_pages(lite, corpus, query, **kw)
    finally:
        postgres_server.drop_schema(dsn)


@pytest.fixture
def dsn(postgres_dsn: str) -> Iterator[str]:
    yield postgres_dsn


def _ranked(dsn: str, query: str, lim: int, off: int = 0) -> tuple[list[str], int]:
    """The session ids of :func:`impact.ranked` and the depth that answered."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        overlay = LiveOverlay()
        plan = plan_relevance(
            tokens(query),
            pg_relevance.corpus_stats(conn, overlay, include_persisted=True),
            lambda words: pg_relevance.document_counts(
                conn, overlay, words, include_persisted=True
            ),
        )
        assert plan is not None
        compiled = compile_filters([], [], predicate_limit=14)
        params = {**pg_relevance.relevance_params(plan), "live": [], "lim": lim, "off": off}
        rows, depth = impact.ranked(conn, plan, compiled, params)
    return [str(row[0]) for row in rows], depth


def _expected(corpus: FakeCorpus, query: str, limit: int) -> list[str]:
    with SqliteSearch(":memory:") as lite:
        page = lite.search_sessions(corpus, query, limit=limit, match="relevance")
    return [h.record.header.id for h in page.items]


def test_a_shallow_depth_answers_when_the_best_sessions_stand_out(dsn: str, shallow: None) -> None:
    # two sessions of short events of the word, then many long ones that hold it once
    filler = " ".join(f"w{i}" for i in range(40))
    corpus = corpus_of(
        ("best", ["the", "the the"]),
        ("next", ["the the x"]),
        *[(f"long{i}", [f"the {filler}", filler]) for i in range(12)],
    )
    with PostgresSearch(dsn) as pg:
        pg.update(corpus)
    expected = _expected(corpus, "the", 14)
    assert expected[:2] == ["best", "next"]
    # the first three events read bound the rest below the second session
    assert _ranked(dsn, "the", lim=2) == (expected[:2], 3)
    # every session is on the page: only reading every event (the last depth) ends the walk
    assert _ranked(dsn, "the", lim=14) == (expected, 200)


@pytest.mark.parametrize(
    ("held", "rare"),
    [([3, 100], 1), ([40, 100], 0), ([10, 15, 100], 2), ([10, 30, 100], 1), ([5], 0), ([], 0)],
)
def test_the_rarer_words_of_common_ones_are_scored_exactly(
    monkeypatch: pytest.MonkeyPatch, held: list[int], rare: int
) -> None:
    monkeypatch.setattr(impact, "RARE_DOCUMENTS", 4)
    monkeypatch.setattr(impact, "RARE_SHARE", 0.25)
    # rarest first, while they hold at most 4 documents or a quarter of those holding a term
    assert impact._rare(held) == rare


def test_a_question_of_uncommon_words_ranks_every_match_at_once(dsn: str) -> None:
    corpus = corpus_of(("s", ["the the the"]), ("t", ["the fix"]))
    with PostgresSearch(dsn) as pg:
        pg.update(corpus)
    assert _ranked(dsn, "the", lim=2) == (_expected(corpus, "the", 2), 0)


def test_a_question_whose_words_few_of_many_documents_hold_ranks_every_match_at_once(
    dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(impact, "WALK_DOCUMENTS", 0)
    monkeypatch.setattr(impact, "RARE_DOCUMENTS", 0)
    monkeypatch.setattr(impact, "RARE_SHARE", 0.0)
    monkeypatch.setattr(impact, "DEPTHS", (2, 200))
    filler = [f"w{i} w{i + 1}" for i in range(60)]
    # "fix" in 3 of 63 documents: its 2 best would be looked for among about 63 in key
    # order, more than the 3 documents there are to score
    corpus = corpus_of(
        ("a", ["fix it", *filler[:20]]),
        ("b", ["fix fix", *filler[20:40]]),
        ("c", ["fix this", *filler[40:]]),
    )
    with PostgresSearch(dsn) as pg:
        pg.update(corpus)
    expected = _expected(corpus, "fix", 2)
    assert _ranked(dsn, "fix", lim=2) == (expected, 0)
    # without the rule, the same question walks, to the same answer
    monkeypatch.setattr(impact, "SCAN_RATIO", math.inf)
    answer, depth = _ranked(dsn, "fix", lim=2)
    assert answer == expected and depth > 0


def test_after_the_last_depth_sessions_of_few_documents_are_ranked_however_many(
    dsn: str, shallow: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    filler = " ".join(f"w{i}" for i in range(40))
    # three sessions of one short event each stand out; twelve of two long events follow
    corpus = corpus_of(
        *[(f"best{i}", ["the the"]) for i in range(3)],
        *[(f"long{i}", [f"the {filler}", f"the the {filler}"]) for i in range(12)],
    )
    with PostgresSearch(dsn) as pg:
        pg.update(corpus)
    expected = _expected(corpus, "the", 3)
    assert sorted(expected) == ["best0", "best1", "best2"]
    monkeypatch.setattr(impact, "DEPTHS", (1, 3))
    monkeypatch.setattr(impact, "MAX_SESSIONS", 0)  # before the last depth: never
    # the three sessions left after the last depth hold 3 of the 27 matches, fewer than
    # half: ranked at that depth (every match would be otherwise, depth 0)
    assert _ranked(dsn, "the", lim=3) == (expected, 3)
    with psycopg.connect(dsn, autocommit=True) as conn:
        (held,) = conn.execute(
            "SELECT count(*) FROM sqi_docs WHERE session_id = ANY(%s)", (["best0", "long0"],)
        ).fetchone() or (0,)
        assert held == 3

        def walk(matches: int) -> Any:
            return impact._Walk(0, False, (0,), 1.0, 1.0, 1.0, matches)

        assert impact._few_documents(conn, ["best0", "long0"], walk(8))  # 3 < 4
        assert not impact._few_documents(conn, ["best0", "long0"], walk(6))  # 3 of 3


def test_a_search_reads_each_stored_count_once_and_keeps_what_it_read(dsn: str) -> None:
    corpus = corpus_of(("s", ["the fix"]), ("t", ["the"]))
    with PostgresSearch(dsn) as pg:
        pg.update(corpus)
    with psycopg.connect(dsn, autocommit=True) as conn:
        stored = pg_relevance.Stored()
        assert pg_relevance.stored_counts(conn, ["the", "fix", "absent"], stored) == {
            "the": 2,
            "fix": 1,
        }
        assert stored.counts == {"the": 2, "fix": 1, "absent": 0}
        # what the search already read is not read again: a count it kept is the answer
        stored.counts["the"] = 7
        assert pg_relevance.stored_counts(conn, ["the", "fix"], stored) == {"the": 7, "fix": 1}
        # without the search's counts, the database answers
        assert pg_relevance.stored_counts(conn, ["the"]) == {"the": 2}


class _Counting(psycopg.Connection[Any]):
    """A connection that keeps the statements it ran."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.statements: list[str] = []

    def execute(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        self.statements.append(str(query))
        return super().execute(query, *args, **kwargs)


def test_a_search_reads_the_totals_and_its_words_counts_in_one_statement(dsn: str) -> None:
    corpus = corpus_of(("s", ["the fix"]), ("t", ["the"]))
    with PostgresSearch(dsn) as pg:
        pg.update(corpus)
    with _Counting.connect(dsn, autocommit=True) as conn:
        statements = conn.statements
        stored = pg_relevance.Stored()
        stats = pg_relevance.corpus_stats(
            conn, LiveOverlay(), include_persisted=True, stored=stored, words=["the", "absent"]
        )
        assert (stats.documents, stats.tokens) == (2, 3)
        assert stored.read and stored.counts == {"the": 2, "absent": 0}
        assert len(statements) == 1
        # the counts and the totals it read answer without another statement
        assert pg_relevance.stored_counts(conn, ["the", "absent"], stored) == {"the": 2}
        again = pg_relevance.corpus_stats(
            conn, LiveOverlay(), include_persisted=True, stored=stored
        )
        assert again == stats
        assert len(statements) == 1
        # a word it did not read is read alone
        assert pg_relevance.stored_counts(conn, ["fix"], stored) == {"fix": 1}
        assert len(statements) == 2


def test_a_question_of_common_words_scores_its_phrase_exactly_and_walks_the_rest(
    dsn: str, shallow: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(impact, "RARE_DOCUMENTS", 8)  # the phrase's few holders, not a word's
    monkeypatch.setattr(impact, "RARE_SHARE", 0.0)
    # the phrase in two short events; the words apart, once each, in long ones
    filler = " ".join(f"w{i}" for i in range(40))
    corpus = corpus_of(
        ("phrase", ["fix test"]),
        ("again", ["fix test", filler]),
        *[(f"apart{i}", [f"fix {filler}", f"test {filler}", filler]) for i in range(10)],
    )
    with PostgresSearch(dsn) as pg:
        pg.update(corpus)
    expected = _expected(corpus, "fix test", 12)
    assert set(expected[:2]) == {"phrase", "again"}
    assert _ranked(dsn, "fix test", lim=2) == (expected[:2], 1)
    # not scored apart, the phrase's holders leave the bound of an unread event doubled
    monkeypatch.setattr(impact, "RARE_DOCUMENTS", 1)
    monkeypatch.setattr(impact, "RARE_SHARE", 0.0)
    assert _ranked(dsn, "fix test", lim=2) == (expected[:2], 3)
    assert _ranked(dsn, "fix test", lim=12) == (expected, 200)


@given(
    repeats=st.integers(1, 10_000),
    share=st.floats(0.0, 1.0),
    extra=st.integers(0, 100_000),
    avgdl=st.floats(0.01, 100_000.0),
    keyed_for=st.floats(0.01, 100_000.0),
)
def test_no_term_scores_more_than_the_impact_key_allows(
    repeats: int, share: float, extra: int, avgdl: float, keyed_for: float
) -> None:
    # a term occurring tf times in an event whose most repeated token occurs `repeats` times,
    # in a corpus of average length `avgdl`, over an index keyed for `keyed_for`
    tf = max(1, round(repeats * share))
    length = repeats + extra
    c1, c2, c3 = K1 + 1.0, K1 * (1.0 - B), K1 * B / avgdl
    keyed = K1 * B / keyed_for
    score = (tf * c1) / (tf + (c2 + c3 * length))
    key = repeats / (repeats + IMPACT_C2 + keyed * length)
    assert score <= c1 * key * impact.slack((c1, c2, c3), keyed) * (1 + 1e-12)


def test_every_stored_event_scores_within_its_stored_key(dsn: str) -> None:
    texts = ["the", "the the the x", "x the", "the " + " ".join(f"w{i}" for i in range(300))]
    corpus = corpus_of(*[(f"s{i}", [text]) for i, text in enumerate(texts)])
    with PostgresSearch(dsn) as pg:
        pg.update(corpus)
    with psycopg.connect(dsn, autocommit=True) as conn:
        overlay = LiveOverlay()
        plan = plan_relevance(
            ["the"],
            pg_relevance.corpus_stats(conn, overlay, include_persisted=True),
            lambda words: pg_relevance.document_counts(
                conn, overlay, words, include_persisted=True
            ),
        )
        assert plan is not None
        keyed = _keyed(conn)
        assert keyed is not None
        scored = pg_relevance.scored_sql(plan, compile_filters([], [], predicate_limit=14), "")
        rows = conn.execute(
            f"SELECT x.sc, {impact_key('d', keyed)} FROM ({scored}) AS x JOIN sqi_docs AS d "
            "ON d.session_id = x.session_id AND d.seq = x.seq WHERE NOT x.title",
            pg_relevance.relevance_params(plan),
        ).fetchall()
    assert len(rows) == len(texts)
    weight, c1 = plan.weights[0], plan.constants[0]
    for score, key in rows:
        assert 0.0 < score <= weight * c1 * key * impact.slack(plan.constants, keyed) * (1 + 1e-12)


def test_the_migration_indexes_events_by_key_and_titles_by_word(dsn: str) -> None:
    with PostgresSearch(dsn):
        pass
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM sqi_migrations WHERE name = 'm006_impact'")
        conn.execute("DROP INDEX sqi_docs_impact")
        conn.execute("DROP INDEX sqi_docs_titles")
        conn.execute("ALTER TABLE sqi_state DROP COLUMN impact_c3")
    PostgresSearch(dsn).close()  # migrates
    with psycopg.connect(dsn, autocommit=True) as conn:
        names = {
            str(name)
            for (name,) in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'sqi_docs' "
                "AND schemaname = current_schema()"
            )
        }
    assert {"sqi_docs_impact", "sqi_docs_titles"} <= names


def _keyed(conn: psycopg.Connection[Any]) -> float | None:
    row = conn.execute("SELECT impact_c3 FROM sqi_state").fetchone()
    return None if row is None or row[0] is None else float(row[0])


def _index_definition(conn: psycopg.Connection[Any]) -> str:
    row = conn.execute(
        "SELECT indexdef FROM pg_indexes WHERE indexname = 'sqi_docs_impact' "
        "AND schemaname = current_schema()"
    ).fetchone()
    assert row is not None
    return str(row[0])


def test_the_key_follows_the_average_length_of_the_documents(dsn: str) -> None:
    with PostgresSearch(dsn):
        pass
    with psycopg.connect(dsn, autocommit=True) as conn:
        empty = _keyed(conn)
    assert empty == pytest.approx(K1 * B / 32.0)
    # documents of 300 tokens: a key for 32 would bound their scores 9 times too loosely
    long_text = " ".join(f"w{i}" for i in range(300))
    corpus = corpus_of(*[(f"s{i}", [long_text, long_text]) for i in range(3)])
    with PostgresSearch(dsn) as pg:
        pg.update(corpus)
    with psycopg.connect(dsn, autocommit=True) as conn:
        keyed = _keyed(conn)
        assert keyed is not None
        assert keyed == pytest.approx(K1 * B / 300.0)
        # the index holds the key the state names, so a search's expression uses it
        assert repr(keyed) in _index_definition(conn)
        # a length within the retuning factor leaves the index as it is
        conn.execute("UPDATE sqi_state SET impact_c3 = %s", (keyed * IMPACT_RETUNE * 0.99,))
        with conn.transaction():
            assert not tune_impact(conn)


def test_a_role_that_does_not_own_the_index_leaves_its_key_alone(
    postgres_server: PostgresServer,
) -> None:
    dsn = postgres_server.new_database()
    try:
        with PostgresSearch(dsn):
            pass
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("DROP ROLE IF EXISTS sq_impact_reader")
            conn.execute("CREATE ROLE sq_impact_reader LOGIN")
            conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO sq_impact_reader")
            conn.execute("UPDATE sqi_state SET impact_c3 = 1.0")  # far from any length
        reader = with_user(dsn, "sq_impact_reader")
        with psycopg.connect(reader, autocommit=True) as conn, conn.transaction():
            assert not tune_impact(conn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            assert _keyed(conn) == 1.0
            with conn.transaction():
                assert tune_impact(conn)  # the owner keys it again
            assert _keyed(conn) == pytest.approx(K1 * B / 32.0)
    finally:
        postgres_server.drop_database(dsn)
        with psycopg.connect(postgres_server.admin_dsn, autocommit=True) as conn:
            conn.execute("DROP ROLE IF EXISTS sq_impact_reader")


def with_user(dsn: str, user: str) -> str:
    params = conninfo_to_dict(dsn)
    params["user"] = user
    return make_conninfo("", **params)


scores = st.floats(min_value=0.0, max_value=50.0, allow_nan=False)


@given(
    events=st.dictionaries(st.sampled_from("abcdefgh"), scores, max_size=8),
    titles=st.dictionaries(st.sampled_from("abcdefgh"), scores, max_size=8),
    unread=scores,
    floor=scores,
)
def test_the_sessions_that_may_reach_the_floor_are_those_whose_bound_reaches_it(
    events: dict[str, float], titles: dict[str, float], unread: float, floor: float
) -> None:
    reading = impact._Reading.__new__(impact._Reading)
    reading.best = (events, titles)
    reading._total = {s: events.get(s, 0.0) + titles.get(s, 0.0) for s in {*events, *titles}}
    reading.unread = unread
    # a session's bound: its best title plus its best event read or the unread events' bound
    bound = {s: max(events.get(s, 0.0), unread) + titles.get(s, 0.0) for s in reading._total}
    assert reading.candidates(floor) == sorted(s for s, b in bound.items() if b >= floor)
