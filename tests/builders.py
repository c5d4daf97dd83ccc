"""Stored events for tests, built over ``sessionquery.model.messages``.

Every test that needs a ``SessionEvent`` of one of the message types builds it here, so the
shape of an event's ``data`` is written once, by the library's own builders. Events get
``time = 1_000 + seq`` unless a test says otherwise, user messages the id ``u<seq>``.
"""

from __future__ import annotations

from sessionquery.model import Replace, SessionEvent, messages

__all__ = ["assistant", "log", "summary", "user"]


def user(
    seq: int, text: str, time: int | None = None, *, id: str | None = None, source: str = "user"
) -> SessionEvent:
    """A ``user/message`` appended to the surface."""
    return SessionEvent(
        type="user/message",
        seq=seq,
        time=1_000 + seq if time is None else time,
        data=messages.user_message(text, id=f"u{seq}" if id is None else id, source=source),
        surface_op="append",
    )


def assistant(seq: int, text: str, time: int | None = None) -> SessionEvent:
    """An ``assistant/message`` (turn 0, step 0) appended to the surface."""
    return SessionEvent(
        type="assistant/message",
        seq=seq,
        time=1_000 + seq if time is None else time,
        data=messages.assistant_message(text, turn=0, step=0),
        surface_op="append",
    )


def summary(seq: int, text: str, start: int, end: int) -> SessionEvent:
    """A ``user/message`` replacing the surface run ``start..end`` (a compaction)."""
    return SessionEvent(
        type="user/message",
        seq=seq,
        time=1_000 + seq,
        data=messages.user_message(text, id=f"s{seq}", source="compaction"),
        surface_op=Replace(start, end),
        source_event_seqs=tuple(range(start, end + 1)),
    )


def log(*texts: str, start: int = 0) -> list[SessionEvent]:
    """Alternating user/assistant messages with these texts, seqs from ``start``."""
    return [(user if i % 2 == 0 else assistant)(start + i, text) for i, text in enumerate(texts)]
