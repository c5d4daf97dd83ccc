"""Crash-tail repair: the events that close a turn a crash left open.

A process that dies mid-turn leaves a log whose last turn never ended, perhaps with tool
calls that never got results. :func:`interrupted_turn_closers` computes the events that
would close it. Reads of persisted logs append them **in memory only**; nothing here writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sessionquery.model.event import SessionEvent
from sessionquery.model.jsonvalue import as_dict

__all__ = ["NOT_STARTED_TEXT", "OUTCOME_UNKNOWN_TEXT", "interrupted_turn_closers"]

# The original system's sentences, byte for byte: the model sees them, search indexes them and
# text filters match them, so a history must read the same in both systems.
OUTCOME_UNKNOWN_TEXT = (
    "The tool call was interrupted after it was recorded, but no result was durably recorded. "
    "Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if "
    "the operation is read-only or idempotent; if it may have side effects, first verify "
    "external state or ask the user. Do not retry blindly."
)
"""The text of the closer of a call whose ``tool/call`` was logged (``TOOL_OUTCOME_UNKNOWN``)."""

NOT_STARTED_TEXT = (
    "The tool call was interrupted before the Harness recorded it as started. "
    "Retry it if it is still needed."
)
"""The text of the closer of a call that was never logged as started (``TOOL_NOT_STARTED``)."""


@dataclass(slots=True)
class _Pending:
    step: Any
    call_seq: int | None = None


def interrupted_turn_closers(events: Sequence[SessionEvent]) -> list[SessionEvent]:
    """Events that close the log's open turn, or ``[]`` when no turn is open.

    In order: one error ``tool/result`` per pending tool call (in call order), ``step/end``
    if a step is open, then ``turn/end`` with reason ``interrupted``. They are numbered from
    the next seq and carry the last event's time.
    """
    turn: Any = None
    step: Any = None
    turn_open = step_open = False
    pending: dict[str, _Pending] = {}
    for event in events:
        data: Any = event.data if isinstance(event.data, dict) else {}
        kind = event.type
        if kind == "turn/start":
            turn, turn_open, step_open = data.get("turn"), True, False
            pending.clear()
        elif kind == "turn/end":
            turn_open = step_open = False
            pending.clear()
        elif kind == "step/start":
            step, step_open = data.get("step"), True
        elif kind == "step/end":
            step_open = False
            pending.clear()
        elif kind == "assistant/message":
            for block in _content(data.get("message")):
                if block.get("type") == "tool-call" and isinstance(block.get("id"), str):
                    # A map assignment: an announced-again id keeps its place in call order
                    # but starts over (not started, this message's step).
                    pending[block["id"]] = _Pending(step=data.get("step"))
        elif kind == "tool/call":
            entry = pending.get(data.get("callId"))
            if entry is not None:
                entry.call_seq = event.seq  # the last logged call is the one to cite
        elif kind == "tool/result":
            source = as_dict(as_dict(data.get("message")).get("source"))
            pending.pop(source.get("callId"), None)  # type: ignore[arg-type]
    if not turn_open or not events:
        return []
    seq, time = events[-1].seq + 1, events[-1].time
    closers: list[SessionEvent] = []
    for call_id, entry in pending.items():
        closers.append(_interrupted_result(call_id, entry, turn, seq, time))
        seq += 1
    if step_open:
        closers.append(SessionEvent("step/end", seq, time, {"turn": turn, "step": step}))
        seq += 1
    closers.append(
        SessionEvent("turn/end", seq, time, {"turn": turn, "reason": {"kind": "interrupted"}})
    )
    return closers


def _interrupted_result(
    call_id: str, entry: _Pending, turn: Any, seq: int, time: int
) -> SessionEvent:
    started = entry.call_seq is not None
    error = (
        {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}
        if started
        else {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}
    )
    text = OUTCOME_UNKNOWN_TEXT if started else NOT_STARTED_TEXT
    message = {
        "id": f"interrupted-tool-result-{call_id}-{seq}",
        "role": "user",
        "source": {"kind": "tool", "callId": call_id},
        "content": [
            {
                "type": "tool-result",
                "toolCallId": call_id,
                "isError": True,
                "content": [{"type": "text", "text": text}],
            }
        ],
    }
    return SessionEvent(
        "tool/result",
        seq,
        time,
        {"turn": turn, "step": entry.step, "message": message, "error": error},
        surface_op="append",
        source_event_seqs=(entry.call_seq,) if entry.call_seq is not None else None,
    )


def _content(message: object) -> list[dict[str, Any]]:
    content = as_dict(message).get("content")
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, dict)]  # pyright: ignore
