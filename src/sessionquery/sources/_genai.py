"""Google GenAI ``Content``/``Part`` values (Gemini CLI and Qwen Code) as content blocks.

A ``PartListUnion`` is a string, one part, or a list of strings and parts; a part holds one of
``text`` (with ``thought: true`` for reasoning), ``functionCall {id, name, args}``,
``functionResponse {id, name, response}``, ``inlineData {mimeType, data}``, ``fileData``,
``executableCode``, ``codeExecutionResult``. Binary data is never copied into an event (the
origin pointer leads to it).
"""

from __future__ import annotations

from typing import Any

from sessionquery.model.jsonvalue import as_dict, as_list, compact_json
from sessionquery.sources._builder import call_block

__all__ = [
    "call_blocks",
    "function_responses",
    "parts_of",
    "response_blocks",
    "text_blocks",
]


def parts_of(content: object) -> list[dict[str, Any]]:
    """The parts of a ``PartListUnion`` (strings become text parts; others are dropped)."""
    items = content if isinstance(content, list) else [content]
    out: list[dict[str, Any]] = []
    for item in items:  # pyright: ignore[reportUnknownVariableType]
        if isinstance(item, str):
            out.append({"text": item})
        elif isinstance(item, dict):
            out.append(item)  # pyright: ignore[reportUnknownArgumentType]
    return out


def text_blocks(parts: list[dict[str, Any]], *, reasoning: bool = True) -> list[dict[str, Any]]:
    """Text, reasoning (``thought`` parts, when ``reasoning``) and opaque media blocks; calls
    and responses are left to :func:`call_blocks` and :func:`function_responses`."""
    out: list[dict[str, Any]] = []
    for part in parts:
        text = part.get("text")
        if isinstance(text, str):
            if part.get("thought") is True:
                if reasoning:
                    out.append({"type": "reasoning", "text": text})
            elif text:
                out.append({"type": "text", "text": text})
        elif isinstance(part.get("inlineData"), dict):
            out.append({"type": "image", "mediaType": part["inlineData"].get("mimeType")})
        elif isinstance(part.get("fileData"), dict):
            out.append({"type": "file", "uri": part["fileData"].get("fileUri")})
        elif isinstance(part.get("executableCode"), dict):
            code = part["executableCode"].get("code")
            out.append({"type": "text", "text": code if isinstance(code, str) else ""})
        elif isinstance(part.get("codeExecutionResult"), dict):
            output = part["codeExecutionResult"].get("output")
            if isinstance(output, str) and output:
                out.append({"type": "text", "text": output})
    return out


def call_blocks(parts: list[dict[str, Any]], fallback: str) -> list[dict[str, Any]]:
    """A ``tool-call`` block per ``functionCall`` part (ids made from ``fallback`` if absent)."""
    out: list[dict[str, Any]] = []
    for index, part in enumerate(parts):
        call = as_dict(part.get("functionCall"))
        if not call:
            continue
        out.append(
            call_block(
                call.get("id"),
                f"{fallback}-{index}",
                call.get("name"),
                compact_json(call.get("args", {})),
            )
        )
    return out


def function_responses(parts: list[dict[str, Any]]) -> list[tuple[str | None, dict[str, Any]]]:
    """``(call id, functionResponse)`` for every ``functionResponse`` part."""
    out: list[tuple[str | None, dict[str, Any]]] = []
    for part in parts:
        response = as_dict(part.get("functionResponse"))
        if response:
            call_id = response.get("id")
            out.append((call_id if isinstance(call_id, str) and call_id else None, response))
    return out


def response_blocks(response: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """The text of one ``functionResponse`` and whether it reports an error.

    The producers put the tool's output under ``response.output`` (or ``response.content``)
    and failures under ``response.error``; anything else is kept as its JSON text.
    """
    body = response.get("response")
    if isinstance(body, str):
        return [{"type": "text", "text": body}], False
    data = as_dict(body)
    error = data.get("error")
    for key in ("output", "content", "result"):
        value = data.get(key)
        if isinstance(value, str):
            return [{"type": "text", "text": value}], error is not None
        if isinstance(value, list):
            blocks = text_blocks(parts_of(as_list(value)), reasoning=False)
            if blocks:
                return blocks, error is not None
    if isinstance(error, str):
        return [{"type": "text", "text": error}], True
    if data:
        return [{"type": "text", "text": compact_json(data)}], error is not None
    return [], False
