"""``SessionQueryTools``: the five read-only tools, ready to mount in any agent loop.

Invariants:

* :meth:`SessionQueryTools.call` never raises for a tool failure: argument, authorization and
  service errors come back as ``ToolResult(is_error=True, code=..., text="<CODE>: <message>")``.
  The only exception that leaves it is the caller's own cancellation (``SESSION_QUERY_ABORTED``
  re-raised unchanged) and ``TypeError`` for a caller that is not a :class:`ToolCaller`;
* the two search tools run one at a time (an internal lock), even when an agent loop runs
  tool calls concurrently, and each runs under a deadline of ``search_timeout_ms`` combined
  with the caller's token (the wait for the lock counts against it);
* definitions, schemas and the prompt section are constants: byte-identical across calls.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sessionquery.errors import ErrorCode, SessionQueryError, ToolErrorCode
from sessionquery.query.cancel import CancelToken
from sessionquery.tools.access import EXACT_CWD, ToolCaller, WorkspaceRule
from sessionquery.tools.boundary import (
    SEARCH_TIMEOUT_MESSAGE,
    TOOL_FAILED_MESSAGE,
    DeadlineToken,
    ServiceBoundary,
    is_caller_cancellation,
)
from sessionquery.tools.operations import Operations, QueryService
from sessionquery.tools.schemas import ToolDefinition, strict_schema
from sessionquery.tools.specs import (
    DEFAULT_READ_WINDOW_MAX,
    DEFAULT_SEARCH_TIMEOUT_MS,
    PROMPT_SECTION,
    TOOL_MATCHES,
    TOOL_NAMES,
    ToolMatch,
    ToolSettings,
    ToolSpec,
    build_definitions,
    tool_spec,
)
from sessionquery.tools.validation import parse_arguments

__all__ = ["DEFAULT_SEARCH_TIMEOUT_MS", "MAX_SEARCH_TIMEOUT_MS", "SessionQueryTools", "ToolResult"]

logger = logging.getLogger(__name__)

MAX_SEARCH_TIMEOUT_MS = 2_147_483_647
"""The largest ``search_timeout_ms`` accepted (a signed 32-bit millisecond count)."""

_LOCK_POLL_SECONDS = 0.05


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of one tool call, as one plain-text block for the model.

    Attributes:
        text: the rendered result, or ``"<CODE>: <message>"`` for an error.
        is_error: whether the call failed.
        code: the error code (a ``SESSION_QUERY_*`` string) when ``is_error``, else ``None``.
    """

    text: str
    is_error: bool = False
    code: str | None = None


def _positive_int(value: object, name: str, maximum: int) -> int:
    if type(value) is not int or not 1 <= value <= maximum:
        raise SessionQueryError(
            ErrorCode.INVALID_CONFIG,
            f"{name} must be an integer between 1 and {maximum}, not {value!r}",
        )
    return value


