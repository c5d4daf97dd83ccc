"""Tests for sessionquery.search.sqlite.index: SqliteSearch end to end over real SQLite files.

Most tests use the small in-test corpus fakes of ``search_sqlite_support`` (our own seams);
the integration tests at the end run through ``SessionQuery`` with a real ``SessionStore``
and ``JsonlPersistence`` under ``tmp_path``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from search_sqlite_support import FakeCorpus, FakePersistence, assistant, header, log, user
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.search.sqlite import SqliteSearch


@pytest.fixture
def index(tmp_path: Path) -> Iterator[SqliteSearch]:
    search = SqliteSearch(tmp_path / "index.db")
    yield search
    search.close()


def corpus_of(*sessions: tuple[str, list[str]]) -> FakeCorpus:
    store = FakePersistence()
    for number, (sid, texts) in enumerate(sessions):
        store.put(header(sid, created_at=number + 1), log(*texts))
    return FakeCorpus(store)


def test_session_search_returns_each_session_once_with_its_best_event(
    index: SqliteSearch,
) -> None:
    corpus = corpus_of(
        ("a", ["the parser test failed twice", "parser test", "unrelated"]),
        ("b", ["nothing here", "a long line where the parser test appears once only"]),
        ("c", ["no match at all"]),
    )
    page = index.search_sessions(corpus, "parser test")
    assert [hit.record.id for hit in page.items] == ["a", "b"]
    assert page.items[0].best_match.seq == 1  # shortest document wins the tie on spans
    assert page.items[0].best_match.snippet == "parser test"
    assert page.items[1].best_match.seq == 1
    assert page.next_cursor is None


def test_more_match_spans_rank_before_shorter_documents(index: SqliteSearch) -> None:
    corpus = corpus_of(("a", ["deploy", "deploy then deploy again and deploy"]))
    page = index.search_events(corpus, "a", "deploy")
    assert [hit.seq for hit in page.items] == [1, 0]


def test_ties_on_spans_and_length_order_by_time_then_id(index: SqliteSearch) -> None:
    store = FakePersistence()
    store.put(header("b"), [user(0, "same words", time=5)])
    store.put(header("a"), [user(0, "same words", time=5)])
    store.put(header("c"), [user(0, "same words", time=9)])
    page = index.search_sessions(FakeCorpus(store), "same words")
    assert [hit.record.id for hit in page.items] == ["c", "a", "b"]


def test_phrase_words_must_be_adjacent_and_in_order(index: SqliteSearch) -> None:
    corpus = corpus_of(("a", ["test failed", "failed  the test"]), ("b", ["the failed test"]))
    page = index.search_sessions(corpus, "failed   test")
    assert [hit.record.id for hit in page.items] == ["b"]


def test_tokens_are_matched_whole_not_as_substrings(index: SqliteSearch) -> None:
    corpus = corpus_of(("a", ["BRAID pattern"]), ("b", ["the ai model"]))
    assert [hit.record.id for hit in index.search_sessions(corpus, "AI").items] == ["b"]


def test_paging_with_cursors_returns_every_hit_exactly_once(index: SqliteSearch) -> None:
    corpus = corpus_of(*[(f"s{n:02}", [f"common word {'x ' * n}"]) for n in range(23)])
    seen: list[str] = []
    cursor = None
    while True:
        page = index.search_sessions(corpus, "common word", limit=5, cursor=cursor)
        seen.extend(hit.record.id for hit in page.items)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert sorted(seen) == [f"s{n:02}" for n in range(23)]
    assert len(seen) == len(set(seen))


def test_appending_to_any_session_makes_the_next_session_cursor_stale(
    index: SqliteSearch,
) -> None:
    corpus = corpus_of(*[(f"s{n}", ["shared topic"]) for n in range(3)])
    corpus.live["me"] = (header("me", 9), log("unrelated"))
    page = index.search_sessions(corpus, "shared topic", limit=1)
    assert page.next_cursor is not None
    corpus.live["me"][1].append(assistant(1, "still unrelated"))
    with pytest.raises(SessionQueryError) as caught:
        index.search_sessions(corpus, "shared topic", limit=1, cursor=page.next_cursor)
    assert caught.value.code is ErrorCode.STALE_CURSOR


def test_event_cursor_goes_stale_only_when_its_session_changes(index: SqliteSearch) -> None:
    corpus = corpus_of(("a", ["hit one", "hit two", "hit three"]), ("b", ["other"]))
    page = index.search_events(corpus, "a", "hit", limit=1)
    assert corpus.store is not None
    corpus.store.append("b", [assistant(1, "b grows")])
    second = index.search_events(corpus, "a", "hit", limit=1, cursor=page.next_cursor)
    assert len(second.items) == 1
    corpus.store.append("a", [assistant(3, "a grows")])
    with pytest.raises(SessionQueryError) as caught:
        index.search_events(corpus, "a", "hit", limit=1, cursor=second.next_cursor)
    assert caught.value.code is ErrorCode.STALE_CURSOR


def test_live_events_are_searchable_and_shadow_the_persisted_rows(index: SqliteSearch) -> None:
    corpus = corpus_of(("a", ["old persisted words"]))
    corpus.live["a"] = (header("a", 1), log("old persisted words", "fresh unflushed words"))
    page = index.search_sessions(corpus, "unflushed")
    assert [(h.record.id, h.record.live, h.record.persisted) for h in page.items] == [
        ("a", True, True)
    ]
    hits = index.search_sessions(corpus, "old persisted words").items
    assert [(h.record.id, h.record.live) for h in hits] == [("a", True)]
    del corpus.live["a"]
    hits = index.search_sessions(corpus, "old persisted words").items
    assert [(h.record.id, h.record.live, h.record.persisted) for h in hits] == [("a", False, True)]
    assert index.search_sessions(corpus, "unflushed").items == []


def test_event_search_on_an_unknown_session_is_session_not_found(index: SqliteSearch) -> None:
    with pytest.raises(SessionQueryError) as caught:
        index.search_events(corpus_of(("a", ["x"])), "nope", "x")
    assert caught.value.code is ErrorCode.SESSION_NOT_FOUND


def test_event_search_page_carries_the_header_even_without_hits(index: SqliteSearch) -> None:
    page = index.search_events(corpus_of(("a", ["x"])), "a", "absent")
    assert page.session.id == "a"
    assert page.items == []
