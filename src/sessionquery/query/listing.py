"""The paged listing: sessions newest first, one page at a time (``SessionQuery.list_page``).

The SPEC names only the whole listing (``list_sessions``, ``filter_sessions``); a history of
a team holds 100,000 sessions and more, and a person or a model looks at the newest few. A
page is keyset-paged by the listing order itself, ``(created_at desc, id)``: its cursor holds
the last session's key, so a page costs what its sessions cost whatever their number, and a
session created or removed between two pages never shifts the others (no stale cursor).

Invariants:

* the pages of one request, concatenated, are exactly :meth:`SessionQuery.filter_sessions`
  of its filters, as long as the corpus did not change in between; a session added between
  two pages appears in a later page when it sorts after the cursor, never twice;
* live-first as the whole listing: a live session is listed from the live store (its record
  says whether it is persisted too, and its listed and live headers must agree:
  ``SOURCE_CONFLICT``), and the persistence is never read for it;
* a persistence with the :class:`~sessionquery.persistence.base.NewestListing` capability
  is asked once per page (PostgreSQL: one indexed query), plus one ``stat`` per live
  session on the page; any other is listed whole and cut (correct, not faster);
* a cursor is opaque, bound to the service instance and to the request's filters (any
  limit may follow it); anything else, tampered or foreign, is ``INVALID_CURSOR``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Final

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model import SessionHeader, canonical_json
from sessionquery.persistence.base import ListingKey, NewestListing, PersistedSession
from sessionquery.query.cancel import CancelToken, check_cancel
from sessionquery.query.filters import (
    AvailabilityIn,
    SessionFilter,
    header_matches,
)
from sessionquery.query.types import SessionListPage, SessionRecord

if TYPE_CHECKING:
    from sessionquery.query.corpus import ServiceCorpus

__all__ = [
    "LIST_LIMIT_DEFAULT",
    "LIST_LIMIT_MAX",
    "ListCursors",
    "check_limit",
    "listing_key",
    "newest_entries",
    "next_page",
    "page_of",
]

LIST_LIMIT_DEFAULT: Final = 50
LIST_LIMIT_MAX: Final = 1000
_MAC_BYTES: Final = 16
_CURSOR_CHARS_MAX: Final = 8192


def listing_key(created_at: int, session_id: str) -> tuple[int, str]:
    """The sort key of the listing order (ascending = newest first, ties by id)."""
    return (-created_at, session_id)


def _after(header_key: tuple[int, str], after: ListingKey | None) -> bool:
    return after is None or header_key > listing_key(*after)


def check_limit(limit: object) -> int:
    """``limit`` as a page size.

    Raises:
        SessionQueryError: ``INVALID_LIMIT`` unless an integer in ``[1, LIST_LIMIT_MAX]``.
    """
    if type(limit) is not int or not 1 <= limit <= LIST_LIMIT_MAX:
        raise SessionQueryError(
            ErrorCode.INVALID_LIMIT,
            f"session listing limit must be an integer between 1 and {LIST_LIMIT_MAX}, "
            f"not {limit!r}",
        )
    return limit


def _invalid(detail: str) -> SessionQueryError:
    return SessionQueryError(
        ErrorCode.INVALID_CURSOR, f"session listing cursor is invalid: {detail}"
    )


class ListCursors:
    """Cursors of one service instance: ``base64url(body + mac)``, ``body`` the canonical JSON
    of the filters' digest and the last listed key, ``mac`` an HMAC-SHA256 under a random key."""

    __slots__ = ("_key",)

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)

    @staticmethod
    def fingerprint(filters: Sequence[SessionFilter]) -> str:
        """A digest of the filters, clause order and value order ignored."""
        clauses = sorted(canonical_json(clause.canonical()) for clause in filters)
        return hashlib.sha256("\n".join(clauses).encode("utf-8", "surrogatepass")).hexdigest()[:24]

    def encode(self, fingerprint: str, key: ListingKey) -> str:
        """The cursor of the page after the session at ``key``."""
        body = canonical_json({"f": fingerprint, "c": key[0], "i": key[1]}).encode(
            "utf-8", "surrogatepass"
        )
        mac = hmac.new(self._key, body, hashlib.sha256).digest()[:_MAC_BYTES]
        return base64.urlsafe_b64encode(body + mac).decode("ascii").rstrip("=")

    def decode(self, cursor: object, fingerprint: str) -> ListingKey:
        """The key a cursor of this instance and these filters continues after.

        Raises:
            SessionQueryError: ``INVALID_CURSOR`` for anything else.
        """
        if not isinstance(cursor, str):
            raise _invalid(f"a cursor must be a string, not {type(cursor).__name__}")
        if not cursor or len(cursor) > _CURSOR_CHARS_MAX or not cursor.isascii():
            raise _invalid("malformed cursor")
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        except (binascii.Error, ValueError):
            raise _invalid("malformed cursor") from None
        body, mac = raw[:-_MAC_BYTES], raw[-_MAC_BYTES:]
        good = hmac.new(self._key, body, hashlib.sha256).digest()[:_MAC_BYTES]
        if not body or not hmac.compare_digest(mac, good):
            raise _invalid("the cursor was not issued by this service")
        payload = json.loads(body.decode("utf-8", "surrogatepass"))
        if payload.get("f") != fingerprint:
            raise _invalid("the cursor belongs to a listing with other filters")
        return int(payload["c"]), str(payload["i"])


