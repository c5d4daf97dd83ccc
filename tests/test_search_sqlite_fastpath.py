"""The single-token fast path returns exactly what the ``highlight()`` path returns."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from search_sqlite_support import (
    FakeCorpus,
    FakePersistence,
    assistant,
    header,
    log,
    user,
)
from sessionquery.query.filters import (
    AvailabilityIn,
    CreatedBetween,
    CwdIn,
    EventFilter,
    IdIn,
    ParentIn,
    SeqBetween,
    SessionFilter,
    SurfaceIn,
    TimeBetween,
    TypeIn,
)
from sessionquery.query.types import SessionSearchPage
from sessionquery.search.sqlite import SqliteSearch, fastpath
from sessionquery.search.sqlite.query import CompiledFilters
from sessionquery.search.sqlite.snippet import MATCH_MARK

T = TypeVar("T")


@pytest.fixture
def index(tmp_path: Path) -> Iterator[SqliteSearch]:
    search = SqliteSearch(tmp_path / "index.db")
    yield search
    search.close()


@pytest.fixture
def memory() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    yield conn
    conn.close()


def both(index: SqliteSearch, call: Callable[[], T]) -> tuple[T, T]:
    """``call()`` on the fast path, then on the ``highlight()`` path, same index."""
    index._single_token_fast_path = "always"  # filtered requests too
    try:
        fast = call()
    finally:
        index._single_token_fast_path = "off"
    try:
        slow = call()
    finally:
        index._single_token_fast_path = "unfiltered"
    return fast, slow


def all_session_pages(
    index: SqliteSearch,
    corpus: FakeCorpus,
    query: str,
    *,
    limit: int,
    session_filters: list[SessionFilter] | None = None,
    event_filters: list[EventFilter] | None = None,
) -> list[SessionSearchPage]:
    """Every page of one search, each compared between the two paths on the same cursor."""
    pages: list[SessionSearchPage] = []
    cursor: str | None = None
    while True:
        fast, slow = both(
            index,
            lambda c=cursor: index.search_sessions(  # type: ignore[misc]
                corpus,
                query,
                session_filters=session_filters or [],
                event_filters=event_filters or [],
                limit=limit,
                cursor=c,
            ),
        )
        assert fast == slow
        pages.append(fast)
        cursor = fast.next_cursor
        if cursor is None:
            return pages


# -- the claim the fast path rests on -------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "the the the",
        "the",
        "The THE tHe thé",
        "the-the.the,the",
        "xthe the_the thethe the",
        "😀the😀the 😀 the",
        "  the\n\nthe\tthe  ",
        "nothing here",
    ],
)
def test_highlight_marks_one_span_per_instance_of_a_single_token(
    memory: sqlite3.Connection, text: str
) -> None:
    memory.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='unicode61')")
    memory.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    memory.execute("INSERT INTO t (rowid, text) VALUES (1, ?)", (text,))
    marks = memory.execute(
        "SELECT length(highlight(t, 0, ?, '')) - length(text) FROM t WHERE t MATCH '\"the\"'",
        (MATCH_MARK,),
    ).fetchall()
    (instances,) = memory.execute("SELECT count(*) FROM v WHERE term = 'the'").fetchone()
    assert (marks[0][0] if marks else 0) == instances


@pytest.mark.parametrize(
    ("query", "token"),
    [
        ("the", "the"),
        ("The", "the"),
        ("THÉ", "the"),
        ("Café", "cafe"),
        ("(the)", "the"),
        ('"the"', "the"),
        ("x😀", "x"),
        ("the the", None),
        ("don't", None),
        ("parser test", None),
        ("😀", None),
        ("***", None),
    ],
)
def test_single_token_is_derived_by_the_index_tokenizer(
    memory: sqlite3.Connection, query: str, token: str | None
) -> None:
    memory.execute("CREATE TEMP TABLE live_rows (id INTEGER PRIMARY KEY, text TEXT)")
    memory.execute(
        "CREATE VIRTUAL TABLE temp.live_fts USING fts5(text, content='live_rows', "
        "content_rowid='id', tokenize='unicode61')"
    )
    memory.execute("CREATE TABLE doc_rows (id INTEGER PRIMARY KEY, text TEXT)")
    memory.execute(
        "CREATE VIRTUAL TABLE doc_fts USING fts5(text, content='doc_rows', content_rowid='id', "
        "tokenize='unicode61')"
    )
    assert fastpath.single_token(memory, query) == token
    assert fastpath.single_token(memory, query) == token  # the scratch table is emptied


def test_a_scratch_row_left_by_an_interrupted_search_does_not_change_the_next_token(
    memory: sqlite3.Connection,
) -> None:
    memory.execute("CREATE TEMP TABLE live_rows (id INTEGER PRIMARY KEY, text TEXT)")
    memory.execute(
        "CREATE VIRTUAL TABLE temp.live_fts USING fts5(text, content='live_rows', "
        "content_rowid='id', tokenize='unicode61')"
    )
    memory.execute("CREATE TABLE doc_rows (id INTEGER PRIMARY KEY, text TEXT)")
    memory.execute(
        "CREATE VIRTUAL TABLE doc_fts USING fts5(text, content='doc_rows', content_rowid='id', "
        "tokenize='unicode61')"
    )
    fastpath.ensure_vocabularies(memory)
    memory.execute("INSERT INTO temp.sq_query_tokens (rowid, text) VALUES (1, 'stale words')")
    assert fastpath.single_token(memory, "fresh") == "fresh"
    assert memory.execute("SELECT count(*) FROM temp.sq_query_tokens").fetchone() == (0,)


# -- equivalence, hand-built ------------------------------------------------------------------


def test_repeated_tokens_case_and_diacritics_rank_the_same_on_both_paths(
    index: SqliteSearch,
) -> None:
    store = FakePersistence()
    store.put(header("a", 1), log("the the the", "The end", "thé café"))
    store.put(header("b", 2), log("THE", "the-the the.the", "no match"))
    store.put(header("c", 3), log("😀the😀 Café CAFE", "x the y the z"))
    corpus = FakeCorpus(store)
    for query in ("the", "The", "THÉ", "cafe", "Café", "😀 the 😀", "nothing", "the the"):
        for limit in (1, 2, 5):
            pages = all_session_pages(index, corpus, query, limit=limit)
            assert sum(len(page.items) for page in pages) <= 3
    first = index.search_sessions(corpus, "the").items
    assert [hit.record.id for hit in first] == ["b", "a", "c"]  # "the-the the.the": 4 spans
    assert (first[0].best_match.seq, first[1].best_match.seq) == (1, 0)


def test_live_sessions_shadow_persisted_rows_on_both_paths(index: SqliteSearch) -> None:
    store = FakePersistence()
    store.put(header("a", 1, cwd="/w"), log("the persisted the the", "the"))
    store.put(header("b", 2), log("the only persisted"))
    corpus = FakeCorpus(store)
    all_session_pages(index, corpus, "the", limit=1)  # index the stored copies first
    corpus.live["a"] = (header("a", 1, cwd="/w"), log("the persisted", "live the the the the"))
    corpus.live["c"] = (header("c", 3), [user(0, "the"), assistant(1, "THE the")])
    session_filters: list[list[SessionFilter]] = [
        [],
        [AvailabilityIn(["live"])],
        [AvailabilityIn(["persisted"])],
        [CwdIn(["/w"])],
        [IdIn(["b", "c"])],
        [ParentIn([None])],
        [CreatedBetween(2, 3)],
    ]
    for filters in session_filters:
        pages = all_session_pages(index, corpus, "the", limit=1, session_filters=filters)
        assert all(len(page.items) <= 1 for page in pages)
    page = index.search_sessions(corpus, "the")
    assert [(hit.record.id, hit.record.live) for hit in page.items] == [
        ("a", True),
        ("c", True),
        ("b", False),
    ]
    assert page.items[0].best_match.seq == 1
    del corpus.live["a"]
    pages = all_session_pages(index, corpus, "the", limit=2)
    assert [(hit.record.id, hit.record.live) for hit in pages[0].items] == [
        ("a", False),
        ("c", True),
    ]


def test_event_filters_apply_before_the_best_event_on_both_paths(index: SqliteSearch) -> None:
    store = FakePersistence()
    store.put(header("a", 1), log("the the the", "the", "the the", "other"))
    store.put(header("b", 2), log("x", "the the the the"))
    corpus = FakeCorpus(store)
    event_filters: list[list[EventFilter]] = [
        [TypeIn(["assistant/message"])],
        [SeqBetween(1, 2)],
        [TypeIn([])],
        [SeqBetween(0, 0), TypeIn(["user/message"])],
        [TimeBetween(1_001, None), SurfaceIn(["current", "shadowed"])],
    ]
    for filters in event_filters:
        pages = all_session_pages(index, corpus, "the", limit=1, event_filters=filters)
        assert len(pages) >= 1


def test_filtered_requests_keep_the_highlight_path_by_default(
    index: SqliteSearch, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = FakeCorpus(FakePersistence())
    assert corpus.store is not None
    corpus.store.put(header("a", 1, cwd="/w"), log("the the", "the"))
    calls: list[bool] = []
    original = fastpath.session_search_sql

    def spy(filters: CompiledFilters, *, include_persisted: bool, tokens: int = 1) -> str:
        calls.append(True)
        return original(filters, include_persisted=include_persisted, tokens=tokens)

    monkeypatch.setattr(fastpath, "session_search_sql", spy)
    filtered = index.search_sessions(corpus, "the", session_filters=[CwdIn(["/w"])])
    assert calls == []
    plain = index.search_sessions(corpus, "the")
    assert calls == [True]
    assert filtered == plain


# -- equivalence, property ------------------------------------------------------------------

_WORDS = ["the", "The", "THE", "thé", "the-the", "café", "Cafe", "x", "😀", "a.b", "the_the"]
_QUERIES = [
    "the",
    "THE",
    "thé",
    "cafe",
    "CAFÉ",
    "x",
    "😀 x",
    "b",
    "the the",
    "a.b",
    "zzz",
    "the cafe",
    "x the café",
    "cafe x",
]

_texts = st.lists(
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6).map(" ".join),
    min_size=1,
    max_size=4,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    persisted=st.dictionaries(st.sampled_from("abcd"), _texts, max_size=4),
    live=st.dictionaries(st.sampled_from("cdef"), _texts, max_size=3),
    query=st.sampled_from(_QUERIES),
    limit=st.integers(1, 3),
    types=st.sampled_from([None, ["user/message"], ["assistant/message"]]),
)
def test_fast_path_pages_equal_highlight_path_pages(
    persisted: dict[str, list[str]],
    live: dict[str, list[str]],
    query: str,
    limit: int,
    types: list[str] | None,
) -> None:
    store = FakePersistence()
    for sid, texts in sorted(persisted.items()):
        store.put(header(sid, ord(sid)), log(*texts))
    corpus = FakeCorpus(store)
    event_filters: list[EventFilter] = [] if types is None else [TypeIn(types)]
    with SqliteSearch(":memory:") as index:
        # The stored copies are indexed first, then shadowed by live copies of the same ids.
        all_session_pages(index, corpus, query, limit=limit)
        for sid, texts in sorted(live.items()):
            corpus.live[sid] = (header(sid, ord(sid)), log(*texts))
        all_session_pages(index, corpus, query, limit=limit, event_filters=event_filters)
