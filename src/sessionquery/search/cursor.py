"""Continuation cursors: opaque, bound to one request, one index instance and one generation.

A cursor is ``base64url(body) "." base64url(mac)`` where ``body`` is canonical JSON
``{"v", "i", "s", "f", "g", "o"}`` (version, instance id, scope, request fingerprint,
generation, offset) and ``mac`` an HMAC-SHA256 of the body under a per-instance random key.

Invariants:

* Anything that does not decode, fails the MAC, names another version, instance, scope or
  fingerprint, or carries a bad offset is ``INVALID_CURSOR``; a tampered cursor can never be
  mistaken for a valid one.
* A well-formed cursor whose generation differs from the current one is ``STALE_CURSOR``
  (checked by the caller after reconciliation, see :meth:`CursorCodec.decode`).
* The fingerprint covers the normalised query, the match mode, the canonical filters, the
  limit and (event scope) the session id, so a cursor is only valid for the identical
  normalised request.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model import canonical_json
from sessionquery.query.filters import EventFilter, SessionFilter

__all__ = [
    "CURSOR_VERSION",
    "CursorCodec",
    "CursorPosition",
    "Scope",
    "page_offset",
    "request_fingerprint",
]

CURSOR_VERSION = 1
_MAX_CURSOR_CHARS = 4096
_MAC_BYTES = 16

Scope = Literal["sessions", "events"]


def _invalid(detail: str) -> SessionQueryError:
    return SessionQueryError(
        ErrorCode.INVALID_CURSOR, f"session-search cursor is invalid: {detail}"
    )


def _canonical_filters(filters: Sequence[SessionFilter | EventFilter]) -> list[str]:
    return sorted(canonical_json(clause.canonical()) for clause in filters)


def request_fingerprint(
    scope: Scope,
    query: str,
    *,
    limit: int,
    session_filters: Sequence[SessionFilter] = (),
    event_filters: Sequence[EventFilter] = (),
    session_id: str | None = None,
    match: str = "phrase",
) -> str:
    """A short digest of the normalised request (clause order and value order ignored).

    The match mode is part of the request: a ``"words"`` cursor never continues a
    ``"phrase"`` search of the same text, nor the reverse.
    """
    request = {
        "match": match,
        "scope": scope,
        "query": query,
        "limit": limit,
        "sessionFilters": _canonical_filters(session_filters),
        "eventFilters": _canonical_filters(event_filters),
        "sessionId": session_id,
    }
    encoded = canonical_json(request).encode("utf-8", "surrogatepass")
    return hashlib.sha256(encoded).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class CursorPosition:
    """A decoded cursor: where the next page starts and which generation it was taken at."""

    generation: str
    offset: int


def _b64encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class CursorCodec:
    """Encodes and checks cursors for one index instance (random id and MAC key)."""

    __slots__ = ("_instance", "_key")

    def __init__(self) -> None:
        self._instance = uuid.uuid4().hex
        self._key = secrets.token_bytes(32)

    def encode(self, scope: Scope, fingerprint: str, generation: str, offset: int) -> str:
        """The cursor for the page starting at ``offset``."""
        body = canonical_json(
            {
                "v": CURSOR_VERSION,
                "i": self._instance,
                "s": scope,
                "f": fingerprint,
                "g": generation,
                "o": offset,
            }
        ).encode()
        return f"{_b64encode(body)}.{_b64encode(self._mac(body))}"

    def _mac(self, body: bytes) -> bytes:
        return hmac.new(self._key, body, hashlib.sha256).digest()[:_MAC_BYTES]

    def decode(self, cursor: object, scope: Scope, fingerprint: str) -> CursorPosition:
        """Check ``cursor`` against this instance and request; the generation is not checked.

        Raises:
            SessionQueryError: ``INVALID_CURSOR`` for anything but an intact cursor of this
                instance, scope and request.
        """
        if not isinstance(cursor, str):
            raise _invalid(f"a cursor must be a string, not {type(cursor).__name__}")
        if not cursor or len(cursor) > _MAX_CURSOR_CHARS or not cursor.isascii():
            raise _invalid("malformed cursor")
        body_text, dot, mac_text = cursor.partition(".")
        try:
            body = _b64decode(body_text)
            mac = _b64decode(mac_text)
        except (binascii.Error, ValueError):
            raise _invalid("malformed cursor") from None
        if not dot or not hmac.compare_digest(mac, self._mac(body)):
            raise _invalid("the cursor was not issued by this index instance")
        try:
            payload = json.loads(body)
        except ValueError:
            raise _invalid("malformed cursor") from None
        if not isinstance(payload, dict) or payload.get("v") != CURSOR_VERSION:
            raise _invalid("unsupported cursor version")
        if payload.get("i") != self._instance:
            raise _invalid("the cursor belongs to another index instance")
        if payload.get("s") != scope:
            raise _invalid(f"the cursor is not a {scope} cursor")
        if payload.get("f") != fingerprint:
            raise _invalid("the cursor belongs to a different request")
        offset, generation = payload.get("o"), payload.get("g")
        if type(offset) is not int or offset < 0 or not isinstance(generation, str):
            raise _invalid("bad cursor offset")
        return CursorPosition(generation=generation, offset=offset)


def page_offset(position: CursorPosition | None, generation: str) -> int:
    """Where a page starts: 0 without a cursor, else the cursor's offset if the relevant
    corpus is still at the cursor's generation.

    Raises:
        SessionQueryError: ``STALE_CURSOR`` when the corpus changed since the cursor was made.
    """
    if position is None:
        return 0
    if position.generation != generation:
        raise SessionQueryError(
            ErrorCode.STALE_CURSOR,
            "session-search cursor is stale because its relevant corpus changed; "
            "retry the complete search",
        )
    return position.offset
