"""Session titles: the last ``session/title`` event wins.

Invariants: the snapshot comes from the last ``session/title`` event whose ``title`` is a
string, blank or not (SPEC §3.5: last wins); its ``source`` keeps only the fields a title
source is known to have (``kind``, and for a provider ``provider`` and ``model`` with its
``provider`` and ``model``), as the original system copies it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sessionquery.model.event import SessionEvent
from sessionquery.model.jsonvalue import JsonValue, freeze_json

__all__ = ["TITLE_TYPE", "TitleSnapshot", "fold_title", "title_text"]

TITLE_TYPE = "session/title"
"""The event type that names a session."""

_SOURCE_FIELDS = ("kind", "provider", "model")
_MODEL_FIELDS = ("provider", "model")


@dataclass(frozen=True, slots=True)
class TitleSnapshot:
    """A session's current title and where it came from.

    Attributes:
        title: the title text (possibly blank: the last title event wins whatever it says).
        message_seqs: the ``user/message`` seqs it was derived from (empty for a rename).
        source: how it was produced, e.g. ``{"kind": "user"}`` (frozen JSON), holding only
            ``kind``, ``provider`` and ``model`` (itself only ``provider`` and ``model``).
        event_seq: the seq of the ``session/title`` event.
        updated_at: that event's time (epoch ms).
    """

    title: str
    message_seqs: tuple[int, ...]
    source: JsonValue
    event_seq: int
    updated_at: int


def _known_fields(value: Mapping[str, JsonValue], names: tuple[str, ...]) -> dict[str, JsonValue]:
    return {name: value[name] for name in names if name in value}


def _source(raw: JsonValue) -> JsonValue:
    """The title source with only its known fields; a non-object is kept as stored."""
    if not isinstance(raw, Mapping):
        return raw
    source = _known_fields(raw, _SOURCE_FIELDS)
    model = source.get("model")
    if isinstance(model, Mapping):
        source["model"] = _known_fields(model, _MODEL_FIELDS)
    return freeze_json(source)


def _snapshot(event: SessionEvent) -> TitleSnapshot | None:
    data = event.data
    if not isinstance(data, Mapping):
        return None
    title = data.get("title")
    if not isinstance(title, str):
        return None
    raw_seqs = data.get("messageSeqs")
    seqs: tuple[int, ...] = ()
    if isinstance(raw_seqs, list | tuple):
        seqs = tuple(s for s in raw_seqs if type(s) is int)  # pyright: ignore
    return TitleSnapshot(
        title=title,
        message_seqs=seqs,
        source=_source(data.get("source")),
        event_seq=event.seq,
        updated_at=event.time,
    )


def fold_title(events: Iterable[SessionEvent]) -> TitleSnapshot | None:
    """The snapshot of the last ``session/title`` event, or ``None``.

    The last title event wins even when its title is blank. An event whose ``title`` is
    missing or not a string carries no title at all and is passed over.
    """
    found: TitleSnapshot | None = None
    for event in events:
        if event.type == "session/title":
            found = _snapshot(event) or found
    return found


def title_text(kind: str, data: object) -> str:
    """The searchable text of a title event: its ``title``, trimmed (``""`` for any other
    event, or a title that is missing, not a string or blank).

    ``data`` may be frozen event data or plain parsed JSON, so an indexer can read titles
    without building events. Titles are searched only by relevance search (SPEC §14.1);
    :func:`~sessionquery.model.extract_event_text` of a title event stays empty.
    """
    if kind != TITLE_TYPE or not isinstance(data, Mapping):
        return ""
    title = data.get("title")
    return title.strip() if isinstance(title, str) else ""
