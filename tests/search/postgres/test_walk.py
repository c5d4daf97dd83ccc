"""Session search of common words from the candidates of the highest ``maxtf``
(search.postgres.walk): the same pages as SQLite whatever depth answers, and a shallow depth
answers when the best sessions repeat the word often enough."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from postgres_support import PostgresServer
from search_sqlite_support import all_session_pages, build_corpus, corpus_of
from sessionquery.match_modes import SEARCH_MODES, Words
from sessionquery.query.filters import CwdIn
from sessionquery.query.types import SessionSearchPage
from sessionquery.search.postgres import PostgresSearch, walk
from sessionquery.search.postgres.sql import compile_filters, match_params
from sessionquery.search.postgres.sync import max_repeats
from sessionquery.search.postgres.tokens import match_plan, tokens
from sessionquery.search.sqlite import SqliteSearch

WORDS = ["the", "fix", "test", "a", "fix.test"]


def shape(page: SessionSearchPage) -> list[tuple[object, ...]]:
    return [
        (h.record.header.id, h.record.live, h.best_match.seq, h.best_match.snippet)
        for h in page.items
    ]


def all_pages(search: object, corpus: object, query: str, **kw: object) -> list[object]:
    return list(all_session_pages(search, corpus, query, shape, **kw))


docs = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)


@pytest.fixture
def shallow(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every query takes the depths (small ones, as the corpora are small)."""
    monkeypatch.setattr(walk, "WALK_DOCUMENTS", 0)
    monkeypatch.setattr(walk, "DEPTHS", (1, 3, 8))
    monkeypatch.setattr(walk, "LOOK_COST", 0)


@pytest.mark.slow
@pytest.mark.usefixtures("shallow")
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    persisted=st.dictionaries(
        st.sampled_from("pqrstuvw"), st.lists(docs, min_size=1, max_size=4), max_size=8
    ),
    live=st.dictionaries(st.sampled_from("LM"), st.lists(docs, min_size=1, max_size=3), max_size=1),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=2).map(" ".join),
    match=st.sampled_from([m.name for m in SEARCH_MODES if not m.plan.ranked]),
    window=st.sampled_from([1, 2, walk.WINDOW]),
)
def test_pages_read_from_the_deepest_candidates_equal_sqlite_pages(
    postgres_server: PostgresServer,
    monkeypatch: pytest.MonkeyPatch,
    *,
    persisted: dict[str, list[str]],
    live: dict[str, list[str]],
    query: str,
    match: str,
    window: int,
) -> None:
    monkeypatch.setattr(walk, "WINDOW", window)  # small: the documents looked at end a depth
    corpus = build_corpus(persisted, live)
    dsn = postgres_server.new_schema()
    try:
        with PostgresSearch(dsn) as pg, SqliteSearch(":memory:") as lite:
            for kw in ({}, {"session_filters": [CwdIn(["/w"])]}):
                assert all_pages(pg, corpus, query, match=match, **kw) == all_pages(
                    lite, corpus, query, match=match, **kw
                )
    finally:
        postgres_server.drop_schema(dsn)


@pytest.fixture
def dsn(postgres_dsn: str) -> Iterator[str]:
    yield postgres_dsn


def _ranked(dsn: str, query: str, lim: int, off: int = 0) -> tuple[list[str], int]:
    """The session ids of :func:`walk.ranked_sessions` and the depth that answered."""
    plan = match_plan(query, Words.AS_PHRASE)
    assert plan is not None
    compiled = compile_filters([], [], predicate_limit=14)
    params = {**match_params(plan), "live": [], "lim": lim, "off": off}
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows, depth = walk.ranked(conn, plan, compiled, params)
    return [str(row[0]) for row in rows], depth


def _repeats(dsn: str, limit: int) -> list[str]:
    """Index ten sessions repeating "the" 2-6 times beside "the fix", and one holding it once;
    SQLite's first ``limit`` sessions for "the"."""
    corpus = corpus_of(
        *[(f"s{i}", ["the fix", " ".join(["the"] * (2 + i % 5))]) for i in range(10)],
        ("once", ["the"]),
    )
    with PostgresSearch(dsn) as pg, SqliteSearch(":memory:") as lite:
        pg.update(corpus)
        page = lite.search_sessions(corpus, "the", limit=limit)
    return [h.record.header.id for h in page.items]


