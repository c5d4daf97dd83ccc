"""Tests for sessionquery.model.textmatch: the original's whitespace set and case folding."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionquery.model import textmatch
from sessionquery.model.textmatch import (
    WHITESPACE,
    WHITESPACE_RUN,
    collapse_whitespace,
    fold_case,
    is_blank,
    literal_pattern,
    split_words,
    trim,
)

# JavaScript's \s, listed by code point (ECMAScript WhiteSpace and LineTerminator).
JS_WHITESPACE = {
    0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680, *range(0x2000, 0x200B),
    0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF,
}  # fmt: skip


def test_the_whitespace_set_is_javascripts_backslash_s() -> None:
    assert {ord(char) for char in WHITESPACE} == JS_WHITESPACE
    assert len(WHITESPACE) == len(JS_WHITESPACE)


@pytest.mark.parametrize("code_point", [0x1C, 0x1D, 0x1E, 0x1F, 0x85, 0x180E, 0x200B])
def test_code_points_python_may_treat_as_space_are_not_whitespace(code_point: int) -> None:
    char = chr(code_point)
    assert not is_blank(char)
    assert trim(f" {char} ") == char
    assert split_words(f"a{char}b") == [f"a{char}b"]


def test_feff_is_trimmed_split_on_and_blank() -> None:
    assert trim("\ufeffword\ufeff") == "word"
    assert split_words("one\ufefftwo") == ["one", "two"]
    assert is_blank("\ufeff\u3000\u2028")


def test_collapse_whitespace_trims_and_joins_runs_with_one_space() -> None:
    assert collapse_whitespace("\u3000 failed \t\n\u00a0 test\ufeff") == "failed test"
    assert collapse_whitespace("a\x85b\x1cc") == "a\x85b\x1cc"
    assert collapse_whitespace("") == ""
    assert split_words("  ") == []


@given(st.text(alphabet=st.characters(max_codepoint=0x7F)))
def test_collapse_whitespace_of_ascii_text_joins_the_pieces_split_words_finds(text: str) -> None:
    assert collapse_whitespace(text) == " ".join(split_words(text))


@pytest.mark.parametrize(
    ("text", "folded"),
    [
        ("İstanbul", "İstanbul"),  # U+0130 has only a full folding: it stays
        ("ISTANBUL", "istanbul"),
        ("\u0131", "\u0131"),  # dotless i folds to itself, never to i
        ("\u212a", "k"),  # KELVIN SIGN
        ("\u017f", "s"),  # LONG S
        ("\u03a3\u0391\u03c2", "\u03c3\u03b1\u03c3"),  # final sigma folds to sigma
        ("ß", "ß"),  # the full folding "ss" is not used
        ("ẞ", "ß"),  # capital sharp s has a simple folding
        ("ᾈ", "ᾀ"),  # simple folding of a titlecase letter with a full folding
        ("ΐ", "ΐ"),  # status S foldings Python's casefold does not reveal
        ("ΰ", "ΰ"),
        ("ﬅ", "ﬆ"),
        ("\uab70", "\u13a0"),  # Cherokee small letters fold to the capitals
        ("Ǆǅǆ", "ǆǆǆ"),
    ],
)
def test_fold_case_is_javascripts_simple_case_folding(text: str, folded: str) -> None:
    assert fold_case(text) == folded


@given(st.text())
def test_fold_case_keeps_length_and_is_idempotent(text: str) -> None:
    folded = fold_case(text)
    assert len(folded) == len(text)
    assert fold_case(folded) == folded


@given(st.text(alphabet=st.characters(codec="ascii")))
def test_ascii_folds_by_lowercasing_a_to_z_only(text: str) -> None:
    assert fold_case(text) == text.lower()
    assert fold_case(text + "é") == text.lower() + "é"


@given(st.text())
def test_whitespace_never_folds_and_folding_never_makes_whitespace(text: str) -> None:
    folded = fold_case(text)
    for before, after in zip(text, folded, strict=True):
        assert (before in WHITESPACE) == (after in WHITESPACE)


def test_the_list_of_code_points_folding_unlike_lower_is_complete() -> None:
    # Every other code point must fold exactly as str.lower() lowercases it on its own.
    pattern = textmatch._FOLDS_UNLIKE_LOWER  # pyright: ignore[reportPrivateUsage]
    for code_point in range(0x110000):
        if 0xD800 <= code_point <= 0xDFFF:
            continue
        char = chr(code_point)
        if pattern.fullmatch(char) is None:
            assert textmatch._simple_folding(code_point) == char.lower(), hex(code_point)  # pyright: ignore[reportPrivateUsage]


def test_final_sigma_folds_to_sigma_wherever_it_stands() -> None:
    assert fold_case("ΟΔΥΣΣΕΥΣ") == "οδυσσευσ"
    assert fold_case("\u03a3 \u03a3\u0391 a\u03a3") == "\u03c3 \u03c3\u03b1 a\u03c3"


# Letters whose case-insensitive matching differs between Python's IGNORECASE and JavaScript
# (U+0130, U+0131), or that fold to ASCII (KELVIN SIGN, LONG S, ANGSTROM SIGN), with spaces.
_TRICKY_TEXT = "iIkKsSaA\u0130\u0131\u212a\u017f\u212b\u00e5 \u00a0\ufeff\x1c\x85"


def _folded_search(words: list[str], text: str) -> bool:
    pattern = re.compile(WHITESPACE_RUN.join(re.escape(fold_case(word)) for word in words))
    return pattern.search(fold_case(text)) is not None


@given(
    st.lists(st.text(alphabet="iIkKsSaA", min_size=1, max_size=3), min_size=1, max_size=3),
    st.text(alphabet=_TRICKY_TEXT, max_size=12),
)
def test_an_ascii_needle_matches_exactly_where_folded_text_would(
    words: list[str], text: str
) -> None:
    pattern = literal_pattern(words)
    assert not pattern.folds
    assert pattern.found_in(text) == _folded_search(words, text)
    joined = " ".join(words)
    assert pattern.found_in(text + joined.swapcase() + text)


@given(
    st.lists(st.text(alphabet="\u0130\u0131\u212b\u00e5\u03a3\u03c2", min_size=1), min_size=1),
    st.text(alphabet=_TRICKY_TEXT + "\u03a3\u03c2\u03c3", max_size=12),
)
def test_a_non_ascii_needle_is_matched_on_folded_text(words: list[str], text: str) -> None:
    pattern = literal_pattern(words)
    assert pattern.folds
    assert pattern.found_in(text) == _folded_search(words, text)


def test_istanbul_is_not_found_in_dotted_istanbul_either_way() -> None:
    assert not literal_pattern(["istanbul"]).found_in("\u0130stanbul")
    assert not literal_pattern(["\u0130stanbul"]).found_in("istanbul")
    assert not literal_pattern(["i"]).found_in("\u0131")
    assert literal_pattern(["ISTANBUL"]).found_in("istanbul")
    assert literal_pattern(["k"]).found_in("\u212a")
    assert literal_pattern(["istanbul"]).found_in("\u0130stanbul, ISTANBUL")
    assert literal_pattern(["Ki"]).strict_i is not None
    assert literal_pattern(["ok"]).strict_i is None
