"""Stored events for tests, built over ``sessionquery.model.messages``.

Every test that needs a ``SessionEvent`` of one of the message types, or the ``data`` a live
session appends, builds it here, so the shape of an event's ``data`` is written once, by the
library's own builders. Events get ``time = 1_000 + seq`` unless a test says otherwise, user
messages the id ``u<seq>``.
"""

from __future__ import annotations

from collections.abc import Sequence

from sessionquery.model import Replace, SessionEvent, messages

__all__ = [
    "assistant",
    "assistant_data",
    "log",
    "result_data",
    "summary",
    "user",
    "user_data",
]


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


# --- message data for a live session's append ----------------------------------------------


def user_data(text: str, message_id: str = "u") -> messages.UserMessageData:
    """The data of a user message with this id."""
    return messages.user_message(text, id=message_id)


def assistant_data(
    turn: int, text: str, calls: Sequence[str] = ()
) -> messages.AssistantMessageData:
    """The data of an assistant message at step 0 of ``turn``, calling ``grep`` once per id."""
    blocks = [messages.tool_call_block(c, "grep", "{}") for c in calls]
    return messages.assistant_message(text, turn=turn, step=0, tool_calls=blocks)


def result_data(turn: int, call_id: str, output: str) -> messages.ToolResultData:
    """The data of the result of ``call_id`` at step 0 of ``turn``."""
    return messages.tool_result(output, call_id=call_id, turn=turn, step=0)
