"""Semantic text: the searchable words of one event.

One definition feeds ``filter_events``, the search index and the tools. Reasoning is never
searchable; structural events (turn and step boundaries, titles, system messages, unknown
types) have no text.
"""

from __future__ import annotations

from collections.abc import Iterator

from sessionquery.model.event import SessionEvent
from sessionquery.model.jsonvalue import as_dict, as_list
from sessionquery.model.textmatch import trim

__all__ = ["extract_event_text", "extract_text"]

_TURN_END_TEXT = {"aborted": "aborted", "max-tokens": "max-tokens", "interrupted": "interrupted"}


def _block_parts(blocks: object) -> Iterator[object]:
    for item in as_list(blocks):
        block = as_dict(item)
        kind = block.get("type")
        if kind == "text":
            yield block.get("text")
        elif kind == "tool-call":
            yield block.get("name")
            yield block.get("arguments")
        elif kind == "tool-result":
            yield from _block_parts(block.get("content"))


def _parts(kind: str, raw: object) -> Iterator[object]:
    data = as_dict(raw)
    if kind == "user/message":
        yield from _block_parts(data.get("content"))
    elif kind == "assistant/message":
        yield from _block_parts(as_dict(data.get("message")).get("content"))
    elif kind == "tool/call":
        yield data.get("name")
        yield data.get("arguments")
    elif kind == "tool/result":
        yield from _block_parts(as_dict(data.get("message")).get("content"))
        error = as_dict(data.get("error"))
        yield error.get("name")
        yield error.get("code")
    elif kind == "todo/write":
        for item in as_list(data.get("todos")):
            todo = as_dict(item)
            yield todo.get("status")
            yield todo.get("content")
    elif kind == "turn/end":
        reason = as_dict(data.get("reason"))
        reason_kind = reason.get("kind")
        if reason_kind == "error":
            yield "error"
            yield as_dict(reason.get("error")).get("message")
        elif isinstance(reason_kind, str) and reason_kind in _TURN_END_TEXT:
            yield _TURN_END_TEXT[reason_kind]


def extract_event_text(event: SessionEvent) -> str:
    """The searchable text of ``event``: parts trimmed, empty parts dropped, joined by newline.

    Parts are trimmed as JavaScript's ``String.prototype.trim`` trims, as in the original
    system (:func:`~sessionquery.model.textmatch.trim`): U+FEFF is removed, U+001C to U+001F
    and U+0085 are kept (Python's ``str.strip()`` does the opposite).

    ``tool-call`` arguments that are not strings (structured JSON) are not text and are
    skipped, as are any other non-string parts.
    """
    return extract_text(event.type, event.data)


def extract_text(kind: str, data: object) -> str:
    """:func:`extract_event_text` of an event given as its ``type`` and plain ``data``.

    ``data`` may be the frozen data of a :class:`SessionEvent` or plain parsed JSON (dicts
    and lists straight from ``json.loads``), so an indexer can extract text without building
    frozen events; both give the same text.
    """
    parts: list[str] = []
    for part in _parts(kind, data):
        if isinstance(part, str):
            stripped = trim(part)
            if stripped:
                parts.append(stripped)
    return "\n".join(parts)
