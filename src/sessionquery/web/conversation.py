"""A session log seen as a conversation: the view model the pages and the export render.

:class:`SessionView` holds one session's events and their surface fold and answers, for any
range of positions, the :class:`Item` list a page shows. Two views exist:

* ``"log"`` (the default): every event in seq order; messages, tool calls and results,
  compactions and titles as themselves, structural events (turn and step boundaries,
  imported raw lines) as thin rows; shadowed and log-only events carry their class;
* ``"surface"``: only the current surface, in surface order: what the model sees now.

Invariants: nothing here formats HTML; a view is built over the log's outline
(:class:`~sessionquery.query.outline.LogOutline`: skeletons, fold, call names) and reads whole
events only for the window it is asked for (a 50,000-event session costs its outline and the
150 events shown, never one item per event); a tool-call block of an assistant message is
shown in the log view only when the log has no ``tool/call`` event of the same id (importers
write both), and always in the surface view (where ``tool/call`` events, being log-only, are
not shown).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from sessionquery.model import (
    Replace,
    SessionEvent,
    SurfaceClass,
    interrupted_turn_closers,
    thaw,
)
from sessionquery.query.outline import LogOutline, OutlinedLog
from sessionquery.query.types import SessionLog

__all__ = [
    "STRUCTURAL_TYPES",
    "VIEWS",
    "Item",
    "SessionView",
    "ToolCall",
    "View",
    "added_on_read",
    "block_text",
]

View = Literal["log", "surface"]
VIEWS: tuple[View, ...] = ("log", "surface")

STRUCTURAL_TYPES = frozenset({"turn/start", "step/start", "step/end", "session/end-seed"})
"""Events shown as thin rows in the log view (and never in the surface view)."""

Kind = Literal[
    "user",
    "assistant",
    "system",
    "tool-call",
    "tool-result",
    "title",
    "todo",
    "turn-end",
    "structural",
    "raw",
]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call: its name, raw JSON arguments and call id."""

    name: str
    arguments: str
    call_id: str

    def parsed(self) -> dict[str, Any] | None:
        """The arguments as a JSON object, or ``None`` when they are not one."""
        try:
            value = json.loads(self.arguments)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None


@dataclass(frozen=True, slots=True)
class Item:
    """One event as the conversation shows it.

    Attributes:
        kind: how it is shown.
        seq: the event's seq; ``time`` its epoch milliseconds; ``type`` its event type.
        surface: its surface class.
        text: message text, tool output, title, turn-end reason or the raw line.
        reasoning: an assistant message's reasoning text.
        calls: tool calls shown with this item (a ``tool/call`` event's own, or an
            assistant message's blocks).
        is_error: a failed tool result.
        tool_name: the name of the call a tool result answers.
        replaces: for a replace event, the seqs it removed (surface order).
        replaced_by: for a shadowed event, the seq of the replace that removed it.
        sources: the event's ``source_event_seqs``.
        compaction: a replace event that is not a tool-result rewrite (a summary).
        source_kind: ``data.source.kind`` of a user message (``compaction``, ``user``...).
        todos: a todo list's ``(status, content)`` pairs.
        synthetic: not in the stored log: a closer the read added because the log ends
            inside a turn (SPEC §3.6).
    """

    kind: Kind
    seq: int
    time: int
    type: str
    surface: SurfaceClass
    text: str = ""
    reasoning: str = ""
    calls: tuple[ToolCall, ...] = ()
    is_error: bool = False
    tool_name: str = ""
    replaces: tuple[int, ...] = ()
    replaced_by: int | None = None
    sources: tuple[int, ...] = ()
    compaction: bool = False
    source_kind: str = ""
    todos: tuple[tuple[str, str], ...] = field(default=())
    synthetic: bool = False


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()


