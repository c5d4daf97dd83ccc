"""The five tool definitions as the model sees them: names, descriptions, JSON Schemas.

Invariants:

* every schema is a flat ``"type": "object"`` with snake_case properties, in the order of the
  reference contract §6.2, and ``"additionalProperties": false``;
* no cursor, offset, page size, result limit or workspace path is ever a property: identity
  and scope come from the :class:`~sessionquery.tools.access.ToolCaller`, paging is internal;
* the definitions and :data:`PROMPT_SECTION` are constants, so the request prefix an agent
  sends stays byte-identical across calls (prompt caches stay warm).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from sessionquery.query.filters import AVAILABILITY_VALUES, SURFACE_VALUES

__all__ = [
    "EVENT_READ",
    "EVENT_SEARCH",
    "EVENT_TRACE",
    "PROMPT_SECTION",
    "SEARCH_TOOLS",
    "SESSION_SEARCH",
    "SESSION_TRACE",
    "TOOL_NAMES",
    "ToolDefinition",
    "build_definitions",
    "input_schema",
]

SESSION_SEARCH = "session_search"
EVENT_SEARCH = "session_event_search"
SESSION_TRACE = "session_trace"
EVENT_TRACE = "session_event_trace"
EVENT_READ = "session_event_read"

TOOL_NAMES: tuple[str, ...] = (SESSION_SEARCH, EVENT_SEARCH, SESSION_TRACE, EVENT_TRACE, EVENT_READ)
SEARCH_TOOLS = frozenset({SESSION_SEARCH, EVENT_SEARCH})

PROMPT_SECTION = (
    "Use session_search to find relevant work from prior sessions, or session_event_search to "
    "search earlier events in one session. Search results are cursor-free and "
    "workspace-scoped. Follow a useful hit with session_trace, session_event_trace, or "
    "session_event_read when you need lineage, relationships, or exact data."
)
"""The fixed guidance an agent adds to its system prompt while the tools are mounted."""

_SURFACES: list[str] = list(SURFACE_VALUES)
_AVAILABILITY: list[str] = list(AVAILABILITY_VALUES)
_ISO = "ISO 8601 timestamp with a T and Z or a numeric offset, e.g. 2025-01-31T09:30:00Z"


def _string(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _integer(description: str) -> dict[str, Any]:
    return {"type": "integer", "description": description}


def _strings(description: str, enum: list[str] | None = None) -> dict[str, Any]:
    items: dict[str, Any] = {"type": "string"}
    if enum is not None:
        items["enum"] = list(enum)
    return {"type": "array", "items": items, "description": description}


def _object(properties: dict[str, Any], required: list[str] | None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


_SCHEMAS: dict[str, dict[str, Any]] = {
    SESSION_SEARCH: _object(
        {
            "query": _string(
                "Literal full-text query; its words must appear adjacent and in this order."
            ),
            "session_ids": _strings("Only search these sessions."),
            "created_at_from": _string(f"Sessions created at or after this {_ISO}."),
            "created_at_to": _string(f"Sessions created at or before this {_ISO}."),
            "parent_session_ids": _strings("Only sessions whose direct parent is one of these."),
            "include_root_sessions": {
                "type": "boolean",
                "description": "Also include sessions without a parent in the parent filter.",
            },
            "availability": _strings(
                "Only sessions with at least one of these availabilities.", _AVAILABILITY
            ),
            "event_seq_from": _integer("Only match events with seq at or above this."),
            "event_seq_to": _integer("Only match events with seq at or below this."),
            "event_time_from": _string(f"Only match events at or after this {_ISO}."),
            "event_time_to": _string(f"Only match events at or before this {_ISO}."),
            "event_types": _strings("Only match events of these types, e.g. user/message."),
            "event_surfaces": _strings(
                "Only match events in these surface states: current (in the model history), "
                "shadowed (replaced, e.g. by compaction) or log-only (never in the history).",
                _SURFACES,
            ),
        },
        ["query"],
    ),
    EVENT_SEARCH: _object(
        {
            "session_id": _string("Session to search; omit to search the current session."),
            "query": _string(
                "Literal full-text query; its words must appear adjacent and in this order."
            ),
            "seq_from": _integer("Only events with seq at or above this."),
            "seq_to": _integer("Only events with seq at or below this."),
            "time_from": _string(f"Only events at or after this {_ISO}."),
            "time_to": _string(f"Only events at or before this {_ISO}."),
            "event_types": _strings("Only events of these types, e.g. tool/result."),
            "surfaces": _strings(
                "Only events in these surface states: current, shadowed or log-only.", _SURFACES
            ),
        },
        ["query"],
    ),
    SESSION_TRACE: _object(
        {"session_id": _string("Session to trace; omit to trace the current session.")},
        None,
    ),
    EVENT_TRACE: _object(
        {
            "session_id": _string("Session holding the event; omit for the current session."),
            "seq": _integer("Sequence number of the event."),
        },
        ["seq"],
    ),
    EVENT_READ: _object(
        {
            "session_id": _string("Session holding the event; omit for the current session."),
            "seq": _integer("Sequence number of the event to read."),
            "before": _integer("How many preceding events to summarise; omit for none."),
            "after": _integer("How many following events to summarise; omit for none."),
        },
        ["seq"],
    ),
}

_DESCRIPTIONS: dict[str, str] = {
    SESSION_SEARCH: (
        "Search prior sessions in your workspace for a literal phrase. Returns matching "
        "sessions, best first, each with its title and strongest matching event (seq and "
        "snippet). Your own current session is never included. Narrow with the filters when "
        "the result cap is reached."
    ),
    EVENT_SEARCH: (
        "Search the events of one session in your workspace for a literal phrase. Returns the "
        "matching events, best first, with seq and snippet. On your current session (the "
        "default) the search stops before the step that makes this call."
    ),
    SESSION_TRACE: (
        "Show the lineage of one session in your workspace: its ancestors (nearest first) and "
        "its descendants such as forks and subagents, with titles. Sessions outside your "
        "workspace appear only as markers."
    ),
    EVENT_TRACE: (
        "Show every direct relationship of one event: which event replaced it (e.g. a "
        "compaction), the full replacement chain, the events it replaced, the events it cites "
        "as sources and the later events that cite it."
    ),
    EVENT_READ: (
        "Read one event in full, unabridged, as JSON, optionally with short summaries of the "
        "raw events just before and after it."
    ),
}


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """One model-facing tool as an agent loop registers it.

    Attributes:
        name: the tool name the model calls.
        description: a short text written for the model.
        input_schema: the JSON Schema of the arguments (a fresh copy per definition).
        parallel_safe: whether the tool may run concurrently with sibling tool calls.
        timeout_ms: the deadline the tool applies to itself, or ``None`` for none.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    parallel_safe: bool
    timeout_ms: int | None


def input_schema(name: str) -> dict[str, Any]:
    """A fresh copy of the JSON Schema of tool ``name`` (``KeyError`` if unknown)."""
    return copy.deepcopy(_SCHEMAS[name])


def build_definitions(search_timeout_ms: int) -> list[ToolDefinition]:
    """The five definitions, search tools first, with fresh schema copies."""
    return [
        ToolDefinition(
            name=name,
            description=_DESCRIPTIONS[name],
            input_schema=input_schema(name),
            parallel_safe=name not in SEARCH_TOOLS,
            timeout_ms=search_timeout_ms if name in SEARCH_TOOLS else None,
        )
        for name in TOOL_NAMES
    ]
