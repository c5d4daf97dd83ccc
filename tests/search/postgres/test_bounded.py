"""Queries of 100,000 words on the PostgreSQL index, in every mode (issue 31): answered or
``ABORTED`` at their deadline, never a statement that outlives it.

The SQLite side is ``tests/search/sqlite/test_bounded.py``; how far past the deadline a call
ends is measured in ``benchmarks/long_queries.py`` (RESULTS.md), not asserted here.
"""

from __future__ import annotations

import random
import time

import pytest

from builders import log
from conftest import raises_code
from postgres_support import PostgresServer
from search_sqlite_support import FakeCorpus, FakePersistence, header
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.match_modes import SEARCH_MATCHES
from sessionquery.query.cancel import CancelToken
from sessionquery.search.postgres import PostgresSearch
from sessionquery.search.postgres.bounded import LOOKUP_CHUNK
from sessionquery.search.sqlite import SqliteSearch

VOCABULARY = [f"word{i}" for i in range(400)]
DEADLINE_S = 0.5
HANG_S = 4.0
"""A hang guard only: the 100,000-word ``words`` query took 193 s before the bound."""


def _corpus() -> FakeCorpus:
    rng = random.Random(6)
    store = FakePersistence()
    for i in range(30):
        docs = [" ".join(rng.choices(VOCABULARY, k=rng.randint(200, 300))) for _ in range(3)]
        store.put(header(f"s{i:02d}", created_at=i, cwd="/w" if i % 2 else "/v"), log(*docs))
    return FakeCorpus(store)


@pytest.mark.parametrize("mode", SEARCH_MATCHES)
def test_a_hundred_thousand_word_query_answers_or_aborts_at_its_deadline(
    postgres_server: PostgresServer, mode: str
) -> None:
    corpus = _corpus()
    absent = " ".join(f"zq{i}" for i in range(100_000))
    pasted = " ".join([" ".join(VOCABULARY)] * 250)
    dsn = postgres_server.new_schema()
    try:
        with PostgresSearch(dsn) as index:
            index.update(corpus)
            for query in (absent, pasted):
                started = time.monotonic()
                try:
                    page = index.search_sessions(
                        corpus,
                        query,
                        match=mode,  # type: ignore[arg-type]
                        cancel=CancelToken.after(DEADLINE_S),
                    )
                except SessionQueryError as exc:  # ABORTED is an answer too
                    with raises_code(ErrorCode.ABORTED):
                        raise exc
                else:
                    if query is absent and mode != "relevance":
                        assert page.items == []
                assert time.monotonic() - started < DEADLINE_S + HANG_S, (mode, len(query))
    finally:
        postgres_server.drop_schema(dsn)


def test_a_query_longer_than_one_lookup_chunk_needs_every_chunk_present(
    postgres_server: PostgresServer,
) -> None:
    words = [f"w{i}z" for i in range(LOOKUP_CHUNK + 300)]
    store = FakePersistence()
    store.put(header("all", 1, cwd="/w"), log(" ".join(words)))
    store.put(header("most", 2, cwd="/w"), log(" ".join(words[:-1])))
    corpus = FakeCorpus(store)
    dsn = postgres_server.new_schema()
    try:
        with PostgresSearch(dsn) as pg, SqliteSearch(":memory:") as lite:
            for index in (pg, lite):
                every = index.search_sessions(corpus, " ".join(words), match="words")
                assert [hit.record.id for hit in every.items] == ["all"]
                beyond = index.search_sessions(corpus, " ".join([*words, "nowhere"]), match="words")
                assert beyond.items == []
    finally:
        postgres_server.drop_schema(dsn)
