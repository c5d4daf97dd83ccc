"""Tests for the short session ids and the id resolver (sessionquery.shortids)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import raises_code
from sessionquery.errors import ErrorCode
from sessionquery.model import SessionHeader
from sessionquery.persistence.base import SessionOutline
from sessionquery.shortids import AmbiguousId, SessionIds


def _header(session_id: str, parent: str | None = None, created_at: int = 0) -> SessionHeader:
    return SessionHeader(id=session_id, created_at=created_at, parent_session=parent)


def test_a_full_id_wins_over_longer_ids_it_starts() -> None:
    ids = SessionIds([_header("abcd"), _header("abcdef")])
    assert ids.resolve("abcd") == "abcd"
    assert ids.resolve("abcde") == "abcdef"


def test_a_start_of_several_ids_is_ambiguous_and_lists_them() -> None:
    ids = SessionIds([_header(f"run-{n}") for n in range(12)])
    with pytest.raises(AmbiguousId) as caught:
        ids.resolve("run-")
    assert caught.value.code is ErrorCode.INVALID_CONFIG
    assert len(caught.value.candidates) == 12
    assert "and 2 more" in caught.value.message


@pytest.mark.parametrize("text", ["", "zzz", "run-1x"])
def test_text_that_starts_no_id_is_session_not_found(text: str) -> None:
    ids = SessionIds([_header("run-1"), _header("run-2")])
    with raises_code(ErrorCode.SESSION_NOT_FOUND):
        ids.resolve(text)


# -- short ids ----------------------------------------------------------------------------------

ROOT = "fe5e1c67-0a1b-4c2d-8e3f-000000000001"


def _family() -> list[SessionHeader]:
    children = [_header(f"{ROOT}/agent-{n}", ROOT, created_at=10 - n) for n in range(3)]
    grandchild = _header(f"{ROOT}/agent-0/inner", f"{ROOT}/agent-0", created_at=20)
    return [_header(ROOT), _header("fe5e9999-other-root"), *children, grandchild]


def test_a_root_with_children_is_named_by_a_start_and_its_children_by_number() -> None:
    ids = SessionIds(_family())
    assert ids.short(ROOT) == "fe5e1c67"
    # Children are numbered oldest first: agent-2 was created first.
    assert [ids.short(f"{ROOT}/agent-{n}") for n in (2, 1, 0)] == [
        "fe5e1c67/1",
        "fe5e1c67/2",
        "fe5e1c67/3",
    ]
    assert ids.short(f"{ROOT}/agent-0/inner") == "fe5e1c67/3/1"
    assert ids.resolve("fe5e1c67/3/1") == f"{ROOT}/agent-0/inner"


def test_the_start_of_a_root_names_the_root_even_when_its_children_share_it() -> None:
    ids = SessionIds(_family())
    assert ids.resolve("fe5e1") == ROOT  # the start of 5 ids, but of one root only
    with pytest.raises(AmbiguousId):
        ids.resolve("fe5e")  # two roots start so
    assert ids.resolve(f"{ROOT}/agent-1") == f"{ROOT}/agent-1"
    assert ids.resolve(f"{ROOT}/agent-0/i") == f"{ROOT}/agent-0/inner"


def test_a_short_id_that_is_another_sessions_id_gives_way_to_the_full_id() -> None:
    ids = SessionIds([_header("abcdefgh-1"), _header("abcdefgh-1/1"), _header("k", "abcdefgh-1")])
    assert ids.short("k") == "k"  # "abcdefgh-1/1" is a real id
    assert ids.resolve("abcdefgh-1/1") == "abcdefgh-1/1"


def test_a_parent_cycle_or_a_missing_parent_still_gets_an_id_that_resolves() -> None:
    ids = SessionIds(
        [_header("a-cycle", "b-cycle"), _header("b-cycle", "a-cycle"), _header("c", "gone")]
    )
    for session_id in ("a-cycle", "b-cycle", "c"):
        assert ids.resolve(ids.short(session_id)) == session_id
    assert ids.short("c") == "c"  # its parent is not in the listing: a root


_ID = st.text(alphabet="ab1/-", min_size=1, max_size=6)


@settings(max_examples=100)
@given(st.lists(st.tuples(_ID, st.one_of(st.none(), _ID), st.integers(0, 3)), max_size=12))
def test_every_short_id_is_unique_and_names_its_own_session(
    rows: list[tuple[str, str | None, int]],
) -> None:
    headers = {sid: _header(sid, parent, created) for sid, parent, created in rows}
    ids = SessionIds(headers.values())
    shorts = {session_id: ids.short(session_id) for session_id in headers}
    assert len(set(shorts.values())) == len(shorts)
    for session_id, short in shorts.items():
        assert ids.resolve(short) == session_id


@settings(max_examples=200)
@given(
    st.lists(st.tuples(_ID, st.one_of(st.none(), _ID), st.integers(0, 3)), max_size=12),
    st.data(),
)
def test_a_short_id_asked_for_alone_is_the_one_the_whole_listing_gives(
    rows: list[tuple[str, str | None, int]], data: st.DataObject
) -> None:
    headers = {sid: _header(sid, parent, created) for sid, parent, created in rows}
    whole = SessionIds(headers.values())
    with raises_code(ErrorCode.SESSION_NOT_FOUND):
        whole.resolve("zzz")  # a typed start: every short id is found, from the roots down
    expected = {session_id: whole.short(session_id) for session_id in headers}
    asked = data.draw(st.permutations(sorted(headers)))
    alone = SessionIds(headers.values())  # short ids found one at a time, in any order
    assert {session_id: alone.short(session_id) for session_id in asked} == expected


def test_short_ids_are_found_from_outlines_as_from_headers() -> None:
    rows = [("fe5e1c67-aaaa", None, 1), ("fe5e1c67-aaaa-child", "fe5e1c67-aaaa", 2)]
    outlines = [SessionOutline(sid, parent, created, None) for sid, parent, created in rows]
    from_headers = SessionIds(_header(*row) for row in rows)
    from_outlines = SessionIds(outlines)
    for sid, _, _ in rows:
        assert from_outlines.short(sid) == from_headers.short(sid)
    assert from_outlines.short("fe5e1c67-aaaa-child") == "fe5e1c67/1"


@pytest.mark.parametrize(
    ("roots", "expected"),
    [
        (["billing-rounding", "dashboard-websocket"], ["billing-rounding", "dashboard"]),
        (["dashboard-websocket", "dashboard-dark-mode"], ["dashboard-websocket", "dashboard-dark"]),
        (["0195aaaa-bbbb", "c0ffee00-1111"], ["0195aaaa", "c0ffee00"]),
        (["long-" + "x" * 120], ["long-xxx"]),
    ],
)
def test_a_roots_short_id_ends_at_a_word_when_that_is_cheap(
    roots: list[str], expected: list[str]
) -> None:
    ids = SessionIds([_header(root) for root in roots])
    assert [ids.short(root) for root in roots] == expected
