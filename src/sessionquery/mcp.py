"""The MCP server: the five session tools over stdio, for any MCP client.

A thin adapter (STYLE rule 20) over :class:`~sessionquery.tools.SessionQueryTools`, built on the
official ``mcp`` SDK's low-level :class:`mcp.server.lowlevel.Server` so that tool names,
descriptions and input schemas are exactly :attr:`SessionQueryTools.definitions` and the
model's arguments reach the toolkit unchanged (no coercion, SPEC §8).

Invariants:

* every tool is annotated read-only (``readOnlyHint``), and the toolkit's
  :attr:`~SessionQueryTools.prompt_section` is the server's instructions;
* the caller (workspace and, with ``--session``, identity) is fixed by the operator when the
  server starts, never by the model;
* a tool failure is an ``isError`` result carrying ``CODE: message``, never a protocol error;
* blocking library work runs in worker threads; a cancelled request cancels its token so the
  worker stops at its next check point;
* the search index is opened in the server lifespan and closed when the server stops.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from sessionquery.errors import ErrorCode, SessionQueryError, ToolErrorCode
from sessionquery.persistence import SessionPersistence
from sessionquery.query.cancel import CancelToken
from sessionquery.query.filters import IdIn
from sessionquery.query.service import SessionQuery
from sessionquery.search.sqlite import SqliteSearch
from sessionquery.tools import SessionQueryTools, ToolCaller, ToolDefinition
from sessionquery.tools.boundary import sanitize

__all__ = ["SERVER_NAME", "CallerSpec", "build_server", "resolve_caller", "run_stdio"]

logger = logging.getLogger(__name__)

SERVER_NAME = "sessionquery"
"""The name the server reports to MCP clients."""

_READ_ONLY = types.ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
_FAILED_TEXT = f"{ToolErrorCode.FAILED.value}: session query operation failed"


@dataclass(frozen=True, slots=True)
class CallerSpec:
    """Who the tools act for, as the operator configured it.

    Attributes:
        session_id: the session the server acts as, or ``None``.
        cwd: the caller's workspace (verbatim), or ``None`` (then only the own session is
            readable and cross-session search is unavailable).
    """

    session_id: str | None
    cwd: str | None


@dataclass(frozen=True, slots=True)
class _State:
    query: SessionQuery
    tools: SessionQueryTools


def resolve_caller(query: SessionQuery, *, cwd: str | None, session_id: str | None) -> CallerSpec:
    """The caller for ``--cwd`` or ``--session``: a session's recorded cwd becomes the workspace.

    Raises:
        SessionQueryError: ``SESSION_NOT_FOUND`` when ``session_id`` is not in the sources.
    """
    if session_id is None:
        return CallerSpec(session_id=None, cwd=cwd)
    records = query.filter_sessions([IdIn((session_id,))])
    if not records:
        raise SessionQueryError(
            ErrorCode.SESSION_NOT_FOUND,
            f"--session {session_id!r} names no session in the selected sources",
        )
    return CallerSpec(session_id=session_id, cwd=records[0].header.cwd)


def _tool_caller(query: SessionQuery, spec: CallerSpec) -> ToolCaller:
    """The caller for one tool call; a session's current step is its latest ``step/start``.

    Computed per call because the session may still be recording in another process.
    """
    if spec.session_id is None:
        return ToolCaller(cwd=spec.cwd)
    step: int | None = None
    for event in reversed(query.list_events(spec.session_id)):
        if event.type == "step/start":
            step = event.seq
            break
    return ToolCaller(session_id=spec.session_id, cwd=spec.cwd, current_step_seq=step)


def _tool(definition: ToolDefinition) -> types.Tool:
    return types.Tool(
        name=definition.name,
        description=definition.description,
        input_schema=definition.input_schema,
        annotations=_READ_ONLY,
    )


def _text_result(text: str, *, is_error: bool) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], is_error=is_error
    )


def _call(state: _State, spec: CallerSpec, name: str, arguments: Any, token: CancelToken) -> Any:
    try:
        caller = _tool_caller(state.query, spec)
    except SessionQueryError as error:
        # Read outside the toolkit, so sanitize here too: the raw message may hold a path.
        logger.warning("reading the acting session failed: %r", error, exc_info=error)
        raise sanitize(error) from None
    return state.tools.call(name, arguments, caller, cancel=token)


def build_server(open_query: Callable[[], SessionQuery], caller: CallerSpec) -> Server[_State]:
    """The MCP server; ``open_query`` runs in the lifespan and opens the indexed service.

    Args:
        open_query: builds the :class:`SessionQuery` (with its search index); it is closed
            when the server stops.
        caller: the operator-configured caller.
    """

    @asynccontextmanager
    async def lifespan(_server: Server[_State]) -> AsyncIterator[_State]:
        query = await anyio.to_thread.run_sync(open_query)
        try:
            yield _State(query=query, tools=SessionQueryTools(query))
        finally:
            await anyio.to_thread.run_sync(query.close)

    async def list_tools(
        ctx: ServerRequestContext[_State], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[_tool(d) for d in ctx.lifespan_context.tools.definitions]
        )

    async def call_tool(
        ctx: ServerRequestContext[_State], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        token = CancelToken()
        work = partial(_call, ctx.lifespan_context, caller, params.name, params.arguments, token)
        try:
            result = await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            token.cancel()
            raise
        except SessionQueryError as error:
            return _text_result(f"{error.code.value}: {error.message}", is_error=True)
        except Exception:
            logger.exception("tool %s failed", params.name)
            return _text_result(_FAILED_TEXT, is_error=True)
        return _text_result(result.text, is_error=result.is_error)

    return Server(
        SERVER_NAME,
        version=_version(),
        instructions=_prompt_section(),
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sessionquery")
    except PackageNotFoundError:
        return "0"


def _prompt_section() -> str:
    # A constant of the toolkit (byte-identical across instances): read it from a toolkit over
    # an empty service, so the server can announce it before the lifespan opens the index.
    with SessionQuery() as query:
        return SessionQueryTools(query).prompt_section


def run_stdio(
    *,
    persistence: SessionPersistence,
    index_path: Path,
    cwd: str | None,
    session_id: str | None,
    postgres: str | None = None,
) -> None:
    """Serve the tools over stdin/stdout until the client disconnects.

    The caller is resolved before serving, so a bad ``--session`` fails fast.

    Raises:
        SessionQueryError: ``SESSION_NOT_FOUND`` for an unknown ``session_id``;
            ``INDEX_FAILED`` when the index cannot be opened (e.g. a foreign database).
    """
    with SessionQuery(persistence=persistence) as probe:
        caller = resolve_caller(probe, cwd=cwd, session_id=session_id)

    def open_query() -> SessionQuery:
        if postgres:  # the shared index lives in the same database as the store
            from sessionquery.search.postgres import PostgresSearch

            return SessionQuery(persistence=persistence, search=PostgresSearch(postgres))
        return SessionQuery(persistence=persistence, search=SqliteSearch(index_path))

    server = build_server(open_query, caller)

    async def serve() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(serve)
    except BaseExceptionGroup as group:
        expected = _first_expected(group)
        if expected is None:
            raise
        raise expected from group


def _first_expected(group: BaseExceptionGroup[BaseException]) -> SessionQueryError | None:
    """The first ``SessionQueryError`` inside nested task-group errors, if any."""
    for error in group.exceptions:
        if isinstance(error, SessionQueryError):
            return error
        if isinstance(error, BaseExceptionGroup):
            found = _first_expected(error)
            if found is not None:
                return found
    return None
