"""Building one imported session's event log in order, without freezing it.

The builder emits :class:`Draft` events: plain values that become frozen
:class:`~sessionquery.model.SessionEvent` objects only when a full read needs them
(:meth:`Draft.freeze`), while search indexing takes their text straight from the drafts. The
builder also records each event's surface class as it goes: it only ever appends to the surface
or replaces a *tail* of the current surface (the whole of it for a compaction, the part after a
rewind point for a rewind), so the class of every seq is known without a fold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from sessionquery.model import Replace, SessionEvent, messages
from sessionquery.model.surface import SurfaceClass
from sessionquery.sources._common import ORIGIN_KEY

__all__ = ["Draft", "LogBuilder", "call_block"]


def call_block(call_id: object, fallback_id: str, name: object, arguments: str) -> dict[str, Any]:
    """A ``tool-call`` content block: the producer's call id when it is a non-empty string
    (else ``fallback_id``, made from where the call stands), the tool's name (``unknown``
    when it has none) and the JSON text of its arguments."""
    own = call_id if isinstance(call_id, str) and call_id else fallback_id
    return {"type": "tool-call", "id": own, "name": str(name or "unknown"), "arguments": arguments}


@dataclass(slots=True)
class Draft:
    """One event before freezing: the same fields as :class:`SessionEvent`, unvalidated.

    ``type`` and ``data`` have the meaning (and the attribute names) of
    :class:`SessionEvent`, so :func:`~sessionquery.model.extract_event_text` reads a draft as it
    reads the frozen event.
    """

    type: str
    seq: int
    time: int
    data: dict[str, Any]
    surface_op: Any = None
    source_event_seqs: tuple[int, ...] | None = None
    ignorable: bool = False

    def freeze(self) -> SessionEvent:
        """The validated, frozen event.

        Raises:
            ValueError: the draft holds a value the event model cannot store.
        """
        return SessionEvent(
            self.type,
            self.seq,
            self.time,
            self.data,
            surface_op=self.surface_op,
            source_event_seqs=self.source_event_seqs,
            ignorable=self.ignorable,
        )


@dataclass(slots=True)
class LogBuilder:
    """Builds one session's event log in order, keeping turn/step structure and the surface.

    Turns opened *implicitly* (formats without explicit turn events) are closed by the next
    user prompt, and at the end of the file when no tool call is left without a result; a
    turn left open makes the query service's crash-tail repair mark its pending calls.
    """

    file: str
    events: list[Draft] = field(default_factory=list[Draft])
    surface: list[SurfaceClass] = field(default_factory=list[SurfaceClass])
    titled: bool = False
    last_time: int = 0
    current: list[int] = field(default_factory=list[int])
    turn: int = -1
    turn_open: bool = False
    turn_explicit: bool = False
    step: int = -1
    step_open: bool = False
    step_has_results: bool = False
    call_seqs: dict[str, int] = field(default_factory=dict[str, int])
    pending_calls: set[str] = field(default_factory=set[str])

    # -- primitives

    def time_of(self, value: int | None) -> int:
        """``value`` if known, else the last known time (times never go missing)."""
        if value is not None:
            self.last_time = value
        return self.last_time

    def emit(
        self,
        kind: str,
        data: Mapping[str, object],
        line: int | list[int],
        time: int | None = None,
        *,
        surface: bool = False,
        replace_surface: bool = False,
        sources: tuple[int, ...] | None = None,
        ignorable: bool = False,
        replace_from: int | None = None,
    ) -> int:
        """Append one event; ``data`` gets the origin pointer. Returns its seq.

        With ``replace_surface`` the event replaces the current surface from the node
        ``replace_from`` (a seq on the surface) to its end, or all of it (``None``, or a seq
        that is no longer on the surface).
        """
        seq = len(self.events)
        lines = line if isinstance(line, list) else [line]
        origin: dict[str, Any] = {"file": self.file, "line": lines[0]}
        if len(lines) > 1:
            origin["lines"] = lines
        payload = {**data, ORIGIN_KEY: origin}
        op: Any = None
        surface_class: SurfaceClass = "log-only"
        if surface or replace_surface:
            op, surface_class = "append", "current"
            start = 0
            if replace_from is not None and replace_from in self.current:
                start = self.current.index(replace_from)
            run = self.current[start:]
            if replace_surface and run:
                op = Replace(run[0], run[-1])
                sources = tuple(run)
                for removed in run:
                    self.surface[removed] = "shadowed"
                del self.current[start:]
            self.current.append(seq)
        if kind == "session/title":
            self.titled = True
        self.events.append(Draft(kind, seq, self.time_of(time), payload, op, sources, ignorable))
        self.surface.append(surface_class)
        return seq

    def log_only(self, kind: str, raw: str, line: int, time: int | None) -> None:
        """An ignorable, log-only event that keeps the raw line."""
        self.emit(kind, {"raw": raw}, line, time, ignorable=True)

    # -- turn and step structure

    def open_turn(self, line: int, time: int | None, *, explicit: bool) -> None:
        """Close any open turn and start a new one."""
        if self.turn_open:
            self.close_turn(self.default_close_reason(), line, time)
        self.turn += 1
        self.step = -1
        self.turn_open, self.turn_explicit = True, explicit
        self.pending_calls.clear()
        self.emit("turn/start", messages.turn_start(self.turn), line, time)

    def default_close_reason(self) -> dict[str, Any]:
        """``completed``, or ``aborted`` by the user when calls are still without results."""
        if self.pending_calls:
            return {"kind": "aborted", "reason": {"kind": "user"}}
        return {"kind": "completed"}

    def close_turn(self, reason: dict[str, Any], line: int, time: int | None) -> None:
        """End the open step and turn (no-op when no turn is open)."""
        if not self.turn_open:
            return
        self.close_step(line, time)
        self.emit("turn/end", messages.turn_end(self.turn, reason), line, time)
        self.turn_open = False
        self.pending_calls.clear()

    def close_step(self, line: int, time: int | None) -> None:
        """End the open step, if any."""
        if self.step_open:
            self.emit("step/end", messages.step_end(self.turn, self.step), line, time)
            self.step_open = False

    def ensure_turn(self, line: int, time: int | None) -> None:
        """Open an implicit turn when output arrives outside any turn."""
        if not self.turn_open:
            self.open_turn(line, time, explicit=False)

    def begin_output(self, line: int, time: int | None) -> None:
        """Prepare for model output: a new step after tool results, or the first step."""
        self.ensure_turn(line, time)
        if self.step_open and self.step_has_results:
            self.close_step(line, time)
        if not self.step_open:
            self.step += 1
            self.step_open, self.step_has_results = True, False
            self.pending_calls.clear()
            self.emit("step/start", messages.step_start(self.turn, self.step), line, time)

    def begin_result(self, line: int, time: int | None) -> None:
        """Prepare for a tool result (opening a turn/step if the log lacks one)."""
        if not self.turn_open or not self.step_open:
            self.begin_output(line, time)
        self.step_has_results = True

    # -- message helpers

    def user_message(
        self,
        message_id: str,
        content: list[Any],
        kind: str,
        line: int,
        time: int | None,
        *,
        replace_surface: bool = False,
        replace_from: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> int:
        """A ``user/message`` on the surface (appended, or replacing the surface from
        ``replace_from``, or the whole surface)."""
        data = messages.user_message(content, id=message_id, source={"kind": kind, **(extra or {})})
        return self.emit(
            "user/message",
            data,
            line,
            time,
            surface=True,
            replace_surface=replace_surface,
            replace_from=replace_from,
        )

    def rewound(self, text: str, line: int, time: int | None, replace_from: int) -> int:
        """A rewind in the transcript: the open turn ends, and a ``user/message``
        (``source.kind: "rewind"``) saying ``text`` replaces the surface from ``replace_from``."""
        self.close_turn(self.default_close_reason(), line, time)
        return self.user_message(
            f"rewind-line-{line}",
            [{"type": "context", "text": text}],
            "rewind",
            line,
            time,
            replace_surface=True,
            replace_from=replace_from,
        )

    def assistant_message(
        self,
        content: list[Any],
        line: int | list[int],
        time: int | None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """An ``assistant/message`` plus one ``tool/call`` per ``tool-call`` block."""
        first = line[0] if isinstance(line, list) else line
        self.begin_output(first, time)
        data: dict[str, Any] = {
            **messages.assistant_message(content, turn=self.turn, step=self.step),
            **(extra or {}),
        }
        self.emit("assistant/message", data, line, time, surface=True)
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool-call":
                call_id = block["id"]
                typed = cast(messages.ToolCallBlock, block)
                call = messages.tool_call(typed, turn=self.turn, step=self.step)
                self.call_seqs[call_id] = self.emit("tool/call", call, first, time)
                self.pending_calls.add(call_id)

    def tool_result(
        self, call_id: str, is_error: bool, content: list[Any], line: int, time: int | None
    ) -> None:
        """A ``tool/result`` citing its ``tool/call`` when that call is in this log."""
        self.begin_result(line, time)
        data = messages.tool_result(
            content, call_id=call_id, turn=self.turn, step=self.step, is_error=is_error
        )
        call_seq = self.call_seqs.get(call_id)
        self.pending_calls.discard(call_id)
        self.emit(
            "tool/result",
            data,
            line,
            time,
            surface=True,
            sources=(call_seq,) if call_seq is not None else None,
        )

    def finish(self, line: int) -> None:
        """Close an implicit last turn that has no call left without a result."""
        if self.turn_open and not self.turn_explicit and not self.pending_calls:
            self.close_turn({"kind": "completed"}, line, None)

    # -- derived titles

    def derive_title(
        self, message_seq: int, blocks: list[Any], line: int, time: int | None
    ) -> None:
        """Give an untitled session a title from its first real user prompt (issue 16).

        The ``session/title`` event follows the prompt; any title the transcript states later
        wins over it (the last title wins), and a transcript that states one first gets none.
        """
        if self.titled:
            return
        title = title_from_prompt(blocks)
        if title is None:
            return
        data = {"title": title, "messageSeqs": [message_seq], "source": DERIVED_TITLE_SOURCE}
        self.emit("session/title", data, line, time)


DERIVED_TITLE_SOURCE = {"kind": "derived"}
"""The ``source`` of a title derived from the first user prompt."""

TITLE_LIMIT = 80
"""Derived titles are at most this many characters (a longer first line is cut with ``…``)."""


def title_from_prompt(blocks: list[Any]) -> str | None:
    """The first line of a prompt's first text block, cleaned and at most 80 characters; None
    for a prompt without text or one that starts with markup (slash commands, command output)."""
    text = next(
        (b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)),
        "",
    )
    stripped = text.strip()
    if not stripped or stripped.startswith("<"):
        return None
    first = stripped.splitlines()[0]
    words = " ".join("".join(c if c.isprintable() else " " for c in first).split())
    if not words:
        return None
    if len(words) <= TITLE_LIMIT:
        return words
    cut = words[: TITLE_LIMIT - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > TITLE_LIMIT // 2 else cut).rstrip() + "…"
