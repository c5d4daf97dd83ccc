"""Tests for sessionquery.query.listing: the paged, newest-first listing (``list_page``).

The pages of a request are checked against ``filter_sessions`` over the same corpus, on the
JSONL store and on PostgreSQL (whose pages are its own indexed queries), with live-only,
persisted-only and live-and-persisted sessions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import Storage, raises_code
from sessionquery.errors import ErrorCode
from sessionquery.live import SessionStore
from sessionquery.model import SessionHeader
from sessionquery.persistence.base import NewestListing, SessionPersistence
from sessionquery.persistence.jsonl import JsonlPersistence
from sessionquery.query import (
    AvailabilityIn,
    CreatedBetween,
    CwdIn,
    IdIn,
    ParentIn,
    SessionFilter,
    SessionQuery,
    SessionRecord,
)
from sessionquery.redact import RedactingPersistence, default_redactor

IDS = ("a1", "a2", "b1", "b2", "c1", "c2", "d1")
CWDS = (None, "/w/one", "/w/two")
WHERE = ("persisted", "live", "both")

sessions_st = st.lists(
    st.tuples(
        st.sampled_from(IDS),
        st.integers(0, 4),  # few distinct times: many ties, ordered by id
        st.sampled_from(CWDS),
        st.sampled_from((None, "a1", "zz")),
        st.sampled_from(WHERE),
    ),
    max_size=7,
    unique_by=lambda s: s[0],
)


def _clause() -> st.SearchStrategy[SessionFilter]:
    some = st.lists(st.sampled_from(IDS), max_size=4)
    return st.one_of(
        some.map(IdIn),
        st.lists(st.sampled_from(CWDS), max_size=2).map(CwdIn),
        st.tuples(st.none() | st.integers(0, 4), st.none() | st.integers(0, 4))
        .filter(lambda r: r[0] is None or r[1] is None or r[0] <= r[1])
        .map(lambda r: CreatedBetween(*r)),
        st.lists(st.sampled_from((None, "a1", "zz")), max_size=2).map(ParentIn),
        st.lists(st.sampled_from(("live", "persisted")), min_size=1, max_size=2).map(
            AvailabilityIn
        ),
    )


filters_st = st.lists(_clause(), max_size=2)


def _build(persistence: Any, rows: Sequence[tuple[str, int, str | None, str | None, str]]) -> Any:
    """A memory-only live store over ``rows``; the persisted ones are written to
    ``persistence`` (a session both live and persisted has the same header in each)."""
    live = SessionStore()
    for sid, created, cwd, parent, where in rows:
        if where != "live":
            header = SessionHeader(id=sid, created_at=created, cwd=cwd, parent_session=parent)
            persistence.create(header).close()
        if where != "persisted":
            live.create(sid, created_at=created, cwd=cwd, parent_session=parent)
    return live


def _all_pages(query: SessionQuery, filters: Sequence[SessionFilter], limit: int) -> list[Any]:
    pages = [query.list_page(filters, limit=limit)]
    while pages[-1].next_cursor is not None:
        assert len(pages) <= len(IDS) + 1, "a listing that never ends"
        pages.append(query.list_page(filters, limit=limit, cursor=pages[-1].next_cursor))
    return pages


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=sessions_st, filters=filters_st, limit=st.integers(1, 4))
def test_the_pages_of_a_listing_concatenated_are_filter_sessions(
    storage: Storage,
    rows: list[tuple[str, int, str | None, str | None, str]],
    filters: list[SessionFilter],
    limit: int,
) -> None:
    persistence = storage.persistence
    live = _build(persistence, rows)
    try:
        query = SessionQuery(live, persistence)
        expected = query.filter_sessions(filters)
        pages = _all_pages(query, filters, limit)
        assert all(len(page.items) == limit for page in pages[:-1])
        assert len(pages[-1].items) <= limit
        assert [r for page in pages for r in page.items] == expected
        # Through the redacting wrapper (every command reads it) the pages are the same.
        redacted = SessionQuery(live, RedactingPersistence(persistence, default_redactor()))
        assert [r for p in _all_pages(redacted, filters, limit) for r in p.items] == expected
    finally:
        for session in list(live.sessions()):
            live.close(session.id)
        for entry in persistence.list():
            persistence.delete(entry.header.id)


def test_the_postgres_store_lists_a_page_itself(storage: Storage) -> None:
    # The capability the service uses instead of listing everything (JSONL: not offered).
    assert isinstance(storage.persistence, NewestListing) == (storage.backend == "postgres")


def _headers(persistence: Any, *rows: tuple[str, int]) -> None:
    for sid, created in rows:
        persistence.create(SessionHeader(id=sid, created_at=created, cwd="/w")).close()


def _ids(records: Sequence[SessionRecord]) -> list[str]:
    return [record.id for record in records]


def test_a_session_created_between_two_pages_never_shifts_the_others(storage: Storage) -> None:
    persistence = storage.persistence
    _headers(persistence, ("s3", 30), ("s2", 20), ("s1", 10))
    query = SessionQuery(None, persistence)
    first = query.list_page(limit=2)
    assert _ids(first.items) == ["s3", "s2"]
    _headers(persistence, ("s4", 40), ("s0", 5))  # one before the cursor, one after
    second = query.list_page(limit=2, cursor=first.next_cursor)
    assert _ids(second.items) == ["s1", "s0"]
    assert second.next_cursor is None


def test_a_live_session_is_listed_live_and_says_it_is_persisted(storage: Storage) -> None:
    persistence = storage.persistence
    _headers(persistence, ("s2", 20), ("s1", 10))
    live = SessionStore()
    live.create("s1", created_at=10, cwd="/w")
    live.create("s3", created_at=30)
    page = SessionQuery(live, persistence).list_page()
    assert [(r.id, r.live, r.persisted) for r in page.items] == [
        ("s3", True, False),
        ("s2", False, True),
        ("s1", True, True),
    ]


def test_a_live_header_that_disagrees_with_the_stored_one_is_a_source_conflict(
    storage: Storage,
) -> None:
    _headers(storage.persistence, ("s1", 10))
    live = SessionStore()
    live.create("s1", created_at=10, cwd="/elsewhere")
    with raises_code(ErrorCode.SOURCE_CONFLICT):
        SessionQuery(live, storage.persistence).list_page()


class _Untouchable:
    """A persistence that fails the test when any of its methods is called."""

    def __getattr__(self, name: str) -> Any:
        def touched(*args: object, **kwargs: object) -> None:
            raise AssertionError(f"{name} was called")

        return touched


UNTOUCHABLE = cast("SessionPersistence", _Untouchable())


@pytest.mark.parametrize("limit", [0, -1, 1001, "3", 2.0, True, None])
def test_a_limit_out_of_range_is_invalid_limit_before_any_io(limit: object) -> None:
    query = SessionQuery(None, UNTOUCHABLE)
    with raises_code(ErrorCode.INVALID_LIMIT):
        query.list_page(limit=limit)  # type: ignore[arg-type]


def test_a_bad_filter_is_invalid_filter_before_any_io() -> None:
    query = SessionQuery(None, UNTOUCHABLE)
    with raises_code(ErrorCode.INVALID_FILTER):
        query.list_page(["not a clause"])  # type: ignore[list-item]


@pytest.mark.parametrize("cursor", ["", "!!", "abc", "x" * 9000, 7, "é"])
def test_a_malformed_cursor_is_invalid_cursor_before_any_io(cursor: object) -> None:
    query = SessionQuery(None, UNTOUCHABLE)
    with raises_code(ErrorCode.INVALID_CURSOR):
        query.list_page(cursor=cursor)  # type: ignore[arg-type]


def test_a_cursor_of_other_filters_or_another_service_is_invalid(tmp_path: Any) -> None:
    persistence = JsonlPersistence(tmp_path)
    _headers(persistence, ("s2", 20), ("s1", 10))
    query = SessionQuery(None, persistence)
    cursor = query.list_page([CwdIn(["/w"])], limit=1).next_cursor
    assert cursor is not None
    # The same clauses in another order continue it; any limit may follow it.
    both: list[SessionFilter] = [CwdIn(["/w"]), CreatedBetween(0, 50)]
    again = query.list_page(list(reversed(both)), limit=1).next_cursor
    assert _ids(query.list_page(both, limit=5, cursor=again).items) == ["s1"]
    with raises_code(ErrorCode.INVALID_CURSOR):
        query.list_page(limit=1, cursor=cursor)
    with raises_code(ErrorCode.INVALID_CURSOR):
        SessionQuery(None, persistence).list_page([CwdIn(["/w"])], limit=1, cursor=cursor)
    tampered = cursor[:-2] + ("A" if cursor[-2] != "A" else "B") + cursor[-1]
    with raises_code(ErrorCode.INVALID_CURSOR):
        query.list_page([CwdIn(["/w"])], limit=1, cursor=tampered)


def test_an_expired_deadline_is_aborted_before_any_io() -> None:
    from sessionquery.query import CancelToken

    token = CancelToken()
    token.cancel()
    with raises_code(ErrorCode.ABORTED):
        SessionQuery(None, UNTOUCHABLE).list_page(cancel=token)
