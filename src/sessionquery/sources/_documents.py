"""Search documents of a stored log the slow, exact way: read, close the crash tail, fold.

Used for persistences that have no fast :class:`~sessionquery.persistence.base.DocumentSource`
path of their own; the importers' fast path is tested to give exactly the same documents.
"""

from __future__ import annotations

from sessionquery.errors import PersistenceCorrupt
from sessionquery.model import extract_event_text, fold_surface, interrupted_turn_closers
from sessionquery.model.surface import SurfaceError
from sessionquery.persistence.base import DocumentLog, SessionPersistence, TextDocument
from sessionquery.persistence.documents import read_check

__all__ = ["documents_of"]


def documents_of(source: SessionPersistence, session_id: str) -> DocumentLog:
    """The documents of ``session_id`` from ``open_read`` + crash-tail closers + fold + text.

    Raises:
        PersistenceNotFound: the id is not stored.
        PersistenceCorrupt: the log is damaged.
    """
    entry = source.stat(session_id)
    with source.open_read(session_id) as handle:
        header = handle.header
        events = handle.read()
    events = events + interrupted_turn_closers(events)
    try:
        fold = fold_surface(events)
    except SurfaceError as exc:
        raise PersistenceCorrupt(f"session {session_id!r} does not fold: {exc}") from None
    documents = []
    tick = read_check()
    for event in events:
        text = extract_event_text(event)
        tick(len(text))
        if text:
            surface = fold.surface_of[event.seq]
            documents.append(TextDocument(event.seq, event.type, event.time, surface, text))
    revision = entry.revision if entry is not None else ""
    return DocumentLog(header, revision, len(events), documents)
