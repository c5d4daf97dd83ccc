"""Long documents: span counts and first-span offsets equal ``highlight()``'s, in linear time,
and a deadline interrupts a search over a huge repetitive event."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from search_sqlite_support import FakeCorpus, FakePersistence, header, log
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.query.cancel import CancelToken
from sessionquery.search.snippet import MATCH_MARK, snippet_around, snippet_at
from sessionquery.search.sqlite import SqliteSearch, db, spans
from sessionquery.search.sqlite.query import query_tokens, quote_phrase, words_expression


@pytest.fixture
def memory() -> Iterator[db.Connection]:
    conn = db.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='unicode61')")
    yield conn
    conn.close()


def highlighted(conn: db.Connection, text: str, expression: str) -> str | None:
    """``text`` highlighted by FTS5 itself (``None`` when it does not match)."""
    conn.execute("DELETE FROM t")
    conn.execute("INSERT INTO t (rowid, text) VALUES (1, ?)", (text,))
    row = conn.execute(
        "SELECT highlight(t, 0, ?, '') FROM t WHERE t MATCH ?", (MATCH_MARK, expression)
    ).fetchone()
    return None if row is None else str(row[0])


def phrases_of(conn: db.Connection, query: str, words: bool) -> tuple[str, spans.Phrases]:
    tokens = query_tokens(conn, query)
    if not words:
        return quote_phrase(query), [tokens]
    distinct = list(dict.fromkeys(tokens))
    return words_expression(distinct), [[token] for token in distinct]


WORDS = st.sampled_from(["a", "b", "ab", "A", "é", "x-y", "the", "a.b"])
SEPARATORS = st.sampled_from([" ", "  ", "\n", ", ", "-", "\u3000", ".", " ... "])
TEXTS = st.lists(st.tuples(WORDS, SEPARATORS), max_size=120).map(
    lambda parts: "".join(word + separator for word, separator in parts)
)
QUERIES = st.sampled_from(["a", "a b", "a a", "b a b", "ab", "a a a", "the a", "x y"])


def test_pieces_cover_the_text_and_cut_only_on_separators() -> None:
    text = ("word " * 3000) + ("é" * 9000) + ",tail"
    bounds = spans.pieces(text, 100)
    assert bounds[0] == 0 and bounds[-1] == len(text)
    assert all(low < high for low, high in itertools.pairwise(bounds))
    assert all(not text[cut].isalnum() for cut in bounds[1:-1])
    assert max(high - low for low, high in itertools.pairwise(bounds)) >= 9000


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS, query=QUERIES, words=st.booleans(), size=st.integers(40, 80))
def test_the_first_span_offset_equals_the_first_highlight_marker(
    memory: db.Connection, text: str, query: str, words: bool, size: int
) -> None:
    expression, _phrases = phrases_of(memory, query, words)
    marked = highlighted(memory, text, expression)
    expected = -1 if marked is None else marked.find(MATCH_MARK)
    found = spans.first_span_offset(memory, text, expression, None, piece_chars=size)
    assert found == expected


@given(
    text=st.text(st.sampled_from("ab \n\t\u3000."), max_size=400),
    data=st.data(),
    chars=st.integers(1, 30),
)
def test_a_snippet_cut_from_a_window_equals_one_cut_from_the_whole_text(
    text: str, data: st.DataObject, chars: int
) -> None:
    first = data.draw(st.integers(-1, max(0, len(text) - 1)))
    assert snippet_around(text, first, chars) == snippet_at(text, first, chars)


def test_a_long_document_ranks_by_its_spans_and_is_snippeted_at_its_first_match(
    tmp_path: Path,
) -> None:
    long_text = "intro " * 3000 + "deploy now " * 2000
    store = FakePersistence()
    store.put(header("a", created_at=1), log("deploy deploy deploy", long_text))
    store.put(header("b", created_at=2), log("deploy " * 10))
    corpus = FakeCorpus(store)
    with SqliteSearch(tmp_path / "i.db", snippet_chars=30) as search:
        for query in ("deploy", "deploy now"):
            page = search.search_sessions(corpus, query)
            assert next(hit.record.id for hit in page.items) == "a"
            assert page.items[0].best_match.seq == 1
            events = search.search_events(corpus, "a", query)
            assert [hit.seq for hit in events.items] == [1, 0] if query == "deploy" else [1]
            assert events.items[0].snippet == snippet_at(long_text, long_text.find("deploy"), 30)
        words = search.search_events(corpus, "a", "now deploy", match="words")
        assert [hit.seq for hit in words.items] == [1]


@pytest.mark.parametrize("scope", ["sessions", "events"])
def test_a_search_over_a_huge_repetitive_event_honours_a_one_second_deadline(
    tmp_path: Path, scope: str
) -> None:
    store = FakePersistence()
    store.put(header("a"), log("a word", "word " * 300_000))  # 1.5 MB
    corpus = FakeCorpus(store)
    with SqliteSearch(tmp_path / "i.db") as search:
        search.update(corpus)
        for query in ("word", "word word", "a word"):
            started = time.monotonic()
            cancel = CancelToken(deadline=started + 1.0)
            try:
                if scope == "sessions":
                    page = search.search_sessions(corpus, query, cancel=cancel)
                    assert page.items[0].record.id == "a"
                else:
                    events = search.search_events(corpus, "a", query, cancel=cancel)
                    assert events.items
            except SessionQueryError as exc:
                assert exc.code is ErrorCode.ABORTED
            assert time.monotonic() - started < 2.0