def block_text(blocks: object, kind: str = "text") -> str:
    """The text of the content blocks of type ``kind`` (``text`` includes the text inside
    ``tool-result`` blocks), non-empty parts joined by newlines."""
    parts: list[str] = []
    for block in _list(blocks):
        item = _dict(block)
        if item.get("type") == kind and isinstance(item.get("text"), str):
            parts.append(item["text"])
        elif kind == "text" and item.get("type") == "tool-result":
            parts.append(block_text(item.get("content")))
    return "\n".join(part for part in parts if part)


def _arguments(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(thaw(value), ensure_ascii=False, sort_keys=True, indent=1)


def added_on_read(events: Sequence[SessionEvent]) -> int:
    """How many events at the end of ``events`` are crash-tail closers added by the read
    (0 when the log does not end with an interrupted turn)."""
    if not events or events[-1].type != "turn/end":
        return 0
    if _dict(_dict(events[-1].data).get("reason")).get("kind") != "interrupted":
        return 0
    last = events[-1].time
    start = len(events) - 1
    while (
        start > 0
        and events[start - 1].time == last
        and events[start - 1].type
        in (
            "tool/result",
            "step/end",
        )
    ):
        start -= 1
    for first in range(start, len(events)):
        if interrupted_turn_closers(events[:first]) == list(events[first:]):
            return len(events) - first
    return 0


def _block_calls(content: object) -> list[ToolCall]:
    calls = []
    for block in map(_dict, _list(content)):
        if block.get("type") == "tool-call":
            name = str(block.get("name") or "tool")
            calls.append(ToolCall(name, _arguments(block.get("arguments")), str(block.get("id"))))
    return calls


EventReader = Callable[[Sequence[int]], Sequence[SessionEvent]]
"""``(seqs) -> events at those seqs, in that order``: how a view reads the events it shows."""


class SessionView:
    """One session's outline, ready to be shown in windows whose events it reads on demand.

    Args:
        outline: the log's outline (its fold, call names and skeletons).
        read: reads the whole events of some seqs (the service's ``read_window``).
        stored: events of the log that are stored (the rest were added by the read);
            ``outline.stored_event_count`` by default.
    """

    def __init__(
        self, outline: LogOutline, read: EventReader, *, stored: int | None = None
    ) -> None:
        self.outline = outline
        self.fold = outline.fold
        self._read = read
        self.stored = outline.stored_event_count if stored is None else stored
        """Events that are in the stored log (the rest were added by the read)."""

    @classmethod
    def whole(cls, log: SessionLog) -> SessionView:
        """The view of a whole log already read (the export's)."""
        events = log.events
        outline = OutlinedLog.of_events(
            log.session, log.inherited_event_count, events, live=False, revision=None
        ).outline()
        return cls(
            outline,
            lambda seqs: [events[seq] for seq in seqs],
            stored=len(events) - added_on_read(events),
        )

    @property
    def event_count(self) -> int:
        """Events of the log (as read)."""
        return self.outline.event_count

    def _name(self, call_id: str) -> str:
        """The tool name of a call id: from its ``tool/call`` event, else from the
        assistant message that made it."""
        return self.outline.calls.get(call_id, "")

    def order(self, view: View) -> Sequence[int]:
        """The seqs a view shows, in the order it shows them."""
        if view == "surface":
            return self.fold.nodes
        return range(self.event_count)

    def position(self, view: View, seq: int) -> int | None:
        """Where ``seq`` is in a view's order, or ``None`` when the view does not show it."""
        if view == "log":
            return seq if 0 <= seq < self.event_count else None
        try:
            return self.fold.nodes.index(seq)
        except ValueError:
            return None

    def items(self, view: View, start: int, end: int) -> list[Item]:
        """The items at positions ``start`` (inclusive) to ``end`` (exclusive) of a view."""
        order = self.order(view)
        return self.items_at([order[index] for index in range(start, min(end, len(order)))], view)

    def events_at(self, seqs: Sequence[int]) -> Sequence[SessionEvent]:
        """The whole events at ``seqs``, in that order (read together)."""
        return self._read(seqs) if seqs else ()

    def items_at(self, seqs: Sequence[int], view: View = "log") -> list[Item]:
        """The items of the events at ``seqs`` (read together), in that order."""
        return [self._item_of(event, view) for event in self._read(seqs)] if seqs else []

    def item(self, seq: int, view: View = "log") -> Item:
        """The item of one event."""
        return self.items_at([seq], view)[0]

    def _item_of(self, event: SessionEvent, view: View) -> Item:
        seq = event.seq
        fold = self.fold
        base: dict[str, Any] = {
            "seq": seq,
            "time": event.time,
            "type": event.type,
            "surface": fold.surface_of.get(seq, "log-only"),
            "replaced_by": fold.replaced_by.get(seq),
            "replaces": fold.replaced.get(seq, ()),
            "sources": tuple(event.source_event_seqs or ()),
            "synthetic": seq >= self.stored,
        }
        op = event.surface_op
        base["compaction"] = isinstance(op, Replace) and event.type != "tool/result"
        return self._item(event, view, base)

    def _item(self, event: SessionEvent, view: View, base: dict[str, Any]) -> Item:
        data = _dict(event.data)
        kind = event.type
        if kind == "user/message":
            source = str(_dict(data.get("source")).get("kind") or "")
            return Item("user", text=block_text(data.get("content")), source_kind=source, **base)
        message = _dict(data.get("message"))
        if kind == "assistant/message":
            content = message.get("content")
            calls = [
                call
                for call in _block_calls(content)
                if view == "surface" or call.call_id not in self.outline.logged_calls
            ]
            return Item(
                "assistant",
                text=block_text(content),
                reasoning=block_text(content, "reasoning"),
                calls=tuple(calls),
                **base,
            )
        if kind == "system/message":
            return Item("system", text=block_text(message.get("content")), **base)
        if kind == "tool/call":
            call = ToolCall(
                str(data.get("name") or "tool"),
                _arguments(data.get("arguments")),
                str(data.get("callId")),
            )
            return Item("tool-call", calls=(call,), **base)
        if kind == "tool/result":
            return self._result(data, message, base)
        return self._other(event, data, base)

    def _result(
        self, data: Mapping[str, Any], message: Mapping[str, Any], base: dict[str, Any]
    ) -> Item:
        content = message.get("content")
        failed = any(_dict(b).get("isError") is True for b in _list(content))
        error = _dict(data.get("error"))
        text = block_text(content)
        if error and not text:
            text = " ".join(str(error.get(k)) for k in ("name", "code") if error.get(k))
        call_id = str(_dict(message.get("source")).get("callId") or "")
        if not call_id:
            first = _dict(next(iter(_list(content)), None))
            call_id = str(first.get("toolCallId") or "")
        return Item(
            "tool-result",
            text=text,
            is_error=failed or bool(error),
            tool_name=self._name(call_id) if call_id else "",
            **base,
        )

    def _other(self, event: SessionEvent, data: Mapping[str, Any], base: dict[str, Any]) -> Item:
        kind = event.type
        if kind == "session/title":
            return Item("title", text=str(data.get("title") or ""), **base)
        if kind == "todo/write":
            todos = tuple(
                (str(_dict(t).get("status") or ""), str(_dict(t).get("content") or ""))
                for t in _list(data.get("todos"))
            )
            return Item("todo", todos=todos, **base)
        if kind == "turn/end":
            reason = _dict(data.get("reason"))
            why = str(reason.get("kind") or "")
            detail = _dict(reason.get("error")).get("message")
            text = why if not detail else f"{why}: {detail}"
            return Item("turn-end", text=text, **base)
        if kind in STRUCTURAL_TYPES:
            return Item("structural", text=kind, **base)
        raw = json.dumps(thaw(event.data), ensure_ascii=False, sort_keys=True)
        return Item("raw", text=raw, **base)
