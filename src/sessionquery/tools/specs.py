"""The five tools as records: each tool is one :class:`ToolSpec`, and every table derives from
:data:`TOOLS` (the names, the definitions, the dispatch, the MCP tool list).

A record holds what the model sees (name, description, JSON Schema, annotations), how the
model's arguments are read (``parse``: schema check, then normalisation into a frozen
arguments value) and which workflow answers (``run``, a method of
:class:`~sessionquery.tools.operations.Operations`). Invariants:

* the records are in the order of the reference contract §6.2 (search tools first), and
  their schemas follow §6.2 property by property: no cursor, offset, page size, result limit
  or workspace path is ever a property (identity and scope come from the
  :class:`~sessionquery.tools.access.ToolCaller`, paging is internal);
* a schema is a function of the toolkit's :class:`ToolSettings` only where the model must be
  told a setting: ``before``/``after`` carry a ``maximum`` equal to the service's
  ``read_window_max`` and ``match`` says which mode is the default; seq-like integers carry
  ``"minimum": 0``;
* the definitions and :data:`PROMPT_SECTION` are constants for given settings, so the request
  prefix an agent sends stays byte-identical across calls (prompt caches stay warm);
* ``exclusive`` tools (the two searches) are not parallel-safe and run under the search
  deadline; the others are parallel-safe.

Adding a tool: a record (with its arguments value and ``parse``) here, its workflow in
``operations.py``, its output in ``render.py`` (docs/development.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from sessionquery.match_modes import TOOL_MATCHES, TOOLS_MATCH, ToolMatch, search_mode
from sessionquery.query.filters import (
    AVAILABILITY_VALUES,
    SURFACE_VALUES,
    AvailabilityIn,
    CreatedBetween,
    EventFilter,
    IdIn,
    SeqBetween,
    SessionFilter,
)
from sessionquery.tools.arguments import (
    event_metadata,
    ids,
    non_empty,
    optional_session_id,
    query_text,
    seq,
    seq_range,
    time_range,
)
from sessionquery.tools.schemas import (
    ISO_TIMESTAMP,
    ToolDefinition,
    boolean,
    integer,
    object_schema,
    string,
    strings,
)
from sessionquery.tools.validation import check_arguments

if TYPE_CHECKING:
    from sessionquery.tools.operations import Operations

__all__ = [
    "DEFAULT_READ_WINDOW_MAX",
    "DEFAULT_SEARCH_TIMEOUT_MS",
    "DEFAULT_SETTINGS",
    "EVENT_READ",
    "EVENT_SEARCH",
    "EVENT_TRACE",
    "PROMPT_SECTION",
    "SESSION_SEARCH",
    "SESSION_TRACE",
    "TOOLS",
    "TOOL_MATCHES",
    "TOOL_NAMES",
    "EventReadArgs",
    "EventSearchArgs",
    "EventTraceArgs",
    "SessionSearchArgs",
    "ToolAnnotations",
    "ToolMatch",
    "ToolSettings",
    "ToolSpec",
    "TraceArgs",
    "build_definitions",
    "input_schema",
    "parse_event_read",
    "parse_event_search",
    "parse_event_trace",
    "parse_session_search",
    "parse_trace",
    "tool_spec",
]

A = TypeVar("A")

SESSION_SEARCH = "session_search"
EVENT_SEARCH = "session_event_search"
SESSION_TRACE = "session_trace"
EVENT_TRACE = "session_event_trace"
EVENT_READ = "session_event_read"

PROMPT_SECTION = (
    "Use session_search to find relevant work from prior sessions, or session_event_search to "
    "search earlier events in one session. Search results are cursor-free and "
    "workspace-scoped. Follow a useful hit with session_trace, session_event_trace, or "
    "session_event_read when you need lineage, relationships, or exact data."
)
"""The fixed guidance an agent adds to its system prompt while the tools are mounted."""

DEFAULT_SEARCH_TIMEOUT_MS = 30_000
"""The default deadline of each search call."""

DEFAULT_READ_WINDOW_MAX = 50
"""The ``maximum`` of ``before``/``after`` when the service does not say (SessionQuery's
default ``read_window_max``)."""


@dataclass(frozen=True, slots=True)
class ToolSettings:
    """The toolkit's settings that its definitions tell the model.

    Attributes:
        search_timeout_ms: the deadline of each search call.
        read_window_max: the service's largest ``before``/``after``.
        match: the search tools' mode when the model does not choose one.
    """

    search_timeout_ms: int = DEFAULT_SEARCH_TIMEOUT_MS
    read_window_max: int = DEFAULT_READ_WINDOW_MAX
    match: ToolMatch = TOOLS_MATCH


DEFAULT_SETTINGS = ToolSettings()


@dataclass(frozen=True, slots=True)
class ToolAnnotations:
    """What a tool promises about its effects (MCP's tool annotations).

    Attributes:
        read_only: it changes nothing.
        destructive: it may delete or overwrite.
        idempotent: calling it again with the same arguments has no further effect.
        open_world: it reaches outside the configured history.
    """

    read_only: bool = True
    destructive: bool = False
    idempotent: bool = True
    open_world: bool = False


READ_ONLY = ToolAnnotations()


@dataclass(frozen=True, slots=True)
class ToolSpec(Generic[A]):
    """One model-facing tool.

    Attributes:
        name: the name the model calls.
        description: what the tool does, written for the model.
        schema: builds the JSON Schema of its arguments for given settings (a fresh dict
            each call).
        parse: checks raw arguments against the schema and normalises them into ``A``.
        run: answers with the workflow of one tool execution.
        exclusive: runs alone and under the search deadline (the two searches).
        annotations: what the tool promises about its effects.
    """

    name: str
    description: str
    schema: Callable[[ToolSettings], dict[str, Any]]
    parse: Callable[[Mapping[str, Any]], A]
    run: Callable[[Operations, A], str]
    exclusive: bool = False
    annotations: ToolAnnotations = READ_ONLY

    def input_schema(self, settings: ToolSettings = DEFAULT_SETTINGS) -> dict[str, Any]:
        """A fresh copy of the schema for ``settings``."""
        return self.schema(settings)

    def definition(self, settings: ToolSettings = DEFAULT_SETTINGS) -> ToolDefinition:
        """The tool's :class:`~sessionquery.tools.schemas.ToolDefinition`."""
        return ToolDefinition(
            name=self.name,
            description=self.description,
            input_schema=self.schema(settings),
            parallel_safe=not self.exclusive,
            timeout_ms=settings.search_timeout_ms if self.exclusive else None,
        )


# --- arguments values -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionSearchArgs:
    """Normalised ``session_search`` arguments.

    Attributes:
        query: the trimmed, whitespace-collapsed query.
        session_filters: id, created-at and availability clauses (never cwd or parent: the
            workflow adds those after authorizing).
        parent_ids: requested parent ids in first-seen order without duplicates, or ``None``.
        include_root_sessions: whether parentless sessions join the parent filter.
        event_filters: the event metadata clauses.
        empty: a time range that can match nothing (the search is skipped).
        match: the mode the model chose, or ``None`` for the toolkit's default.
    """

    query: str
    session_filters: tuple[SessionFilter, ...]
    parent_ids: tuple[str, ...] | None
    include_root_sessions: bool
    event_filters: tuple[EventFilter, ...]
    empty: bool
    match: ToolMatch | None = None


@dataclass(frozen=True, slots=True)
class EventSearchArgs:
    """Normalised ``session_event_search`` arguments (seq bounds stay separate because the
    workflow caps ``seq_to`` on the caller's own session)."""

    session_id: str | None
    query: str
    seq_from: int | None
    seq_to: int | None
    other_filters: tuple[EventFilter, ...]
    empty: bool
    match: ToolMatch | None = None


@dataclass(frozen=True, slots=True)
class TraceArgs:
    """Normalised ``session_trace`` arguments."""

    session_id: str | None


@dataclass(frozen=True, slots=True)
class EventTraceArgs:
    """Normalised ``session_event_trace`` arguments."""

    session_id: str | None
    seq: int


@dataclass(frozen=True, slots=True)
class EventReadArgs:
    """Normalised ``session_event_read`` arguments (``before``/``after`` default 0)."""

    session_id: str | None
    seq: int
    before: int
    after: int


# --- session_search -------------------------------------------------------------------------

_SURFACES = list(SURFACE_VALUES)
_OFFERED = [(name, offer) for name in TOOL_MATCHES if (offer := search_mode(name).model)]
"""The modes a model may choose with what it is told of each (:mod:`sessionquery.match_modes`)."""
_QUERY = (
    "What to look for: "
    + ", or ".join(f"{offer.query} (match {name})" for name, offer in _OFFERED)
    + "."
)


def _match(settings: ToolSettings, what: str) -> dict[str, Any]:
    finds = "; ".join(f"{name}: {offer.finds.format(what=what)}" for name, offer in _OFFERED)
    return string(
        f"How to match the query. {finds}. Omit for {settings.match}.",
        TOOL_MATCHES,
    )


def _session_search_schema(settings: ToolSettings) -> dict[str, Any]:
    return object_schema(
        {
            "query": string(_QUERY),
            "match": _match(settings, "sessions"),
            "session_ids": strings("Only search these sessions."),
            "created_at_from": string(f"Sessions created at or after this {ISO_TIMESTAMP}."),
            "created_at_to": string(f"Sessions created at or before this {ISO_TIMESTAMP}."),
            "parent_session_ids": strings("Only sessions whose direct parent is one of these."),
            "include_root_sessions": boolean(
                "Also include sessions without a parent in the parent filter."
            ),
            "availability": strings(
                "Only sessions with at least one of these availabilities.",
                list(AVAILABILITY_VALUES),
            ),
            "event_seq_from": integer("Only match events with seq at or above this.", minimum=0),
            "event_seq_to": integer("Only match events with seq at or below this.", minimum=0),
            "event_time_from": string(f"Only match events at or after this {ISO_TIMESTAMP}."),
            "event_time_to": string(f"Only match events at or before this {ISO_TIMESTAMP}."),
            "event_types": strings("Only match events of these types, e.g. user/message."),
            "event_surfaces": strings(
                "Only match events in these surface states: current (in the model history), "
                "shadowed (replaced, e.g. by compaction) or log-only (never in the history).",
                _SURFACES,
            ),
        },
        ["query"],
    )


def _tool_match(arguments: Mapping[str, Any]) -> ToolMatch | None:
    value = arguments.get("match")
    return next((match for match in TOOL_MATCHES if match == value), None)


def parse_session_search(arguments: Mapping[str, Any]) -> SessionSearchArgs:
    """Check and normalise ``session_search`` arguments.

    Raises:
        SessionQueryError: ``TOOL_INVALID_ARGUMENTS``, ``INVALID_QUERY`` or
            ``INVALID_FILTER`` with a message naming the argument.
    """
    arguments = check_arguments(SESSION_SEARCH, _session_search_schema(DEFAULT_SETTINGS), arguments)
    query = query_text(arguments)
    session_filters: list[SessionFilter] = []
    session_ids = ids("session_ids", arguments)
    if session_ids is not None:
        session_filters.append(IdIn(session_ids))
    created_from, created_to, created_empty = time_range(
        "created_at_from", "created_at_to", arguments
    )
    if (created_from is not None or created_to is not None) and not created_empty:
        session_filters.append(CreatedBetween(created_from, created_to))
    parents = ids("parent_session_ids", arguments)
    availability = non_empty("availability", arguments)
    if availability is not None:
        session_filters.append(AvailabilityIn(availability))
    event_filters: list[EventFilter] = []
    seq_from, seq_to = seq_range("event_seq_from", "event_seq_to", arguments)
    if seq_from is not None or seq_to is not None:
        event_filters.append(SeqBetween(seq_from, seq_to))
    metadata, events_empty = event_metadata(arguments, "event_", "event_surfaces")
    event_filters.extend(metadata)
    return SessionSearchArgs(
        query=query,
        session_filters=tuple(session_filters),
        parent_ids=None if parents is None else tuple(dict.fromkeys(parents)),
        include_root_sessions=bool(arguments.get("include_root_sessions", False)),
        event_filters=tuple(event_filters),
        empty=created_empty or events_empty,
        match=_tool_match(arguments),
    )


# --- session_event_search -------------------------------------------------------------------


def _event_search_schema(settings: ToolSettings) -> dict[str, Any]:
    return object_schema(
        {
            "session_id": string("Session to search; omit to search the current session."),
            "query": string(_QUERY),
            "match": _match(settings, "events"),
            "seq_from": integer("Only events with seq at or above this.", minimum=0),
            "seq_to": integer("Only events with seq at or below this.", minimum=0),
            "time_from": string(f"Only events at or after this {ISO_TIMESTAMP}."),
            "time_to": string(f"Only events at or before this {ISO_TIMESTAMP}."),
            "event_types": strings("Only events of these types, e.g. tool/result."),
            "surfaces": strings(
                "Only events in these surface states: current, shadowed or log-only.", _SURFACES
            ),
        },
        ["query"],
    )


def parse_event_search(arguments: Mapping[str, Any]) -> EventSearchArgs:
    """Check and normalise ``session_event_search`` arguments.

    Raises:
        SessionQueryError: ``TOOL_INVALID_ARGUMENTS``, ``INVALID_QUERY`` or
            ``INVALID_FILTER`` with a message naming the argument.
    """
    arguments = check_arguments(EVENT_SEARCH, _event_search_schema(DEFAULT_SETTINGS), arguments)
    session_id = optional_session_id(arguments)
    query = query_text(arguments)
    seq_from, seq_to = seq_range("seq_from", "seq_to", arguments)
    metadata, empty = event_metadata(arguments, "", "surfaces")
    return EventSearchArgs(
        session_id=session_id,
        query=query,
        seq_from=seq_from,
        seq_to=seq_to,
        other_filters=tuple(metadata),
        empty=empty,
        match=_tool_match(arguments),
    )


# --- session_trace, session_event_trace, session_event_read ---------------------------------


def _trace_schema(_settings: ToolSettings) -> dict[str, Any]:
    return object_schema(
        {"session_id": string("Session to trace; omit to trace the current session.")}
    )


def _event_trace_schema(_settings: ToolSettings) -> dict[str, Any]:
    return object_schema(
        {
            "session_id": string("Session holding the event; omit for the current session."),
            "seq": integer("Sequence number of the event.", minimum=0),
        },
        ["seq"],
    )


def _event_read_schema(settings: ToolSettings) -> dict[str, Any]:
    window = settings.read_window_max
    return object_schema(
        {
            "session_id": string("Session holding the event; omit for the current session."),
            "seq": integer("Sequence number of the event to read.", minimum=0),
            "before": integer(
                "How many preceding events to summarise; omit for none.",
                minimum=0,
                maximum=window,
            ),
            "after": integer(
                "How many following events to summarise; omit for none.",
                minimum=0,
                maximum=window,
            ),
        },
        ["seq"],
    )


def parse_trace(arguments: Mapping[str, Any]) -> TraceArgs:
    """Check and normalise ``session_trace`` arguments.

    Raises:
        SessionQueryError: ``TOOL_INVALID_ARGUMENTS`` naming the argument.
    """
    arguments = check_arguments(SESSION_TRACE, _trace_schema(DEFAULT_SETTINGS), arguments)
    return TraceArgs(session_id=optional_session_id(arguments))


def parse_event_trace(arguments: Mapping[str, Any]) -> EventTraceArgs:
    """Check and normalise ``session_event_trace`` arguments.

    Raises:
        SessionQueryError: ``TOOL_INVALID_ARGUMENTS`` or ``INVALID_FILTER`` naming the
            argument.
    """
    arguments = check_arguments(EVENT_TRACE, _event_trace_schema(DEFAULT_SETTINGS), arguments)
    target = seq("seq", arguments)
    assert target is not None
    return EventTraceArgs(session_id=optional_session_id(arguments), seq=target)


def parse_event_read(arguments: Mapping[str, Any]) -> EventReadArgs:
    """Check and normalise ``session_event_read`` arguments.

    Raises:
        SessionQueryError: ``TOOL_INVALID_ARGUMENTS`` or ``INVALID_FILTER`` naming the
            argument.
    """
    arguments = check_arguments(EVENT_READ, _event_read_schema(DEFAULT_SETTINGS), arguments)
    target = seq("seq", arguments)
    assert target is not None
    return EventReadArgs(
        session_id=optional_session_id(arguments),
        seq=target,
        before=seq("before", arguments) or 0,
        after=seq("after", arguments) or 0,
    )


# --- the records ----------------------------------------------------------------------------

TOOLS: tuple[ToolSpec[Any], ...] = (
    ToolSpec(
        name=SESSION_SEARCH,
        description=(
            "Search prior sessions in your workspace for a question, some words or an exact "
            "phrase (see match). Returns matching sessions, best first, each with its title "
            "and strongest matching event (seq and snippet). Your own current session is never "
            "included. Narrow with the filters when the result cap is reached."
        ),
        schema=_session_search_schema,
        parse=parse_session_search,
        run=lambda ops, args: ops.session_search(args),
        exclusive=True,
    ),
    ToolSpec(
        name=EVENT_SEARCH,
        description=(
            "Search the events of one session in your workspace for a question, some words or "
            "an exact phrase (see match). Returns the matching events, best first, with seq "
            "and snippet. On your current session (the default) the search stops before the "
            "step that makes this call."
        ),
        schema=_event_search_schema,
        parse=parse_event_search,
        run=lambda ops, args: ops.session_event_search(args),
        exclusive=True,
    ),
    ToolSpec(
        name=SESSION_TRACE,
        description=(
            "Show the lineage of one session in your workspace: its ancestors (nearest first) "
            "and its descendants such as forks and subagents, with titles. Sessions outside "
            "your workspace appear only as markers."
        ),
        schema=_trace_schema,
        parse=parse_trace,
        run=lambda ops, args: ops.session_trace(args),
    ),
    ToolSpec(
        name=EVENT_TRACE,
        description=(
            "Show every direct relationship of one event: which event replaced it (e.g. a "
            "compaction), the full replacement chain, the events it replaced, the events it "
            "cites as sources and the later events that cite it."
        ),
        schema=_event_trace_schema,
        parse=parse_event_trace,
        run=lambda ops, args: ops.session_event_trace(args),
    ),
    ToolSpec(
        name=EVENT_READ,
        description=(
            "Read one event in full, unabridged, as JSON, optionally with short summaries of "
            "the raw events just before and after it."
        ),
        schema=_event_read_schema,
        parse=parse_event_read,
        run=lambda ops, args: ops.session_event_read(args),
    ),
)
"""Every tool, in the order the model sees them."""

TOOL_NAMES: tuple[str, ...] = tuple(spec.name for spec in TOOLS)

_BY_NAME: dict[str, ToolSpec[Any]] = {spec.name: spec for spec in TOOLS}


def tool_spec(name: str) -> ToolSpec[Any] | None:
    """The record of tool ``name``, or ``None`` for an unknown name."""
    return _BY_NAME.get(name)


def input_schema(name: str, settings: ToolSettings = DEFAULT_SETTINGS) -> dict[str, Any]:
    """A fresh copy of the JSON Schema of tool ``name`` (``KeyError`` if unknown)."""
    return _BY_NAME[name].input_schema(settings)


def build_definitions(settings: ToolSettings = DEFAULT_SETTINGS) -> list[ToolDefinition]:
    """The definitions of :data:`TOOLS`, in order, with fresh schema copies."""
    return [spec.definition(settings) for spec in TOOLS]
