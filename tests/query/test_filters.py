"""Tests for sessionquery.query.filters: construction, validation and matching."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import raises_code
from sessionquery.errors import ErrorCode
from sessionquery.model.textmatch import is_blank
from sessionquery.query.filters import (
    AvailabilityIn,
    CreatedBetween,
    CwdIn,
    IdIn,
    ParentIn,
    SeqBetween,
    SurfaceIn,
    TextContains,
    TimeBetween,
    TypeIn,
    event_matches,
    session_matches,
    validate_event_filters,
    validate_session_filters,
)


def session(filters: Any, **fields: Any) -> bool:
    record: dict[str, Any] = {
        "id": "s1",
        "cwd": "/w",
        "created_at": 100,
        "parent": None,
        "live": True,
        "persisted": False,
    }
    record.update(fields)
    return session_matches(filters, **record)


def event(filters: Any, **fields: Any) -> bool:
    record: dict[str, Any] = {
        "seq": 5,
        "time": 1000,
        "type": "user/message",
        "surface": "current",
        "text": "The Failing\n  test",
    }
    record.update(fields)
    return event_matches(filters, **record)


@pytest.mark.parametrize(
    "build",
    [
        lambda: IdIn("abc"),  # a bare string is not a list of values
        lambda: IdIn((1,)),  # type: ignore[arg-type]
        lambda: IdIn((None,)),  # type: ignore[arg-type]
        lambda: TypeIn(5),  # type: ignore[arg-type]
        lambda: AvailabilityIn(("archived",)),
        lambda: SurfaceIn(("hidden",)),  # type: ignore[arg-type]
        lambda: CreatedBetween(start=5, end=4),
        lambda: SeqBetween(start=math.inf),
        lambda: TimeBetween(end=math.nan),
        lambda: SeqBetween(start=True),
        lambda: TimeBetween(start="1"),  # type: ignore[arg-type]
        lambda: TextContains(""),
        lambda: TextContains(" \t\n"),
        lambda: TextContains(3),  # type: ignore[arg-type]
    ],
)
def test_invalid_clauses_raise_invalid_filter_at_construction(build: Any) -> None:
    with raises_code(ErrorCode.INVALID_FILTER):
        build()


def test_list_values_are_frozen_into_tuples() -> None:
    values = ["a", "b"]
    clause = IdIn(values)
    values.append("c")
    assert clause.values == ("a", "b")
    assert hash(clause) == hash(IdIn(("a", "b")))


def test_session_clauses_match_as_documented() -> None:
    assert session([IdIn(("s1", "s2"))])
    assert not session([IdIn(())])
    assert session([CwdIn((None,))], cwd=None) and not session([CwdIn((None,))])
    assert not session([CwdIn(("/w/",))])  # cwd is compared verbatim
    assert session([ParentIn((None,))]) and session([ParentIn(("p",))], parent="p")
    assert session([CreatedBetween(start=100, end=100)])
    assert session([CreatedBetween(end=100)]) and not session([CreatedBetween(start=101)])
    assert session([CreatedBetween()])
    assert session([AvailabilityIn(("persisted", "live"))])
    assert not session([AvailabilityIn(("persisted",))])
    assert not session([IdIn(("s1",)), IdIn(("s2",))])  # repeated clauses are ANDed


def test_event_clauses_match_as_documented() -> None:
    assert event([SeqBetween(start=5, end=5), TimeBetween(start=1000)])
    assert not event([SeqBetween(end=4)])
    assert event([TypeIn(("x", "user/message"))]) and not event([TypeIn(())])
    assert event([SurfaceIn(("current",))]) and not event([SurfaceIn(("shadowed", "log-only"))])


def test_text_contains_is_literal_case_insensitive_and_whitespace_flexible() -> None:
    assert event([TextContains("failing test")])
    assert event([TextContains("  FAILING   TEST ")])
    assert event([TextContains("ailing te")])  # substring, no word boundaries
    assert not event([TextContains("test failing")])
    assert not event([TextContains("fa.ling")])  # regex syntax is literal
    assert event([TextContains("a.b(c)*")], text="see a.b(c)* here")
    assert event([TextContains("ÉCOLE")], text="une école")


@given(st.text(min_size=1), st.text(), st.text())
def test_text_contains_finds_any_literal_piece_of_the_text(
    needle: str, prefix: str, suffix: str
) -> None:
    if is_blank(needle):
        return
    clause = TextContains(needle)
    assert clause.matches(prefix + needle + suffix)


def test_text_contains_folds_case_like_javascript_without_special_casing() -> None:
    assert not event([TextContains("istanbul")], text="İstanbul")
    assert not event([TextContains("İstanbul")], text="istanbul")
    assert event([TextContains("İSTANBUL")], text="İstanbul")
    assert event([TextContains("\u212a")], text="k")  # KELVIN SIGN folds to k
    assert event([TextContains("ΣΊΣΥΦΟΣ")], text="σίσυφος")  # final sigma is sigma
    assert not event([TextContains("strasse")], text="Straße")  # no full folding
    assert event([TextContains("ẞ")], text="ß")  # the simple folding of capital sharp s


def test_text_contains_uses_ecmascript_whitespace_for_trimming_splitting_and_blanks() -> None:
    # U+FEFF is whitespace: trimmed from the filter, and it joins words like a space.
    assert event([TextContains("\ufefffailing\ufefftest\ufeff")], text="failing test")
    assert event([TextContains("failing test")], text="failing\ufefftest")
    with raises_code(ErrorCode.INVALID_FILTER):
        TextContains("\ufeff \u3000")
    # U+001C-U+001F and U+0085 are not whitespace: a filter of them alone is text, and it
    # matches only those code points, never a space.
    for code_point in ("\x1c", "\x1d", "\x1e", "\x1f", "\x85"):
        clause = TextContains(code_point)
        assert event([clause], text=f"a{code_point}b")
        assert not event([TextContains(f"a{code_point}b")], text="a b")
        assert not event([TextContains("a b")], text=f"a{code_point}b")


def test_validate_rejects_non_lists_and_foreign_clauses() -> None:
    for bad in ("abc", 3, [SeqBetween()], [None]):
        with raises_code(ErrorCode.INVALID_FILTER):
            validate_session_filters(bad)
    for other in (b"x", [IdIn(("a",))], [object()]):
        with raises_code(ErrorCode.INVALID_FILTER):
            validate_event_filters(other)
    assert validate_session_filters([IdIn(("a",))]) == (IdIn(("a",)),)
    assert validate_event_filters(iter([TypeIn(("t",))])) == (TypeIn(("t",)),)


def test_search_backends_can_refuse_text_clauses() -> None:
    clauses = [TextContains("x")]
    assert validate_event_filters(clauses) == (TextContains("x"),)
    with raises_code(ErrorCode.INVALID_FILTER):
        validate_event_filters(clauses, allow_text=False)


def test_every_clause_states_a_canonical_form_of_what_it_selects() -> None:
    assert CwdIn(["/b", None, "/a"]).canonical() == {"kind": "cwd", "values": [None, "/a", "/b"]}
    assert SeqBetween(1.0, None).canonical() == {"kind": "seq", "from": 1, "to": None}
    assert TimeBetween(1.5, 2).canonical() == {"kind": "time", "from": 1.5, "to": 2}
    assert TextContains("x  y").canonical() == {"kind": "text", "text": "x  y"}
