"""Tests for sessionquery.search.sqlite.query: quoting, budgets, match modes and ranking."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import assistant, log, user
from conftest import raises_code
from search_sqlite_support import FakeCorpus, FakePersistence, header
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.match_modes import SEARCH_MODES
from sessionquery.model import SessionEvent
from sessionquery.query.filters import (
    AvailabilityIn,
    CreatedBetween,
    CwdIn,
    IdIn,
    SeqBetween,
    SessionFilter,
    TypeIn,
)
from sessionquery.search.request import normalize_query
from sessionquery.search.snippet import MATCH_MARK
from sessionquery.search.sqlite import SqliteSearch, db
from sessionquery.search.sqlite.query import (
    EVENT_PREDICATE_LIMIT,
    SESSION_PREDICATE_LIMIT,
    compile_filters,
    query_tokens,
    quote_phrase,
    words_expression,
)


@given(st.text())
def test_any_quoted_query_is_valid_fts5_syntax(text: str) -> None:
    try:
        normalized = normalize_query(text)
    except SessionQueryError as exc:
        assert exc.code is ErrorCode.INVALID_QUERY
        return
    conn = db.connect(":memory:")  # the index's own SQLite
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='unicode61')")
    conn.execute("INSERT INTO t VALUES ('some text')")
    conn.execute("SELECT * FROM t WHERE t MATCH ?", (quote_phrase(normalized),)).fetchall()
    conn.close()


def _budget(count: int) -> list[SeqBetween]:
    return [SeqBetween(0, 10)] * (count // 2) + [SeqBetween(0)] * (count % 2)


def test_session_search_allows_fourteen_predicates_and_refuses_fifteen() -> None:
    sessions: list[SessionFilter] = [
        CreatedBetween(0, 5),
        IdIn(["a"]),
        AvailabilityIn(["live", "persisted"]),
    ]
    compile_filters(sessions, _budget(11), predicate_limit=SESSION_PREDICATE_LIMIT)
    with raises_code(ErrorCode.INVALID_FILTER):
        compile_filters(sessions, _budget(12), predicate_limit=SESSION_PREDICATE_LIMIT)


def test_event_search_allows_thirteen_filter_predicates() -> None:
    compile_filters((), _budget(13), predicate_limit=EVENT_PREDICATE_LIMIT)
    with raises_code(ErrorCode.INVALID_FILTER):
        compile_filters((), [*_budget(13), TypeIn([])], predicate_limit=EVENT_PREDICATE_LIMIT)


def test_empty_lists_count_one_and_availability_with_both_values_counts_zero() -> None:
    compiled = compile_filters(
        [IdIn([]), AvailabilityIn(["live", "persisted"]), AvailabilityIn(["live"]), CwdIn([None])],
        (),
        predicate_limit=SESSION_PREDICATE_LIMIT,
    )
    assert len(compiled.session_predicates) == 3
    assert compiled.session_predicates[0] == "0"


def test_too_many_bound_values_are_refused_before_any_statement() -> None:
    with raises_code(ErrorCode.INVALID_FILTER):
        compile_filters(
            [IdIn([f"id{n}" for n in range(32_757)])], (), predicate_limit=SESSION_PREDICATE_LIMIT
        )
    compile_filters(
        [IdIn([f"id{n}" for n in range(32_756)])], (), predicate_limit=SESSION_PREDICATE_LIMIT
    )


# -- match="words" ---------------------------------------------------------------------------


def _words_corpus() -> FakeCorpus:
    store = FakePersistence()
    store.put(header("a", created_at=1), log("the flaky test failed again", "unrelated"))
    store.put(header("b", created_at=2), log("a test that is flaky, flaky, flaky", "test"))
    store.put(header("c", created_at=3), log("flaky network only"))
    return FakeCorpus(store)


@pytest.fixture
def index(tmp_path: Path) -> Iterator[SqliteSearch]:
    search = SqliteSearch(tmp_path / "index.db")
    yield search
    search.close()


def test_words_expression_joins_each_distinct_token_as_its_own_phrase() -> None:
    assert words_expression(["test", "flaky", "test"]) == '"test" AND "flaky"'
    assert words_expression([]) == '""'


def test_words_mode_finds_every_word_in_any_order_where_the_phrase_finds_nothing(
    index: SqliteSearch,
) -> None:
    corpus = _words_corpus()
    assert index.search_sessions(corpus, "test flaky").items == []
    page = index.search_sessions(corpus, "test flaky", match="words")
    # "b" has four spans (test + three flaky), "a" two: more spans rank first.
    assert [hit.record.id for hit in page.items] == ["b", "a"]
    assert page.items[1].best_match.snippet == "the flaky test failed again"
    events = index.search_events(corpus, "b", "TEST, flaky!", match="words")
    assert [hit.seq for hit in events.items] == [0]


def test_words_mode_snippet_is_cut_around_the_first_match_of_any_word(tmp_path: Path) -> None:
    store = FakePersistence()
    text = "filler " * 60 + "the test was flaky " + "tail " * 60
    store.put(header("a"), log(text))
    with SqliteSearch(tmp_path / "i.db", snippet_chars=40) as search:
        page = search.search_sessions(FakeCorpus(store), "flaky test", match="words")
    snippet = page.items[0].best_match.snippet
    assert snippet.startswith("…") and "test was flaky" in snippet and len(snippet) <= 40


def test_words_mode_with_one_word_equals_phrase_mode(index: SqliteSearch) -> None:
    corpus = _words_corpus()
    phrase = index.search_sessions(corpus, "flaky")
    words = index.search_sessions(corpus, "Flaky flaky", match="words")
    assert words.items == phrase.items and len(words.items) == 3


def test_a_query_without_any_word_matches_nothing_in_words_mode(index: SqliteSearch) -> None:
    assert index.search_sessions(_words_corpus(), "-- ,, !!", match="words").items == []


def test_cursors_are_bound_to_the_match_mode(index: SqliteSearch) -> None:
    corpus = _words_corpus()
    first = index.search_sessions(corpus, "flaky", limit=1, match="words")
    assert first.next_cursor is not None
    with raises_code(ErrorCode.INVALID_CURSOR):
        index.search_sessions(corpus, "flaky", limit=1, cursor=first.next_cursor)
    second = index.search_sessions(
        corpus, "flaky", limit=1, cursor=first.next_cursor, match="words"
    )
    assert second.items and second.items[0].record.id != first.items[0].record.id


@pytest.mark.parametrize("bad", ["WORDS", "", None, 3])
def test_an_unknown_match_mode_is_an_invalid_query(index: SqliteSearch, bad: object) -> None:
    corpus = _words_corpus()
    for call in (
        lambda: index.search_sessions(corpus, "flaky", match=bad),  # type: ignore[arg-type]
        lambda: index.search_events(corpus, "a", "flaky", match=bad),  # type: ignore[arg-type]
    ):
        with raises_code(ErrorCode.INVALID_QUERY):
            call()


# -- ranking: the pages equal a brute-force ranking from highlight() ---------------------------

_WORDS = ["the", "The", "THE", "thé", "the-the", "café", "Cafe", "x", "😀", "a.b", "deploy", "fix"]
_QUERIES = [
    "the",
    "THE",
    "cafe",
    "x",
    "😀 x",
    "the the",
    "the x the",
    "a.b",
    "zzz",
    "the cafe",
    "deploy fix",
    "fix deploy",
    "x the café",
]
_texts = st.lists(
    st.tuples(
        st.lists(st.sampled_from(_WORDS), min_size=1, max_size=7).map(" ".join),
        st.sampled_from([1_000, 1_001]),  # equal times make the later tie-breaks decide
    ),
    min_size=1,
    max_size=4,
)


def _log(texts: list[tuple[str, int]]) -> list[SessionEvent]:
    return [(user if i % 2 == 0 else assistant)(i, text, at) for i, (text, at) in enumerate(texts)]


def _pages(index: SqliteSearch, corpus: FakeCorpus, query: str, **options: Any) -> list[Any]:
    pages, cursor = [], None
    while True:
        page = index.search_sessions(corpus, query, limit=2, cursor=cursor, **options)
        pages.append(page)
        if (cursor := page.next_cursor) is None:
            return pages


def _expected(
    index: SqliteSearch, expression: str, cwd: list[str | None] | None, types: list[str] | None
) -> list[tuple[str, bool, int]]:
    """SPEC §7's ranking, computed the slow way: every matching document of the index (live
    rows shadowing persisted ones) counted by ``highlight()``'s markers, filtered, the best
    event of each session chosen and the sessions sorted, all in Python."""
    conn = index._conn
    assert conn is not None
    branches = [
        ("temp", "live_fts", "live_rows", "live_sessions", True, ""),
        (
            "main",
            "doc_fts",
            "doc_rows",
            "persisted_sessions",
            False,
            " AND s.id NOT IN (SELECT id FROM temp.live_sessions)",
        ),
    ]
    events = []
    for schema, fts, rows, sessions, live, shadow in branches:
        found = conn.execute(
            f"SELECT s.id, s.cwd, r.id & 4294967295, r.type, r.time, r.length, "
            f"highlight({fts}, 0, ?, '') FROM {schema}.{fts} JOIN {schema}.{rows} AS r "
            f"ON r.id = {fts}.rowid JOIN {schema}.{sessions} AS s ON s.key = r.id >> 32 "
            f"WHERE {fts} MATCH ?{shadow}",
            (MATCH_MARK, expression),
        ).fetchall()
        found_rows: list[tuple[Any, ...]] = found
        for sid, where, seq, kind, time, length, marked in found_rows:
            if (cwd is None or where in cwd) and (types is None or kind in types):
                events.append((-str(marked).count(MATCH_MARK), length, -time, -seq, sid, live))
    best: dict[str, tuple[Any, ...]] = {}
    for event in sorted(events):
        best.setdefault(event[4], event)
    ranked = sorted(best.values(), key=lambda e: (e[0], e[1], e[2], e[4].encode(), e[3]))
    return [(sid, live, -seq) for _mc, _length, _time, seq, sid, live in ranked]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    persisted=st.dictionaries(
        st.sampled_from("abcde"), st.tuples(st.sampled_from(["/w", "/v", None]), _texts)
    ),
    live=st.dictionaries(st.sampled_from("defg"), _texts, max_size=3),
    query=st.sampled_from(_QUERIES),
    match=st.sampled_from([m.name for m in SEARCH_MODES if not m.plan.ranked]),
    cwd=st.sampled_from([None, ["/w"], ["/w", None]]),
    types=st.sampled_from([None, ["user/message"], ["assistant/message"]]),
)
def test_session_pages_follow_the_highlight_counts_and_every_tie_break(
    *,
    persisted: dict[str, tuple[str | None, list[tuple[str, int]]]],
    live: dict[str, list[tuple[str, int]]],
    query: str,
    match: str,
    cwd: list[str | None] | None,
    types: list[str] | None,
) -> None:
    store, headers = FakePersistence(), {}
    for number, (sid, (where, texts)) in enumerate(sorted(persisted.items())):
        headers[sid] = header(sid, created_at=number + 1, cwd=where)
        store.put(headers[sid], _log(texts))
    corpus = FakeCorpus(store)
    options: dict[str, Any] = {"match": match}
    if cwd is not None:
        options["session_filters"] = [CwdIn(cwd)]
    if types is not None:
        options["event_filters"] = [TypeIn(types)]
    with SqliteSearch(":memory:") as index:
        _pages(index, corpus, query, **options)  # the stored copies are indexed first
        for sid, texts in sorted(live.items()):
            corpus.live[sid] = (headers.get(sid, header(sid, ord(sid), cwd="/w")), _log(texts))
        pages = _pages(index, corpus, query, **options)
        found = [
            (hit.record.id, hit.record.live, hit.best_match.seq)
            for page in pages
            for hit in page.items
        ]
        normalized = normalize_query(query)
        tokens = query_tokens(index._conn, normalized)  # type: ignore[arg-type]
        expression = quote_phrase(normalized) if match == "phrase" else words_expression(tokens)
        assert found == _expected(index, expression, cwd, types)
