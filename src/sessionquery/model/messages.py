"""Builders for the ``data`` of the event types that have meaning (SPEC §3.3).

Each function returns a fresh plain ``dict`` in exactly the shape the model, the search text,
the crash-tail repair and the tools read, so a recorder never writes those shapes by hand::

    session.append("turn/start", turn_start(0))
    session.append("user/message", user_message("Why does it fail?", id="m0"),
                   surface_op="append")
    call = tool_call_block("call_1", "bash", {"command": "pytest -q"})
    session.append("assistant/message", assistant_message("Running the tests.", turn=0,
                   step=0, tool_calls=[call]), surface_op="append")
    session.append("tool/call", tool_call(call, turn=0, step=0))
    session.append("tool/result", tool_result("1 passed", call_id="call_1", turn=0, step=0),
                   surface_op="append")
    session.append("turn/end", turn_end(0))

Invariants: the builders are pure (no clock, no ids invented, no I/O), never share a mutable
value between two results, and write tool-call arguments as the raw JSON *string* SPEC §3.3
requires (a mapping is serialised with sorted keys; a string is kept verbatim). They validate
nothing beyond their Python types: the store validates every event when it is appended.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal, NotRequired, TypedDict

from sessionquery.model.jsonvalue import JsonValue

__all__ = [
    "AssistantMessageData",
    "ContentBlock",
    "StepData",
    "SystemMessageData",
    "TextBlock",
    "TitleData",
    "TodoData",
    "ToolCallBlock",
    "ToolCallData",
    "ToolResultData",
    "TurnEndData",
    "TurnStartData",
    "UserMessageData",
    "assistant_message",
    "session_title",
    "step_end",
    "step_start",
    "system_message",
    "text_block",
    "todo_write",
    "tool_call",
    "tool_call_block",
    "tool_result",
    "turn_end",
    "turn_start",
    "user_message",
]

TurnEndKind = Literal["completed", "error", "aborted", "max-tokens", "interrupted"]
"""The ``reason.kind`` values of ``turn/end`` that the semantic text knows; others are allowed."""


class TextBlock(TypedDict):
    """A ``{"type": "text"}`` content block."""

    type: Literal["text"]
    text: str


class ToolCallBlock(TypedDict):
    """A ``{"type": "tool-call"}`` content block of an assistant message."""

    type: Literal["tool-call"]
    id: str
    name: str
    arguments: str


class _ToolResultBlock(TypedDict):
    type: Literal["tool-result"]
    toolCallId: str
    isError: bool
    content: list[ContentBlock]


ContentBlock = TextBlock | ToolCallBlock | dict[str, JsonValue]
"""A content block: text, tool call, or any other (opaque) block such as reasoning or images."""


class _Source(TypedDict):
    kind: str


class _ToolSource(TypedDict):
    kind: Literal["tool"]
    callId: str


class UserMessageData(TypedDict):
    """The data of a ``user/message`` event."""

    id: str
    role: Literal["user"]
    content: list[ContentBlock]
    source: dict[str, JsonValue]


class _AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: list[ContentBlock]


class AssistantMessageData(TypedDict):
    """The data of an ``assistant/message`` event."""

    turn: int
    step: int
    message: _AssistantMessage
    usage: NotRequired[dict[str, JsonValue]]


class _SystemMessage(TypedDict):
    role: Literal["system"]
    content: list[ContentBlock]


class SystemMessageData(TypedDict):
    """The data of a ``system/message`` event."""

    turn: int
    step: int
    message: _SystemMessage


class _ToolResultMessage(TypedDict):
    role: Literal["user"]
    source: _ToolSource
    content: list[_ToolResultBlock]
    id: NotRequired[str]


class _ToolError(TypedDict):
    name: str
    code: str


class ToolResultData(TypedDict):
    """The data of a ``tool/result`` event."""

    turn: int
    step: int
    message: _ToolResultMessage
    error: NotRequired[_ToolError]


class ToolCallData(TypedDict):
    """The data of a ``tool/call`` event (``arguments`` is the raw JSON string)."""

    turn: int
    step: int
    callId: str
    name: str
    arguments: str


class TurnStartData(TypedDict):
    """The data of a ``turn/start`` event."""

    turn: int


class TurnEndData(TypedDict):
    """The data of a ``turn/end`` event."""

    turn: int
    reason: dict[str, JsonValue]


class StepData(TypedDict):
    """The data of a ``step/start`` or ``step/end`` event."""

    turn: int
    step: int


class TitleData(TypedDict):
    """The data of a ``session/title`` event."""

    title: str
    messageSeqs: list[int]
    source: _Source


class _Todo(TypedDict):
    content: str
    status: str


class TodoData(TypedDict):
    """The data of a ``todo/write`` event."""

    todos: list[_Todo]


def text_block(text: str) -> TextBlock:
    """A text content block."""
    return {"type": "text", "text": text}


def tool_call_block(
    call_id: str, name: str, arguments: str | Mapping[str, object]
) -> ToolCallBlock:
    """A tool-call content block for :func:`assistant_message`.

    Args:
        call_id: the id that the matching ``tool/call`` and ``tool/result`` repeat.
        name: the tool's name.
        arguments: the raw JSON text the model produced, kept verbatim, or a mapping, written as
            JSON with sorted keys.
    """
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, sort_keys=True)
    return {"type": "tool-call", "id": call_id, "name": name, "arguments": text}


def user_message(
    text: str | Sequence[ContentBlock],
    *,
    id: str,
    source: str | Mapping[str, JsonValue] = "user",
) -> UserMessageData:
    """The data of a ``user/message``.

    Args:
        text: what the user (or, with another ``source``, the system) said: one text, or the
            content blocks as they are (images and other blocks are kept as given).
        id: the message id, unique within the session.
        source: ``source.kind``: ``"user"``, or for example ``"compaction"`` for a summary that
            replaces earlier messages; or the whole ``source`` object (with its ``kind``).
    """
    return {
        "id": id,
        "role": "user",
        "content": _content(text),
        "source": {"kind": source} if isinstance(source, str) else _source(source),
    }


def assistant_message(
    text: str | Sequence[ContentBlock] | None = None,
    *,
    turn: int,
    step: int,
    tool_calls: Iterable[ToolCallBlock] = (),
    reasoning: str | None = None,
    usage: Mapping[str, JsonValue] | None = None,
) -> AssistantMessageData:
    """The data of an ``assistant/message``: reasoning, then text, then tool-call blocks.

    Args:
        text: the visible answer, or ``None`` for a message that only calls tools; or the
            content blocks as they are (then typically without ``tool_calls``).
        turn: the turn number.
        step: the step number within the turn.
        tool_calls: blocks made with :func:`tool_call_block`, in call order.
        reasoning: reasoning text (stored, never searchable).
        usage: token usage as the provider reported it.
    """
    content: list[ContentBlock] = []
    if reasoning is not None:
        content.append({"type": "reasoning", "text": reasoning})
    if text is not None:
        content.extend(_content(text))
    content.extend(dict(block) for block in tool_calls)
    data: AssistantMessageData = {
        "turn": turn,
        "step": step,
        "message": {"role": "assistant", "content": content},
    }
    if usage is not None:
        data["usage"] = dict(usage)
    return data


def system_message(text: str, *, turn: int, step: int) -> SystemMessageData:
    """The data of a ``system/message`` with one text block."""
    return {
        "turn": turn,
        "step": step,
        "message": {"role": "system", "content": [text_block(text)]},
    }


def tool_call(block: ToolCallBlock, *, turn: int, step: int) -> ToolCallData:
    """The data of the ``tool/call`` event that logs a call the assistant message made."""
    return {
        "turn": turn,
        "step": step,
        "callId": block["id"],
        "name": block["name"],
        "arguments": block["arguments"],
    }


def tool_result(
    output: str | Sequence[ContentBlock],
    *,
    call_id: str,
    turn: int,
    step: int,
    is_error: bool = False,
    error: tuple[str, str] | None = None,
    message_id: str | None = None,
) -> ToolResultData:
    """The data of a ``tool/result`` answering the call ``call_id``.

    Args:
        output: the text the tool returned, or its content blocks as they are.
        call_id: the id of the tool call this answers.
        turn: the turn number.
        step: the step number within the turn.
        is_error: whether the tool reported a failure.
        error: ``(name, code)`` of a structured error, searchable after the output.
        message_id: an id for the result message, when the recorder keeps one.
    """
    message: _ToolResultMessage = {
        "role": "user",
        "source": {"kind": "tool", "callId": call_id},
        "content": [
            {
                "type": "tool-result",
                "toolCallId": call_id,
                "isError": is_error,
                "content": _content(output),
            }
        ],
    }
    if message_id is not None:
        message = {"id": message_id, **message}
    data: ToolResultData = {"turn": turn, "step": step, "message": message}
    if error is not None:
        data["error"] = {"name": error[0], "code": error[1]}
    return data


def turn_start(turn: int) -> TurnStartData:
    """The data of a ``turn/start``."""
    return {"turn": turn}


def turn_end(
    turn: int,
    reason: TurnEndKind | str | Mapping[str, JsonValue] = "completed",
    **details: JsonValue,
) -> TurnEndData:
    """The data of a ``turn/end``.

    Args:
        turn: the turn number.
        reason: ``reason.kind``; ``"completed"`` for a normal end. Or the whole ``reason``
            object (with its ``kind``), as an importer finds it.
        **details: further ``reason`` fields, for example ``error={"message": "..."}`` with
            ``reason="error"`` (the message is searchable).
    """
    if isinstance(reason, str):
        return {"turn": turn, "reason": {"kind": reason, **details}}
    return {"turn": turn, "reason": {**reason, **details}}


def step_start(turn: int, step: int) -> StepData:
    """The data of a ``step/start``."""
    return {"turn": turn, "step": step}


def step_end(turn: int, step: int) -> StepData:
    """The data of a ``step/end``."""
    return {"turn": turn, "step": step}


def session_title(
    title: str, message_seqs: Sequence[int], *, source: str = "generated"
) -> TitleData:
    """The data of a ``session/title`` naming the session after the messages ``message_seqs``."""
    return {"title": title, "messageSeqs": list(message_seqs), "source": {"kind": source}}


def todo_write(todos: Iterable[tuple[str, str]]) -> TodoData:
    """The data of a ``todo/write`` from ``(content, status)`` pairs, in list order."""
    return {"todos": [{"content": content, "status": status} for content, status in todos]}


def _content(text: str | Sequence[ContentBlock]) -> list[ContentBlock]:
    if isinstance(text, str):
        return [text_block(text)]
    return list(text)


def _source(source: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    if not isinstance(source.get("kind"), str):
        raise TypeError("a message source needs a string 'kind'")
    return dict(source)
