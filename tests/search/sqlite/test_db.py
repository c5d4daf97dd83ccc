"""The index's SQLite binding: FTS5's own match-span counts equal ``highlight()``'s."""

from __future__ import annotations

from collections.abc import Iterator

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionquery.search.snippet import MATCH_MARK
from sessionquery.search.sqlite import db
from sessionquery.search.sqlite.query import query_tokens, quote_phrase, words_expression


@pytest.fixture
def memory() -> Iterator[apsw.Connection]:
    conn = db.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='unicode61')")
    yield conn
    conn.close()


def counts(conn: apsw.Connection, text: str, expression: str, overlap: int) -> tuple[int, int]:
    """``(highlight() markers, sq_match_spans)`` of ``text``; ``(0, 0)`` when it does not
    match (only matching documents are ever counted)."""
    conn.execute("DELETE FROM t")
    conn.execute("INSERT INTO t (rowid, text) VALUES (1, ?)", (text,))
    row = conn.execute(
        f"SELECT highlight(t, 0, ?, ''), {db.MATCH_SPANS}(t, ?) FROM t WHERE t MATCH ?",
        (MATCH_MARK, overlap, expression),
    ).fetchone()
    return (0, 0) if row is None else (str(row[0]).count(MATCH_MARK), int(row[1]))


def expression_of(conn: apsw.Connection, query: str, words: bool) -> tuple[str, int]:
    tokens = query_tokens(conn, query)
    if not words:
        return quote_phrase(query), db.overlapping([tokens])
    distinct = list(dict.fromkeys(tokens))
    return words_expression(distinct), db.overlapping([[token] for token in distinct])


WORDS = st.sampled_from(["a", "b", "ab", "A", "á", "x-y", "the", "a.b", "a_a"])
SEPARATORS = st.sampled_from([" ", "  ", "\n", ", ", "-", "\u3000", ".", " ... "])
TEXTS = st.lists(st.tuples(WORDS, SEPARATORS), max_size=60).map(
    lambda parts: "".join(word + separator for word, separator in parts)
)
QUERIES = st.sampled_from(
    ["a", "a b", "a a", "b a b", "a b a", "ab", "a a a", "the a", "x y", "A á", "b"]
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS, query=QUERIES, words=st.booleans())
def test_match_spans_equal_highlight_markers(
    memory: apsw.Connection, text: str, query: str, words: bool
) -> None:
    expression, overlap = expression_of(memory, query, words)
    marked, counted = counts(memory, text, expression, overlap)
    assert counted == marked


@pytest.mark.parametrize(
    ("text", "query", "spans"),
    [
        ("a a a", "a a", 1),  # overlapping instances merge into one span
        ("a a b a a", "a a", 2),
        ("a b a b a", "a b a", 1),
        ("a a a a", "a", 4),  # single tokens never overlap, adjacent or not
        ("A á a", "a", 3),  # case and diacritics folded by unicode61
    ],
)
def test_overlapping_phrase_instances_count_as_one_span(
    memory: apsw.Connection, text: str, query: str, spans: int
) -> None:
    expression, overlap = expression_of(memory, query, words=False)
    assert counts(memory, text, expression, overlap) == (spans, spans)


def test_instances_are_counted_without_merging_only_when_none_can_overlap() -> None:
    assert db.overlapping([["a", "b"]]) == 0
    assert db.overlapping([["a"], ["b"]]) == 0
    assert db.overlapping([["a", "b", "a"]]) == 1
    assert db.overlapping([["a"], ["a"]]) == 1
    assert db.overlapping([["a", "b"], ["c"]]) == 1


def test_spans_merge_instances_that_share_a_token() -> None:
    assert db.spans_of([]) == 0
    assert db.spans_of([(4, 5), (0, 1), (1, 2)]) == 2
    assert db.spans_of([(0, 3), (1, 1), (3, 4), (5, 5)]) == 2


def test_one_raises_damaged_when_a_statement_yields_no_row() -> None:
    conn = db.connect(":memory:")
    conn.execute("CREATE TABLE s (x)")
    with pytest.raises(db.Damaged):
        db.one(conn, "SELECT x FROM s")
    assert db.one(conn, "SELECT count(*) FROM s") == (0,)
