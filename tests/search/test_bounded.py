"""The bounded path of over-long phrase and words queries: when it is taken, what the
candidates must hold, and how a candidate's own tokens decide and count spans."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionquery.match_modes import Words
from sessionquery.search.bounded import (
    EXPRESSION_TERMS,
    PHRASE_TOKENS,
    count_spans,
    first_span,
    is_long,
    phrases_of,
    selective_tokens,
)
from sessionquery.search.sqlite import db

PHRASE, EVERY = Words.AS_PHRASE, Words.EVERY


def test_a_query_takes_the_bounded_path_past_the_expression_limits() -> None:
    many = [f"w{i}" for i in range(EXPRESSION_TERMS + 1)]
    assert not is_long(phrases_of(many[:-1], EVERY))
    assert is_long(phrases_of(many, EVERY)) and is_long(phrases_of(many, PHRASE))
    repeated = ["a", "b"] * (PHRASE_TOKENS // 2 + 1)
    assert is_long(phrases_of(repeated, PHRASE)) and not is_long(phrases_of(repeated, EVERY))


def test_relevance_candidates_are_not_phrases() -> None:
    with pytest.raises(ValueError):
        phrases_of(["a"], Words.ANY)


def test_the_selective_tokens_are_the_longest_distinct_ones() -> None:
    tokens = ["a", "bbb", "cc", "bbb", *(f"x{i:03d}" for i in range(100))]
    chosen = selective_tokens(tokens)
    assert len(chosen) == EXPRESSION_TERMS
    assert all(len(token) == 4 for token in chosen)
    assert chosen == sorted(chosen)


def test_words_need_every_word_and_count_every_occurrence() -> None:
    phrases = phrases_of(["b", "a", "b"], EVERY)
    assert phrases == (("b",), ("a",))
    assert count_spans(["a", "x", "b", "b"], phrases) == 3
    assert count_spans(["a", "x"], phrases) == 0
    assert first_span(["x", "b", "a"], phrases) == 1


def test_a_phrase_merges_overlapping_instances_like_highlight() -> None:
    assert count_spans(list("aaaa"), phrases_of(list("aa"), PHRASE)) == 1
    assert count_spans(list("abab"), phrases_of(list("ab"), PHRASE)) == 2
    assert count_spans(list("ababa"), phrases_of(list("aba"), PHRASE)) == 1
    assert count_spans(list("ab"), phrases_of(list("abc"), PHRASE)) == 0


_TEXTS = st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=12)


@given(doc=_TEXTS, query=_TEXTS)
def test_span_counts_equal_fts5_highlight_on_any_text(doc: list[str], query: list[str]) -> None:
    with db.connect(":memory:") as conn:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        conn.execute("INSERT INTO t(rowid, x) VALUES (1, ?)", (" ".join(doc),))
        for mode in (PHRASE, EVERY):
            phrases = phrases_of(query, mode)
            expression = " AND ".join('"' + " ".join(p) + '"' for p in phrases)
            row = conn.execute(
                "SELECT highlight(t, 0, char(1), '') FROM t WHERE t MATCH ?", (expression,)
            ).fetchone()
            marks = 0 if row is None else str(row[0]).count("\x01")
            assert count_spans(doc, phrases) == marks, (mode, doc, query)
