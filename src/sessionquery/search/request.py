"""A search request checked once, the same way by every search backend (SPEC §7, §13.3).

Both backends validate the query, the match mode, the filters and the limit and fingerprint
the request for its cursors before they touch their index; this module is that step, so the
two cannot drift apart. Each backend then compiles the clauses into its own SQL dialect and
executes the mode's plan (:attr:`SearchRequest.plan`), never comparing the mode's name. The
mode is part of the fingerprint, so a cursor of one mode never continues another.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.match_modes import SearchMatch, SearchPlan, search_mode, validate_match
from sessionquery.model.textmatch import collapse_whitespace
from sessionquery.query.filters import (
    EventFilter,
    SessionFilter,
    validate_event_filters,
    validate_session_filters,
)
from sessionquery.search.cursor import request_fingerprint

__all__ = [
    "MAX_QUERY_BYTES",
    "SearchRequest",
    "event_request",
    "normalize_query",
    "session_request",
    "validate_limit",
]

MAX_QUERY_BYTES = 1 << 20
"""Queries longer than 1 MiB (UTF-8, after normalisation) are refused."""


def _invalid_query(message: str) -> SessionQueryError:
    return SessionQueryError(ErrorCode.INVALID_QUERY, message)


def normalize_query(query: object) -> str:
    """Trim and collapse whitespace; refuse non-strings, empty queries, NUL and > 1 MiB.

    Raises:
        SessionQueryError: ``INVALID_QUERY``.
    """
    if not isinstance(query, str):
        raise _invalid_query(f"session-search query must be a string, not {type(query).__name__}")
    if "\x00" in query:
        raise _invalid_query("session-search query must not contain NUL characters")
    normalized = collapse_whitespace(query)  # the original's (JavaScript's) whitespace
    if not normalized:
        raise _invalid_query("session-search query must contain non-whitespace text")
    if len(normalized) > MAX_QUERY_BYTES // 4 and (
        len(normalized.encode("utf-8", "surrogatepass")) > MAX_QUERY_BYTES
    ):
        raise _invalid_query("session-search query is longer than 1 MiB")
    return normalized


def validate_limit(limit: object, default: int, maximum: int) -> int:
    """``limit`` or ``default``; must be an integer in ``[1, maximum]``.

    Raises:
        SessionQueryError: ``INVALID_LIMIT``.
    """
    if limit is None:
        return default
    if type(limit) is not int or not 1 <= limit <= maximum:
        raise SessionQueryError(
            ErrorCode.INVALID_LIMIT,
            f"session-search limit must be an integer between 1 and {maximum}, not {limit!r}",
        )
    return limit


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """A validated request: normalised query text, mode, clauses, page size and the
    fingerprint its cursors are bound to."""

    text: str
    mode: SearchMatch
    session_filters: tuple[SessionFilter, ...]
    event_filters: tuple[EventFilter, ...]
    page_size: int
    fingerprint: str
    allow_partial: bool = False
    """Answer from the indexed part of an unfinished build rather than ``INDEX_BUILDING``
    (not part of the fingerprint: it changes when an answer comes, not what it is)."""

    @property
    def plan(self) -> SearchPlan:
        """The steps a backend executes, from the mode's record
        (:mod:`sessionquery.match_modes`)."""
        return search_mode(self.mode).plan


def session_request(
    query: object,
    match: object,
    session_filters: object,
    event_filters: object,
    limit: object,
    *,
    default_limit: int,
    max_limit: int,
    allow_partial: bool = False,
) -> SearchRequest:
    """Check a session search request.

    Raises:
        SessionQueryError: ``INVALID_QUERY``, ``INVALID_FILTER`` or ``INVALID_LIMIT``.
    """
    text = normalize_query(query)
    mode = validate_match(match)
    sessions = validate_session_filters(session_filters)
    events = validate_event_filters(event_filters, allow_text=False)
    page_size = validate_limit(limit, default_limit, max_limit)
    fingerprint = request_fingerprint(
        "sessions",
        text,
        limit=page_size,
        session_filters=sessions,
        event_filters=events,
        match=mode,
    )
    return SearchRequest(
        text, mode, sessions, events, page_size, fingerprint, allow_partial is True
    )


def event_request(
    session_id: object,
    query: object,
    match: object,
    filters: Sequence[EventFilter] | object,
    limit: object,
    *,
    default_limit: int,
    max_limit: int,
    allow_partial: bool = False,
) -> SearchRequest:
    """Check an event search request for one session.

    Raises:
        SessionQueryError: ``INVALID_FILTER`` for a non-string session id, ``INVALID_QUERY``,
            ``INVALID_FILTER`` or ``INVALID_LIMIT``.
    """
    if not isinstance(session_id, str):
        raise SessionQueryError(
            ErrorCode.INVALID_FILTER,
            f"session-search session id must be a string, not {type(session_id).__name__}",
        )
    text = normalize_query(query)
    mode = validate_match(match)
    events = validate_event_filters(filters, allow_text=False)
    page_size = validate_limit(limit, default_limit, max_limit)
    fingerprint = request_fingerprint(
        "events",
        text,
        limit=page_size,
        event_filters=events,
        session_id=session_id,
        match=mode,
    )
    return SearchRequest(text, mode, (), events, page_size, fingerprint, allow_partial is True)
