"""The skeleton of an event: its envelope and its tool-call ids, without its data.

A 50,000-event log is tens of megabytes, most of it message text and tool output. What a
window of it needs from the *whole* log — the surface fold (which events are current,
shadowed or log-only, what replaced what), the count, the times, and which tool call a
result answers — is in the envelope (``type``, ``seq``, ``time``, ``surfaceOp``,
``sourceEventSeqs``, ``ignorable``) plus the call ids and names of ``tool/call`` events and
of the ``tool-call`` blocks of assistant messages. :class:`EventSkeleton` holds exactly that.

Invariants: :meth:`EventSkeleton.of` and a store's own skeleton reader give equal skeletons
for the same event (the call rule is :func:`call_entry`); a skeleton folds like its event
(:func:`~sessionquery.model.surface.fold_surface` reads only the envelope, except the data of
``tool/result`` rewrites, which a skeleton reader supplies as whole events).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from sessionquery.model.event import SessionEvent, SurfaceOp

__all__ = ["EventSkeleton", "call_entry"]


def call_entry(call_id: object, name: object) -> tuple[str, str] | None:
    """The ``(id, name)`` a tool call announces: its id when it is a non-empty string, and
    its name when that is a non-empty string, else ``"tool"``; ``None`` without an id."""
    if type(call_id) is not str or not call_id:
        return None
    return call_id, name if type(name) is str and name else "tool"


def _calls_of(event: SessionEvent) -> tuple[tuple[str, str], ...]:
    data: Any = event.data
    if not isinstance(data, Mapping):
        return ()
    if event.type == "tool/call":
        entry = call_entry(data.get("callId"), data.get("name"))
        return () if entry is None else (entry,)
    if event.type != "assistant/message":
        return ()
    message = data.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, Sequence) or isinstance(content, str):
        return ()
    calls = []
    for block in content:
        if isinstance(block, Mapping) and block.get("type") == "tool-call":
            entry = call_entry(block.get("id"), block.get("name"))
            if entry is not None:
                calls.append(entry)
    return tuple(calls)


class EventSkeleton(NamedTuple):
    """One event's envelope and the tool calls it announces (a named tuple: immutable, and
    cheap to build fifty thousand times).

    Attributes:
        type: the event type.
        seq: its seq.
        time: epoch milliseconds.
        surface_op: ``"append"``, a :class:`~sessionquery.model.Replace` or ``None``.
        source_event_seqs: the cited seqs, or ``None``.
        ignorable: the event's ``ignorable`` flag.
        calls: ``(call id, tool name)`` of a ``tool/call`` event (one) or of the ``tool-call``
            blocks of an ``assistant/message`` (in order); empty for any other event.
    """

    type: str
    seq: int
    time: int
    surface_op: SurfaceOp | None = None
    source_event_seqs: tuple[int, ...] | None = None
    ignorable: bool = False
    calls: tuple[tuple[str, str], ...] = ()

    @property
    def data(self) -> None:
        """A skeleton carries no data (the fold asks only rewrites for theirs)."""
        return None

    @classmethod
    def of(cls, event: SessionEvent) -> EventSkeleton:
        """The skeleton of a whole event."""
        return cls(
            event.type,
            event.seq,
            event.time,
            event.surface_op,
            event.source_event_seqs,
            event.ignorable,
            _calls_of(event),
        )
