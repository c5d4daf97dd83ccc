"""Tests for sessionquery.search.snippet: the snippet window and sanitisation."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sessionquery.search.snippet import (
    ELLIPSIS,
    MATCH_MARK,
    make_snippet,
    sanitize_text,
    snippet_from_highlight,
)


def test_short_text_is_returned_whole_and_whitespace_normalised() -> None:
    assert snippet_from_highlight(f"  a \n\n {MATCH_MARK}b\tc ", 240) == "a b c"


def test_a_match_far_into_the_text_gets_a_leading_ellipsis_and_a_third_of_context() -> None:
    text = " ".join(f"w{n:02}" for n in range(40))  # 40 words of 3 chars + spaces = 159
    highlighted = text.replace("w30", MATCH_MARK + "w30")
    snippet = snippet_from_highlight(highlighted, 30)
    assert snippet.startswith(ELLIPSIS) and snippet.endswith(ELLIPSIS)
    assert len(snippet) == 30
    assert snippet.index("w30") == 1 + 30 // 3


def test_a_match_near_the_end_pulls_the_window_back_to_the_end() -> None:
    text = "x" * 50 + " end"
    assert make_snippet(text, 51, 10) == ELLIPSIS + text[-9:]


def test_a_one_character_budget_is_a_lone_ellipsis() -> None:
    assert make_snippet("abcdef", 3, 1) == ELLIPSIS


def test_a_two_character_budget_starts_at_the_match() -> None:
    assert make_snippet("abcdefgh", 4, 2) == ELLIPSIS + "e"


def test_the_first_match_index_counts_code_points_after_normalisation() -> None:
    highlighted = f"😀  é\u0301   {MATCH_MARK}hit"
    # cleaned: "😀 é́ hit", match at code point 5 (not UTF-16 unit 6)
    assert snippet_from_highlight(highlighted, 4) == ELLIPSIS + " h" + ELLIPSIS


def test_sanitize_replaces_markers_nul_and_lone_surrogates() -> None:
    assert sanitize_text("a\x00b\ufdd0c\ufdd1d\ud800") == "a\ufffdb\ufffdc\ufffdd\ufffd"
    assert sanitize_text("plain") == "plain"


@given(st.text(), st.integers(min_value=0, max_value=300), st.integers(1, 80))
def test_snippets_never_exceed_the_budget(text: str, m: int, k: int) -> None:
    clean = " ".join(text.split())
    snippet = make_snippet(clean, min(m, len(clean)), k)
    assert len(snippet) <= k
    if len(clean) <= k:
        assert snippet == clean
