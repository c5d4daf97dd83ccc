"""Tests for sessionquery.search.cursor: binding, tampering and fingerprints."""

from __future__ import annotations

import base64

import pytest

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.query.filters import IdIn, SeqBetween, TypeIn
from sessionquery.search.cursor import CursorCodec, page_offset, request_fingerprint


def test_a_cursor_round_trips_its_position() -> None:
    codec = CursorCodec()
    cursor = codec.encode("sessions", "fp", "7", 40)
    position = codec.decode(cursor, "sessions", "fp")
    assert (position.generation, position.offset) == ("7", 40)


def _flip(cursor: str) -> str:
    body, _, mac = cursor.partition(".")
    raw = bytearray(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    raw[-3] ^= 1
    return base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=") + "." + mac


@pytest.mark.parametrize(
    "mangle",
    [
        lambda c: c[:-2],
        lambda c: c.replace(".", ""),
        _flip,
        lambda c: "not a cursor",
        lambda c: "",
        lambda c: c + "é",
        lambda c: 42,
    ],
    ids=["truncated", "no-mac", "flipped-bit", "garbage", "empty", "non-ascii", "non-string"],
)
def test_tampered_cursors_are_invalid(mangle) -> None:  # type: ignore[no-untyped-def]
    codec = CursorCodec()
    cursor = codec.encode("events", "fp", "live:3", 20)
    with pytest.raises(SessionQueryError) as caught:
        codec.decode(mangle(cursor), "events", "fp")
    assert caught.value.code is ErrorCode.INVALID_CURSOR


def test_cursors_of_another_instance_scope_or_request_are_invalid() -> None:
    codec = CursorCodec()
    cursor = codec.encode("sessions", "fp", "1", 20)
    for other, scope, fingerprint in (
        (CursorCodec(), "sessions", "fp"),
        (codec, "events", "fp"),
        (codec, "sessions", "other"),
    ):
        with pytest.raises(SessionQueryError) as caught:
            other.decode(cursor, scope, fingerprint)  # type: ignore[arg-type]
        assert caught.value.code is ErrorCode.INVALID_CURSOR


def test_fingerprints_ignore_clause_and_value_order_but_not_the_limit() -> None:
    one = request_fingerprint(
        "sessions",
        "q",
        limit=5,
        session_filters=[IdIn(["b", "a"])],
        event_filters=[TypeIn(["x"]), SeqBetween(1.0, 3)],
    )
    two = request_fingerprint(
        "sessions",
        "q",
        limit=5,
        session_filters=[IdIn(["a", "b"])],
        event_filters=[SeqBetween(1, 3), TypeIn(["x"])],
    )
    assert one == two
    assert one != request_fingerprint(
        "sessions",
        "q",
        limit=6,
        session_filters=[IdIn(["a", "b"])],
        event_filters=[SeqBetween(1, 3), TypeIn(["x"])],
    )


def test_a_page_starts_at_the_cursor_offset_only_while_its_generation_holds() -> None:
    codec = CursorCodec()
    position = codec.decode(codec.encode("sessions", "fp", "g1", 40), "sessions", "fp")
    assert page_offset(None, "g1") == 0
    assert page_offset(position, "g1") == 40
    with pytest.raises(SessionQueryError) as caught:
        page_offset(position, "g2")
    assert caught.value.code is ErrorCode.STALE_CURSOR