def test_a_shallow_depth_answers_when_the_best_sessions_repeat_the_word(
    dsn: str, shallow: None
) -> None:
    expected = _repeats(dsn, 11)
    # the 3 highest maxtf (6, 6, 5): two sessions of more than 5 spans, not enough for three;
    # the 8 highest (down to 3): six sessions of more than 3
    assert _ranked(dsn, "the", lim=3) == (expected[:3], 8)
    assert _ranked(dsn, "the", lim=2, off=2) == (expected[2:4], 8)
    assert _ranked(dsn, "the", lim=2) == (expected[:2], 3)
    # eleven sessions: only ranking every match reaches the last one
    assert _ranked(dsn, "the", lim=11) == (expected, 0)


def test_a_depth_that_would_look_at_more_than_the_matches_cost_is_not_tried(
    dsn: str, shallow: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _repeats(dsn, 3)
    # 21 documents hold "the", and every document looked at is a candidate (a share of 1):
    # depth 8 is expected to look at 8 of them, which costs 8 * LOOK_COST
    monkeypatch.setattr(walk, "LOOK_COST", 1)
    assert _ranked(dsn, "the", lim=3) == (expected, 8)
    monkeypatch.setattr(walk, "LOOK_COST", 2)
    assert _ranked(dsn, "the", lim=2) == (expected[:2], 3)
    # 8 * 3 is more than the 21 matches: depth 3 is not tried, every match is ranked
    monkeypatch.setattr(walk, "LOOK_COST", 8)
    assert _ranked(dsn, "the", lim=3) == (expected, 0)


def test_a_depth_ends_at_its_window_and_bounds_what_it_did_not_look_at(
    dsn: str, shallow: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the documents of the highest maxtf (7-9) do not hold the phrase; one session holds it 5
    # times, twenty hold it once or twice
    corpus = corpus_of(
        *[(f"noise{i}", [" ".join(["zz"] * (9 - i % 3))]) for i in range(6)],
        ("best", [" ".join(["the fix"] * 5)]),
        *[(f"s{i:02d}", [" ".join(["the fix"] * (1 + i % 2))]) for i in range(20)],
    )
    with PostgresSearch(dsn) as pg, SqliteSearch(":memory:") as lite:
        pg.update(corpus)
        pages = {
            limit: [
                h.record.header.id
                for h in lite.search_sessions(corpus, "the fix", limit=limit, match="phrase").items
            ]
            for limit in (1, 5)
        }
    assert pages[1] == ["best"]
    # looking at up to 16 documents, depth 1 reads "best" and one of maxtf 2: it answers
    assert _ranked(dsn, "the fix", lim=1) == (pages[1], 1)
    # looking at 2: only noise, which bounds nothing below a phrase held 5 times, and no
    # candidate among them, so that filling the next depth would look at every document:
    # every match is ranked at once
    monkeypatch.setattr(walk, "WINDOW", 2)
    assert _ranked(dsn, "the fix", lim=1) == (pages[1], 0)
    assert _ranked(dsn, "the fix", lim=5) == (pages[5], 0)


def test_a_query_of_a_rare_word_ranks_every_match_at_once(dsn: str) -> None:
    corpus = corpus_of(("s", ["the the the"]))
    with PostgresSearch(dsn) as pg:
        pg.update(corpus)
    assert _ranked(dsn, "the", lim=1) == (["s"], 0)


@pytest.mark.parametrize(
    ("text", "repeats"),
    [("", 0), ("one", 1), ("a b c", 1), ("a b a", 2), ("x.y x-y X Y", 3), ("é e É", 3)],
)
def test_max_repeats_counts_the_most_repeated_token(text: str, repeats: int) -> None:
    words = tokens(text)
    assert max_repeats(Counter(words)) == repeats


def test_the_migration_counts_the_repeats_of_rows_written_before_it(dsn: str) -> None:
    corpus = corpus_of(("s", ["a b a", "x y", "é e É", "q q q q"]))
    with PostgresSearch(dsn) as pg:
        pg.update(corpus)
    with psycopg.connect(dsn, autocommit=True) as conn:
        written = conn.execute("SELECT seq, maxtf FROM sqi_docs ORDER BY seq").fetchall()
        conn.execute("DELETE FROM sqi_migrations WHERE name = 'm005_maxtf'")
        conn.execute("DROP INDEX sqi_docs_maxtf")
        conn.execute("ALTER TABLE sqi_docs DROP COLUMN maxtf")
    PostgresSearch(dsn).close()  # migrates
    with psycopg.connect(dsn, autocommit=True) as conn:
        migrated = conn.execute("SELECT seq, maxtf FROM sqi_docs ORDER BY seq").fetchall()
    assert migrated == written
    assert [m for _seq, m in written] == [2, 1, 3, 4]
