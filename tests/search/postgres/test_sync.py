"""The PostgreSQL index's synchronisation: the term statistics the relevance ranking reads
(``sqi_state``'s document and token counts, ``sqi_terms``' document count per lexeme) always
equal a count over the rows ``sqi_docs`` holds, however sessions were added, grown, rewritten
and removed, and however the work was cut into batches."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import log
from search_sqlite_support import FakeCorpus, FakePersistence, header
from sessionquery.search.postgres import PostgresSearch, sync
from sessionquery.search.postgres.tokens import lexeme

WORDS = ["alpha", "beta", "gamma", "delta", "retry", "flaky", "login", "the", "a" * 300]
"""A small vocabulary (so sessions share lexemes) and one word longer than a lexeme."""

texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
steps = st.lists(
    st.tuples(
        st.sampled_from(["put", "append", "delete"]),
        st.integers(min_value=0, max_value=11),
        st.lists(texts, min_size=1, max_size=3),
    ),
    min_size=1,
    max_size=12,
)


@pytest.fixture
def dsn(postgres_dsn: str) -> Iterator[str]:
    yield postgres_dsn


def _recount(dsn: str) -> tuple[tuple[int, int], dict[str, int], tuple[int, int], dict[str, int]]:
    """The statistics as stored, and the same counted again from ``sqi_docs``."""
    with psycopg.connect(dsn) as conn:
        state = conn.execute("SELECT documents, tokens FROM sqi_state").fetchone()
        assert state is not None
        stored: dict[object, object] = dict(
            conn.execute("SELECT term, docs FROM sqi_terms").fetchall()
        )
        docs = conn.execute("SELECT count(*), coalesce(sum(ntokens), 0) FROM sqi_docs").fetchone()
        assert docs is not None
        counted: Counter[str] = Counter()
        for (norm,) in conn.execute("SELECT norm FROM sqi_docs"):
            counted.update({lexeme(word) for word in str(norm).split(" ") if word})
    return (
        (int(state[0]), int(state[1])),
        {str(k): int(str(v)) for k, v in stored.items()},
        (int(docs[0]), int(docs[1])),
        dict(counted),
    )


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(history=steps, batch=st.integers(min_value=1, max_value=4))
@pytest.mark.slow
def test_term_statistics_always_equal_a_recount_of_the_indexed_rows(
    dsn: str, history: list[tuple[str, int, list[str]]], batch: int
) -> None:
    store = FakePersistence()
    corpus = FakeCorpus(store=store)
    held: dict[str, int] = {}
    saved = sync.BATCH_SESSIONS
    sync.BATCH_SESSIONS = batch  # several committed batches in one update
    try:
        with PostgresSearch(dsn) as index:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("TRUNCATE sqi_docs, sqi_sessions, sqi_terms")
                conn.execute("UPDATE sqi_state SET documents = 0, tokens = 0, token = NULL")
            for action, number, chunk in history:
                sid = f"s{number}"
                if action == "put" or sid not in held:
                    store.put(header(sid, created_at=number), log(*chunk))
                    held[sid] = len(chunk)
                elif action == "append":
                    store.append(sid, log(*chunk, start=held[sid]))
                    held[sid] += len(chunk)
                else:
                    store.delete(sid)
                    del held[sid]
                index.update(corpus)
                state, stored, docs, counted = _recount(dsn)
                assert state == docs
                assert stored == counted
    finally:
        sync.BATCH_SESSIONS = saved


def test_a_document_row_cuts_long_tokens_and_stores_no_tsvector_past_the_budget() -> None:
    long_token = "x" * 300
    row, held = sync.doc_row("s", 0, "user/message", 1, "main", f"a {long_token} a", False)
    assert set(held) == {"a", lexeme(long_token)} and lexeme(long_token) == "x" * 200
    assert row[8] == f"'a' '{'x' * 200}'" and row[11] == 2
    # 50,000 distinct lexemes of 12 bytes and 8 bytes of overhead each: exactly the budget
    words = [f"w{i:011d}" for i in range(50_000)]
    fits, _held = sync.doc_row("s", 1, "user/message", 1, "main", " ".join(words), False)
    over, _held = sync.doc_row("s", 2, "user/message", 1, "main", " ".join([*words, "ab"]))
    assert fits[8] is not None and over[8] is None