def newest_entries(
    entries: Sequence[PersistedSession],
    filters: Sequence[SessionFilter],
    *,
    after: ListingKey | None,
    limit: int,
) -> list[PersistedSession]:
    """:meth:`NewestListing.list_newest` over a whole listing (for wrappers of a store
    without the capability): sorted, filtered, cut; one entry per id."""
    headers = [clause for clause in filters if not isinstance(clause, AvailabilityIn)]
    by_id = {entry.header.id: entry for entry in entries}  # the last listed, as records()
    found = [
        entry
        for entry in by_id.values()
        if _after(listing_key(entry.header.created_at, entry.header.id), after)
        and _header_ok(headers, entry)
    ]
    found.sort(key=lambda e: listing_key(e.header.created_at, e.header.id))
    return found[:limit]


def _header_ok(clauses: Sequence[SessionFilter], entry: PersistedSession) -> bool:
    return header_matches(clauses, entry.header, live=False, persisted=True)


def _matches(clauses: Sequence[SessionFilter], record: SessionRecord) -> bool:
    return header_matches(clauses, record.header, live=record.live, persisted=record.persisted)


def _only_live(clauses: Sequence[SessionFilter]) -> bool:
    """Whether the clauses reject every session that is not live."""
    return any(
        isinstance(clause, AvailabilityIn) and "persisted" not in clause.values
        for clause in clauses
    )


def page_of(
    corpus: ServiceCorpus,
    clauses: Sequence[SessionFilter],
    *,
    limit: int,
    after: ListingKey | None,
    cancel: CancelToken | None,
) -> tuple[list[SessionRecord], bool]:
    """Up to ``limit`` records after ``after`` matching ``clauses``, and whether more follow.

    Raises:
        SessionQueryError: ``PERSISTENCE_FAILED``, ``SOURCE_CONFLICT`` or ``ABORTED``.
    """
    check_cancel(cancel)
    if isinstance(corpus.persistence, NewestListing):
        found = _merged(corpus, clauses, after, limit, cancel)
    else:  # listed whole and cut
        found = (
            record
            for record in corpus.records(cancel)
            if _after(listing_key(record.header.created_at, record.id), after)
            and _matches(clauses, record)
        )
    items: list[SessionRecord] = []
    for record in found:
        if len(items) == limit:
            return items, True
        items.append(record)
    return items, False


def _merged(
    corpus: ServiceCorpus,
    clauses: Sequence[SessionFilter],
    after: ListingKey | None,
    limit: int,
    cancel: CancelToken | None,
) -> Iterator[SessionRecord]:
    """The matching records after ``after`` in the listing order (at least ``limit + 1``
    when that many exist): the live sessions merged into the persistence's page."""
    headers = corpus.live_headers()
    live_ids = {header.id for header in headers}
    live = sorted(
        (
            (key, header)
            for header in headers
            if _after(key := listing_key(header.created_at, header.id), after)
        ),
        key=lambda pair: pair[0],
        reverse=True,
    )  # newest last: popped first
    persisted = (
        []
        if _only_live(clauses)
        else _persisted(corpus, clauses, after, limit + 1 + len(live_ids), cancel)
    )
    for entry in persisted:
        header = entry.header
        if header.id in live_ids:
            continue  # listed from the live store
        key = listing_key(header.created_at, header.id)
        while live and live[-1][0] < key:
            record = _live_record(corpus, live.pop()[1], cancel)
            if _matches(clauses, record):
                yield record
        record = SessionRecord(header, live=False, persisted=True, archived=entry.archived)
        if _matches(clauses, record):
            yield record
    while live:
        record = _live_record(corpus, live.pop()[1], cancel)
        if _matches(clauses, record):
            yield record


def _live_record(
    corpus: ServiceCorpus, header: SessionHeader, cancel: CancelToken | None
) -> SessionRecord:
    """A live session's record; whether it is persisted too is asked of the persistence.

    Raises:
        SessionQueryError: ``SOURCE_CONFLICT`` when the stored header disagrees.
    """
    listed = corpus.stat_persisted(header.id, cancel)
    if listed is not None and not listed.header.is_compatible(header):
        raise SessionQueryError(
            ErrorCode.SOURCE_CONFLICT,
            f"session {header.id!r} has incompatible headers in the live store and the persistence",
        )
    return SessionRecord(
        header,
        live=True,
        persisted=listed is not None,
        archived=listed is not None and listed.archived,
    )


def _persisted(
    corpus: ServiceCorpus,
    clauses: Sequence[SessionFilter],
    after: ListingKey | None,
    count: int,
    cancel: CancelToken | None,
) -> list[PersistedSession]:
    """The persistence's first ``count`` entries after ``after`` (one call).

    One call is enough: the persistence applies every clause but availability, and an
    availability clause that lets a persisted session through lets every one through that
    is not live (the caller asks for ``limit + 1`` plus one per live session, the entries it
    skips).
    """
    persistence = corpus.persistence
    assert isinstance(persistence, NewestListing)
    check_cancel(cancel)
    try:
        entries = persistence.list_newest(clauses, after=after, limit=count)
    except SessionQueryError:
        raise
    except Exception as error:  # a foreign store may raise anything (query.corpus)
        raise SessionQueryError(
            ErrorCode.PERSISTENCE_FAILED, f"session persistence listing failed: {error}"
        ) from error
    check_cancel(cancel)
    return entries


def next_page(
    corpus: ServiceCorpus,
    cursors: ListCursors,
    clauses: Sequence[SessionFilter],
    *,
    limit: int,
    cursor: str | None,
    cancel: CancelToken | None,
) -> SessionListPage:
    """The page ``cursor`` points to (the first without one)."""
    fingerprint = cursors.fingerprint(clauses)
    after = None if cursor is None else cursors.decode(cursor, fingerprint)
    items, more = page_of(corpus, clauses, limit=limit, after=after, cancel=cancel)
    if not more:
        return SessionListPage(tuple(items))
    last = items[-1].header
    return SessionListPage(tuple(items), cursors.encode(fingerprint, (last.created_at, last.id)))
