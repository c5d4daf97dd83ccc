"""Event tracing: every direct replacement and citation relationship of one event.

Over one fold of the whole log: ``replaced_by`` is the replace event that removed the target
from the surface, ``replacement_chain`` follows ``replaced_by`` repeatedly to the final
replacer (nearest first), ``replaced_event_seqs`` are the nodes the target itself removed
when it is a replace, ``source_event_seqs`` are the target's citations as recorded, and
``derived_event_seqs`` are the later events citing the target, in log order.
"""

from __future__ import annotations

from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model import SessionEvent
from sessionquery.query.prepared import PreparedLog
from sessionquery.query.types import EventRecord, EventTrace

__all__ = ["event_not_found", "require_event", "trace_event"]


def event_not_found(session_id: str, seq: object) -> SessionQueryError:
    """The ``EVENT_NOT_FOUND`` error for ``seq`` in ``session_id``."""
    return SessionQueryError(
        ErrorCode.EVENT_NOT_FOUND, f"session {session_id!r} has no event at seq {seq!r}"
    )


def require_event(log: PreparedLog, seq: object) -> SessionEvent:
    """The event at ``seq`` in ``log``.

    Raises:
        SessionQueryError: ``EVENT_NOT_FOUND``.
    """
    event = log.event_at(seq)
    if event is None:
        raise event_not_found(log.session_id, seq)
    return event


def trace_event(log: PreparedLog, seq: object) -> EventTrace:
    """Trace the event at ``seq``; its existence is checked before the fold.

    Raises:
        SessionQueryError: ``EVENT_NOT_FOUND``, then any fold error of the log.
    """
    event = require_event(log, seq)
    fold = log.fold()
    chain: list[int] = []
    replacer = fold.replaced_by.get(event.seq)
    while replacer is not None:
        chain.append(replacer)
        replacer = fold.replaced_by.get(replacer)
    return EventTrace(
        session=log.header,
        target=EventRecord(
            session_id=log.session_id,
            seq=event.seq,
            type=event.type,
            time=event.time,
            surface=fold.surface_of[event.seq],
        ),
        replaced_by=chain[0] if chain else None,
        replacement_chain=tuple(chain),
        replaced_event_seqs=tuple(fold.replaced.get(event.seq, ())),
        source_event_seqs=tuple(event.source_event_seqs or ()),
        derived_event_seqs=log.derived_of(event.seq),
    )
