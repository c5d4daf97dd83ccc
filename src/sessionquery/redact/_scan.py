"""Where the secrets are: every finding of a redactor over every session of a persistence.

For ``sessionquery secrets``: a person needs to know which credentials sit in their history
(to rotate them) without the tool printing any of them. Each :class:`SecretSighting` names the
session, the event and the :class:`~sessionquery.redact.Finding` (rule, place, length and a
preview of the first and last characters), never the value. The persistence is read as stored
(a redacting one would hide what is looked for) and never written to; a session that cannot
be read is reported and the scan goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sessionquery.errors import PersistenceError
from sessionquery.persistence.base import SessionPersistence
from sessionquery.redact._redactor import Finding, Redactor

__all__ = ["SecretSighting", "UnreadableSession", "scan_sessions"]


@dataclass(frozen=True, slots=True)
class SecretSighting:
    """One secret in one event.

    Attributes:
        session_id: the session.
        seq: the event's seq.
        event_type: the event's type.
        finding: what was found, and where in the event's data (:attr:`Finding.path`).
    """

    session_id: str
    seq: int
    event_type: str
    finding: Finding


@dataclass(frozen=True, slots=True)
class UnreadableSession:
    """A session the scan could not read (the rest were scanned)."""

    session_id: str
    message: str


def scan_sessions(
    persistence: SessionPersistence,
    redactor: Redactor,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[SecretSighting | UnreadableSession]:
    """Every secret ``redactor`` finds in the events of every session of ``persistence``,
    sessions in id order and events in seq order; ``progress(done, total)`` after each
    session.

    Raises:
        PersistenceError: the listing itself fails (a single session's failure is yielded
            as an :class:`UnreadableSession` instead).
    """
    ids = sorted(entry.header.id for entry in persistence.list())
    for done, session_id in enumerate(ids, 1):
        try:
            with persistence.open_read(session_id) as handle:
                events = handle.read()
        except (PersistenceError, OSError, ValueError) as error:
            yield UnreadableSession(session_id, str(error))
        else:
            for event in events:
                for finding in redactor.find_json(event.data, "data"):
                    yield SecretSighting(session_id, event.seq, event.type, finding)
        if progress is not None:
            progress(done, len(ids))
