"""Session titles: the last ``session/title`` event wins."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sessionquery.model.event import SessionEvent
from sessionquery.model.jsonvalue import JsonValue

__all__ = ["TitleSnapshot", "fold_title"]


@dataclass(frozen=True, slots=True)
class TitleSnapshot:
    """A session's current title and where it came from.

    Attributes:
        title: the title text.
        message_seqs: the ``user/message`` seqs it was derived from (empty for a rename).
        source: how it was produced, e.g. ``{"kind": "user"}`` (frozen JSON).
        event_seq: the seq of the ``session/title`` event.
        updated_at: that event's time (epoch ms).
    """

    title: str
    message_seqs: tuple[int, ...]
    source: JsonValue
    event_seq: int
    updated_at: int


def _snapshot(event: SessionEvent) -> TitleSnapshot | None:
    data = event.data
    if not isinstance(data, dict):
        return None
    title = data.get("title")
    if not isinstance(title, str) or not title.strip():
        return None
    raw_seqs = data.get("messageSeqs")
    seqs: tuple[int, ...] = ()
    if isinstance(raw_seqs, list):
        seqs = tuple(s for s in raw_seqs if type(s) is int)  # pyright: ignore
    return TitleSnapshot(
        title=title,
        message_seqs=seqs,
        source=data.get("source"),
        event_seq=event.seq,
        updated_at=event.time,
    )


def fold_title(events: Iterable[SessionEvent]) -> TitleSnapshot | None:
    """The snapshot of the last well-formed ``session/title`` event, or ``None``.

    A title event whose ``title`` is missing or blank is not a title and is passed over.
    """
    found: TitleSnapshot | None = None
    for event in events:
        if event.type == "session/title":
            found = _snapshot(event) or found
    return found