class SessionQueryTools:
    """The five model-facing, read-only session tools over a query service.

    Args:
        query: the :class:`sessionquery.query.SessionQuery` to read from (its search backend
            serves the two search tools).
        max_search_results: the most hits one search call returns; when more exist the
            output ends with a sentence asking the model to narrow the query.
        search_timeout_ms: the deadline of each search call, in milliseconds.
        match: how the two search tools match a query when the model does not say:
            ``"relevance"`` (any of its words, best answers first) or ``"phrase"`` (the
            literal phrase; a phrase of several words that finds nothing is answered with
            the sessions holding all of its words).
        workspaces: which sessions a caller's workspace holds; default the exact-cwd rule of
            SPEC §8 (a team database's server passes :class:`sessionquery.team.TeamWorkspaces`).

    Raises:
        SessionQueryError: ``SESSION_QUERY_INVALID_CONFIG`` for a non-integer or
            out-of-range setting, or another ``match``.
    """

    def __init__(
        self,
        query: QueryService,
        *,
        max_search_results: int = 100,
        search_timeout_ms: int = DEFAULT_SEARCH_TIMEOUT_MS,
        match: ToolMatch = "relevance",
        workspaces: WorkspaceRule | None = None,
    ) -> None:
        self._rule = EXACT_CWD if workspaces is None else workspaces
        self._max = _positive_int(max_search_results, "max_search_results", 2**53 - 1)
        self._timeout_ms = _positive_int(
            search_timeout_ms, "search_timeout_ms", MAX_SEARCH_TIMEOUT_MS
        )
        self._settings = ToolSettings(self._timeout_ms, _window_max(query), _tool_match(match))
        self._query = query
        self._search_lock = threading.Lock()

    @property
    def definitions(self) -> list[ToolDefinition]:
        """The five tool definitions (a fresh list with fresh schema copies each time)."""
        return build_definitions(self._settings)

    @property
    def prompt_section(self) -> str:
        """Fixed guidance to add to the system prompt while the tools are mounted."""
        return PROMPT_SECTION

    def to_openai_tools(self, *, strict: bool = False) -> list[dict[str, Any]]:
        """The definitions as OpenAI ``tools`` entries (Chat Completions shape).

        Args:
            strict: for OpenAI's strict mode: each entry says ``"strict": true`` and its
                schema lists every property in ``required``, the optional ones nullable
                (``null`` for an optional argument means omitted, so :meth:`call` accepts
                what a strict model sends).
        """
        entries: list[dict[str, Any]] = []
        for d in self.definitions:
            function: dict[str, Any] = {"name": d.name, "description": d.description}
            if strict:
                function["parameters"] = strict_schema(d.input_schema)
                function["strict"] = True
            else:
                function["parameters"] = d.input_schema
            entries.append({"type": "function", "function": function})
        return entries

    def to_anthropic_tools(self) -> list[dict[str, Any]]:
        """The definitions as Anthropic Messages ``tools`` entries."""
        return [
            {"name": d.name, "description": d.description, "input_schema": d.input_schema}
            for d in self.definitions
        ]

    def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None,
        caller: ToolCaller,
        *,
        cancel: CancelToken | None = None,
    ) -> ToolResult:
        """Run tool ``name`` with the model's ``arguments`` on behalf of ``caller``.

        Args:
            name: one of the five tool names.
            arguments: the model's arguments, as a mapping or as the JSON text an SDK hands
                over (``None`` or an empty text mean no arguments).
            caller: who is calling; set by the agent loop, never by the model.
            cancel: the caller's cancellation token.

        Returns:
            The rendered result, or an error result carrying the error code.

        Raises:
            SessionQueryError: ``SESSION_QUERY_ABORTED``, unchanged, when ``cancel`` was
                cancelled or expired during the call.
            TypeError: when ``caller`` is not a :class:`ToolCaller`.
        """
        if not isinstance(caller, ToolCaller):
            raise TypeError(f"caller must be a ToolCaller, not {type(caller).__name__}")
        spec = tool_spec(name)
        if spec is None:
            return _error(
                ToolErrorCode.UNKNOWN_TOOL,
                f"unknown tool {name!r}; available tools: {', '.join(TOOL_NAMES)}",
            )
        try:
            parsed = spec.parse(parse_arguments({} if arguments is None else arguments))
            if spec.exclusive:
                text = self._run_search(spec, parsed, caller, cancel)
            else:
                ops = self._operations(caller, ServiceBoundary(cancel, cancel))
                text = spec.run(ops, parsed)
        except SessionQueryError as exc:
            if is_caller_cancellation(exc, cancel):
                raise
            return _error(exc.code, exc.message)
        except Exception:
            logger.exception("session query tool %s failed", name)
            return _error(ToolErrorCode.FAILED, TOOL_FAILED_MESSAGE)
        return ToolResult(text)

    def _run_search(
        self,
        spec: ToolSpec[Any],
        parsed: object,
        caller: ToolCaller,
        cancel: CancelToken | None,
    ) -> str:
        token = DeadlineToken(self._timeout_ms, cancel)
        ops = self._operations(caller, ServiceBoundary(cancel, token))
        with self._search_slot(token, cancel):
            return spec.run(ops, parsed)

    def _operations(self, caller: ToolCaller, boundary: ServiceBoundary) -> Operations:
        return Operations(
            self._query, caller, boundary, self._max, match=self._settings.match, rule=self._rule
        )

    @contextmanager
    def _search_slot(self, token: CancelToken, cancel: CancelToken | None) -> Iterator[None]:
        """Hold the search lock; waiting counts against the search deadline."""
        while not self._search_lock.acquire(timeout=_LOCK_POLL_SECONDS):
            if token.expired:
                if cancel is not None:
                    cancel.check()
                raise SessionQueryError(ErrorCode.ABORTED, SEARCH_TIMEOUT_MESSAGE)
        try:
            yield
        finally:
            self._search_lock.release()


def _tool_match(value: object) -> ToolMatch:
    for match in TOOL_MATCHES:
        if value == match and type(value) is str:
            return match
    raise SessionQueryError(
        ErrorCode.INVALID_CONFIG,
        f"match must be one of {', '.join(TOOL_MATCHES)}, not {value!r}",
    )


def _window_max(query: QueryService) -> int:
    """The service's ``read_window_max`` (the ``maximum`` of ``before``/``after``)."""
    value = query.read_window_max
    return value if type(value) is int and value >= 0 else DEFAULT_READ_WINDOW_MAX


def _error(code: ErrorCode | ToolErrorCode, message: str) -> ToolResult:
    return ToolResult(text=f"{code.value}: {message}", is_error=True, code=code.value)
