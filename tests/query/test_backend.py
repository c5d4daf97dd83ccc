"""The ``SearchBackend`` contract (``query/backend.py``), one suite run on every backend.

Each test asks for ``index`` (or ``make_backend`` for one it closes itself) and runs once per
backend of ``conftest.BACKENDS``: ``SqliteSearch`` on a file under ``tmp_path``, and
``PostgresSearch`` on a fresh schema of the test server. What only one backend has (its files,
its SQL, its locks) is tested beside it, in ``tests/search/sqlite/`` and
``tests/search/postgres/``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from builders import assistant, log, summary, user
from conftest import raises_code
from search_sqlite_support import FakeCorpus, build_corpus, corpus_of, header
from sessionquery.errors import ErrorCode
from sessionquery.match_modes import SEARCH_MODES, SearchMode, Words
from sessionquery.query.filters import SurfaceIn, TextContains, TypeIn
from sessionquery.search.postgres import PostgresSearch
from sessionquery.search.sqlite import SqliteSearch

Backend = SqliteSearch | PostgresSearch


@pytest.fixture
def make_backend(
    storage_backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[[], Backend]]:
    """A factory of new indexes of the backend under test, each closed after the test."""
    made: list[Backend] = []

    def make() -> Backend:
        search: Backend
        if storage_backend == "sqlite":
            search = SqliteSearch(tmp_path / f"index{len(made) or ''}.db")
        else:
            search = PostgresSearch(request.getfixturevalue("postgres_dsn"))
        made.append(search)
        return search

    yield make
    for search in made:
        search.close()


@pytest.fixture
def index(make_backend: Callable[[], Backend]) -> Backend:
    """One index of the backend under test."""
    return make_backend()


def test_session_search_returns_each_session_once_with_its_best_event(
    index: Backend,
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


def test_paging_with_cursors_returns_every_hit_exactly_once(index: Backend) -> None:
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
    index: Backend,
) -> None:
    corpus = corpus_of(*[(f"s{n}", ["shared topic"]) for n in range(3)])
    corpus.live["me"] = (header("me", 9), log("unrelated"))
    page = index.search_sessions(corpus, "shared topic", limit=1)
    assert page.next_cursor is not None
    corpus.live["me"][1].append(assistant(1, "still unrelated"))
    with raises_code(ErrorCode.STALE_CURSOR):
        index.search_sessions(corpus, "shared topic", limit=1, cursor=page.next_cursor)


def test_event_cursor_goes_stale_only_when_its_session_changes(index: Backend) -> None:
    corpus = corpus_of(("a", ["hit one", "hit two", "hit three"]), ("b", ["other"]))
    page = index.search_events(corpus, "a", "hit", limit=1)
    assert corpus.store is not None
    corpus.store.append("b", [assistant(1, "b grows")])
    second = index.search_events(corpus, "a", "hit", limit=1, cursor=page.next_cursor)
    assert len(second.items) == 1
    corpus.store.append("a", [assistant(3, "a grows")])
    with raises_code(ErrorCode.STALE_CURSOR):
        index.search_events(corpus, "a", "hit", limit=1, cursor=second.next_cursor)


def test_live_events_are_searchable_and_shadow_the_persisted_rows(index: Backend) -> None:
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


def test_event_search_on_an_unknown_session_is_session_not_found(index: Backend) -> None:
    with raises_code(ErrorCode.SESSION_NOT_FOUND):
        index.search_events(corpus_of(("a", ["x"])), "nope", "x")


def test_event_search_page_carries_the_header_even_without_hits(index: Backend) -> None:
    page = index.search_events(corpus_of(("a", ["x"])), "a", "absent")
    assert page.session.id == "a"
    assert page.items == []


def test_text_filters_are_refused_by_the_search_backend(index: Backend) -> None:
    corpus = corpus_of(("a", ["x"]))
    for call in (
        lambda: index.search_sessions(corpus, "x", event_filters=[TextContains("x")]),
        lambda: index.search_events(corpus, "a", "x", filters=[TextContains("x")]),
    ):
        with raises_code(ErrorCode.INVALID_FILTER):
            call()


def test_a_closed_index_fails_with_index_failed_and_close_is_idempotent(
    make_backend: Callable[[], Backend],
) -> None:
    search = make_backend()
    search.close()
    search.close()
    with raises_code(ErrorCode.INDEX_FAILED):
        search.search_sessions(FakeCorpus(), "x")


def test_words_mode_finds_words_in_any_order_and_phrase_mode_does_not(index: Backend) -> None:
    corpus = build_corpus({"s": ["the test failed", "failed to run"]}, {})
    assert index.search_sessions(corpus, "failed test").items == []
    (hit,) = index.search_sessions(corpus, "failed test", match="words").items
    assert hit.best_match.seq == 0


def test_an_unknown_match_mode_is_invalid_query(index: Backend) -> None:
    with raises_code(ErrorCode.INVALID_QUERY):
        index.search_sessions(FakeCorpus(), "x", match="regex")  # type: ignore[arg-type]


def test_a_changed_corpus_makes_a_session_cursor_stale(index: Backend) -> None:
    corpus = build_corpus({"s": ["word"], "t": ["word"], "u": ["word"]}, {})
    page = index.search_sessions(corpus, "word", limit=1)
    assert page.next_cursor is not None
    assert corpus.store is not None
    corpus.store.append("s", [user(1, "more")])
    with raises_code(ErrorCode.STALE_CURSOR):
        index.search_sessions(corpus, "word", limit=1, cursor=page.next_cursor)


def test_live_sessions_shadow_their_persisted_rows_and_reclassify_on_replace(
    index: Backend,
) -> None:
    corpus = build_corpus({"s": ["old words"]}, {})
    corpus.live["s"] = (
        header("s", created_at=0, cwd="/v"),
        [*log("old words", "more"), summary(2, "summary words", 0, 1)],
    )
    (hit,) = index.search_sessions(corpus, "words").items
    best = hit.best_match
    assert (hit.record.live, hit.record.persisted, best.seq, best.surface) == (
        True,
        True,
        0,
        "shadowed",
    )
    events = index.search_events(corpus, "s", "words", filters=[SurfaceIn(["current"])]).items
    assert [e.seq for e in events] == [2]


def test_filter_budgets_are_those_of_sqlite(index: Backend) -> None:
    too_many = [TypeIn([f"t{i}"]) for i in range(15)]
    with raises_code(ErrorCode.INVALID_FILTER):
        index.search_sessions(FakeCorpus(), "x", event_filters=too_many)
    with raises_code(ErrorCode.INVALID_LIMIT):
        index.search_sessions(FakeCorpus(), "x", limit=0)
    with raises_code(ErrorCode.INVALID_QUERY):
        index.search_sessions(FakeCorpus(), "  ")


# -- every search mode, from its record (match_modes.SEARCH_MODES) ----------------------------

EVERY_MODE = pytest.mark.parametrize("mode", SEARCH_MODES, ids=lambda mode: mode.name)

FOUND_BY = {
    Words.AS_PHRASE: ["s1"],
    Words.EVERY: ["s1", "s2"],
    Words.ANY: ["s1", "s2", "s3"],
}
"""Who holds "failed test" as each plan's candidates require (below)."""
_DOCS = [
    ("s1", ["deploy failed test"]),  # the phrase
    ("s2", ["test deploy failed"]),  # every word, not adjacent
    ("s3", ["failed build"]),  # one word
    ("s4", ["nothing relevant here"]),
]


