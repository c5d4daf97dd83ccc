"""The PostgreSQL backend's relevance and over-long-query searches (``modes.py``) answer
like the SQLite backend; the exhaustive comparisons are in ``test_index.py``."""

from __future__ import annotations

from postgres_support import PostgresServer
from search_sqlite_support import FakeCorpus, FakePersistence, header, log
from sessionquery.search.postgres import PostgresSearch
from sessionquery.search.sqlite import SqliteSearch


def test_relevance_and_a_long_words_query_find_the_same_sessions_on_both_backends(
    postgres_server: PostgresServer,
) -> None:
    store = FakePersistence()
    words = [f"term{i}" for i in range(80)]
    store.put(header("long", 1), log(" ".join(words)))
    store.put(header("short", 2), log("where the failing test was fixed"))
    corpus = FakeCorpus(store)
    dsn = postgres_server.new_schema()
    try:
        with PostgresSearch(dsn) as pg, SqliteSearch(":memory:") as lite:
            for query, match in (
                ("how did we fix the failing test", "relevance"),
                (" ".join(reversed(words)), "words"),
                (" ".join(words), "phrase"),
            ):
                found = [h.record.id for h in pg.search_sessions(corpus, query, match=match).items]  # type: ignore[arg-type]
                assert found == [
                    h.record.id
                    for h in lite.search_sessions(corpus, query, match=match).items  # type: ignore[arg-type]
                ]
                assert found, (query, match)
    finally:
        postgres_server.drop_schema(dsn)
