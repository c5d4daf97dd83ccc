"""Tests for sessionquery.model.textmatch: the original's whitespace set and case folding."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionquery.model.textmatch import (
    WHITESPACE,
    collapse_whitespace,
    fold_case,
    is_blank,
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