@EVERY_MODE
def test_every_mode_finds_what_its_plans_candidates_require(
    index: Backend, mode: SearchMode
) -> None:
    corpus = corpus_of(*_DOCS)
    page = index.search_sessions(corpus, "failed test", match=mode.name)
    assert sorted(hit.record.id for hit in page.items) == FOUND_BY[mode.plan.words]
    assert page.items[0].record.id == "s1"  # the phrase ranks first in every order
    one = corpus_of(("all", [text for _sid, (text,) in _DOCS]))
    events = index.search_events(one, "all", "failed test", match=mode.name)
    expected = [int(sid[1]) - 1 for sid in FOUND_BY[mode.plan.words]]
    assert sorted(hit.seq for hit in events.items) == expected


@EVERY_MODE
def test_every_mode_pages_with_cursors_returning_every_hit_exactly_once(
    index: Backend, mode: SearchMode
) -> None:
    corpus = corpus_of(
        *[(f"s{n:02}", [f"common word {'x ' * n}"]) for n in range(13)],
        ("other", ["unrelated text"]),
        ("events", [f"common word {'y ' * n}" for n in range(9)]),
    )
    seen: list[str] = []
    cursor = None
    while True:
        page = index.search_sessions(corpus, "common word", limit=4, cursor=cursor, match=mode.name)
        seen.extend(hit.record.id for hit in page.items)
        if (cursor := page.next_cursor) is None:
            break
    assert sorted(seen) == sorted([f"s{n:02}" for n in range(13)] + ["events"])
    seqs: list[int] = []
    while True:
        events = index.search_events(
            corpus, "events", "common word", limit=4, cursor=cursor, match=mode.name
        )
        seqs.extend(hit.seq for hit in events.items)
        if (cursor := events.next_cursor) is None:
            break
    assert sorted(seqs) == list(range(9))


@EVERY_MODE
def test_a_cursor_of_one_mode_never_continues_another(index: Backend, mode: SearchMode) -> None:
    corpus = corpus_of(*[(f"s{n}", ["shared topic", "shared topic again"]) for n in range(3)])
    sessions = index.search_sessions(corpus, "shared topic", limit=1, match=mode.name)
    events = index.search_events(corpus, "s0", "shared topic", limit=1, match=mode.name)
    assert sessions.next_cursor is not None and events.next_cursor is not None
    for other in SEARCH_MODES:
        if other is mode:
            continue
        with raises_code(ErrorCode.INVALID_CURSOR):
            index.search_sessions(
                corpus, "shared topic", limit=1, cursor=sessions.next_cursor, match=other.name
            )
        with raises_code(ErrorCode.INVALID_CURSOR):
            index.search_events(
                corpus, "s0", "shared topic", limit=1, cursor=events.next_cursor, match=other.name
            )
