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
* the search index is opened in the server lifespan and closed when the server stops; the
  server answers at once while a background thread brings the index up to date (progress is
  logged on stderr), and a search during that build is answered by the index (within its
  deadline: results, or the retryable ``INDEX_BUILDING`` message);
* a server whose configuration is wrong (no sources, unknown ``--session``, unreadable index)
  still completes the handshake, lists the tools and answers every tool call with the one-line
  reason, which it also logs on stderr.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from sessionquery.app import AmbiguousId, App, SessionIds
from sessionquery.errors import ErrorCode, SessionQueryError, ToolErrorCode
from sessionquery.query.cancel import CancelToken
from sessionquery.query.service import SessionQuery
from sessionquery.tools import SessionQueryTools, ToolCaller, ToolDefinition
from sessionquery.tools.access import WorkspaceRule
from sessionquery.tools.boundary import sanitize
from sessionquery.tools.specs import PROMPT_SECTION, ToolAnnotations, build_definitions, tool_spec

if TYPE_CHECKING:
    from sessionquery.search.postgres import PostgresSearch
    from sessionquery.search.sqlite import SqliteSearch

__all__ = [
    "SERVER_NAME",
    "CallerSpec",
    "IndexBuilder",
    "build_server",
    "model_reason",
    "resolve_caller",
    "run_stdio",
]

logger = logging.getLogger(__name__)

SERVER_NAME = "sessionquery"
"""The name the server reports to MCP clients."""

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
    """What the lifespan opened: the service and its tools, or the configuration failure."""

    query: SessionQuery | None
    tools: SessionQueryTools | None
    failure: SessionQueryError | None = None

    @property
    def definitions(self) -> list[ToolDefinition]:
        """The tools' definitions (the default settings' when misconfigured)."""
        if self.tools is None:
            return build_definitions()
        return self.tools.definitions


_PROGRESS_EVERY = 5.0
"""Seconds between two progress lines of a background index build."""


class IndexBuilder:
    """Brings the search index up to date in a background thread, logging progress.

    Args:
        update: runs one reconciliation, ``update(cancel, progress)``.
        interval: seconds between two progress log lines.
    """

    def __init__(
        self,
        update: Callable[[CancelToken, Callable[[int, int], None]], object],
        *,
        interval: float = _PROGRESS_EVERY,
    ) -> None:
        self._update = update
        self._interval = interval
        self._token = CancelToken()
        self._last = 0.0
        self._thread = threading.Thread(target=self._run, name="sessionquery-index", daemon=True)

    def start(self) -> None:
        """Start building."""
        self._thread.start()

    def wait(self, timeout: float) -> bool:
        """Wait (bounded) for the build to end; true when it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def stop(self, timeout: float = 5.0) -> None:
        """Ask the build to stop and wait (bounded) for it."""
        self._token.cancel()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _progress(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self._last < self._interval:
            return
        self._last = now
        logger.info("indexing: %d of %d sessions", done, total)

    def _run(self) -> None:
        started = time.monotonic()
        logger.info("bringing the search index up to date in the background")
        try:
            self._update(self._token, self._progress)
        except SessionQueryError as error:
            if error.code is not ErrorCode.ABORTED:
                logger.warning("the search index build stopped: %s", error)
            return
        except Exception:  # the thread's top level: a failed build must not end the server
            logger.exception("the search index build failed")
            return
        logger.info("the search index is up to date (%.1f s)", time.monotonic() - started)


def resolve_caller(query: SessionQuery, *, cwd: str | None, session_id: str | None) -> CallerSpec:
    """The caller for ``--cwd`` or ``--session``: a session's recorded cwd becomes the workspace.

    ``session_id`` may be a short id or any unique start of an id, as everywhere on the
    command line (:class:`sessionquery.app.SessionIds`).

    Raises:
        SessionQueryError: ``SESSION_NOT_FOUND`` when ``session_id`` names no session;
            ``INVALID_CONFIG`` when it starts several ids.
    """
    if session_id is None:
        return CallerSpec(session_id=None, cwd=cwd)
    records = {record.id: record for record in query.list_sessions()}
    try:
        found = SessionIds.of(records.values()).resolve(session_id)
    except AmbiguousId as error:
        raise SessionQueryError(ErrorCode.INVALID_CONFIG, f"--session {error.message}") from None
    except SessionQueryError:
        raise SessionQueryError(
            ErrorCode.SESSION_NOT_FOUND,
            f"--session {session_id!r} names no session in the selected sources",
        ) from None
    return CallerSpec(session_id=found, cwd=records[found].header.cwd)


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


def _annotations(hints: ToolAnnotations) -> types.ToolAnnotations:
    return types.ToolAnnotations(
        read_only_hint=hints.read_only,
        destructive_hint=hints.destructive,
        idempotent_hint=hints.idempotent,
        open_world_hint=hints.open_world,
    )


def _tool(definition: ToolDefinition) -> types.Tool:
    spec = tool_spec(definition.name)
    assert spec is not None
    return types.Tool(
        name=definition.name,
        description=definition.description,
        input_schema=definition.input_schema,
        annotations=_annotations(spec.annotations),
    )


def _text_result(text: str, *, is_error: bool) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], is_error=is_error
    )


def _call(state: _State, spec: CallerSpec, name: str, arguments: Any, token: CancelToken) -> Any:
    query, tools = state.query, state.tools
    assert query is not None and tools is not None
    try:
        caller = _tool_caller(query, spec)
    except SessionQueryError as error:
        # Read outside the toolkit, so sanitize here too: the raw message may hold a path.
        logger.warning("reading the acting session failed: %r", error, exc_info=error)
        raise sanitize(error) from None
    return tools.call(name, arguments, caller, cancel=token)


def build_server(
    open_query: Callable[[], SessionQuery],
    caller: CallerSpec,
    *,
    failure: SessionQueryError | None = None,
    warm: Callable[[SessionQuery], IndexBuilder | None] | None = None,
    workspaces: Callable[[], WorkspaceRule | None] | None = None,
) -> Server[_State]:
    """The MCP server; ``open_query`` runs in the lifespan and opens the indexed service.

    Args:
        open_query: builds the :class:`SessionQuery` (with its search index); it is closed
            when the server stops.
        caller: the operator-configured caller.
        failure: a configuration error: the server then answers every tool call with it.
        warm: given the opened service, starts a background index build (stopped with the
            server), or returns ``None``.
        workspaces: gives the tools' workspace rule (``None``: the exact cwd), called once
            the service is open.
    """

    @asynccontextmanager
    async def lifespan(_server: Server[_State]) -> AsyncIterator[_State]:
        problem = failure
        query: SessionQuery | None = None
        if problem is None:
            try:
                query = await anyio.to_thread.run_sync(open_query)
            except SessionQueryError as error:
                problem = error
        if query is None:
            assert problem is not None
            logger.error(
                "misconfigured (%s); every tool call will answer: %s",
                _one_line(problem),
                model_reason(problem),
            )
            yield _State(query=None, tools=None, failure=problem)
            return
        rule = await anyio.to_thread.run_sync(workspaces) if workspaces is not None else None
        builder = warm(query) if warm is not None else None
        try:
            yield _State(query=query, tools=SessionQueryTools(query, workspaces=rule))
        finally:
            if builder is not None:
                await anyio.to_thread.run_sync(builder.stop)
            await anyio.to_thread.run_sync(query.close)

    async def list_tools(
        ctx: ServerRequestContext[_State], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_tool(d) for d in ctx.lifespan_context.definitions])

    async def call_tool(
        ctx: ServerRequestContext[_State], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        state = ctx.lifespan_context
        if state.failure is not None:
            return _text_result(model_reason(state.failure), is_error=True)
        token = CancelToken()
        work = partial(_call, state, caller, params.name, params.arguments, token)
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
        instructions=PROMPT_SECTION,
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _one_line(error: SessionQueryError) -> str:
    return " ".join(f"{error.code.value}: {error.message}".split())


# libpq's reasons for a failed connection, as fixed sentences: the model learns why, never
# where (host, port, socket path or connection string stay in the server's log).
_DATABASE_REASONS = (
    ("connection refused", "the database server refused the connection"),
    ("no such file or directory", "no database server is listening on the local socket"),
    ("timeout expired", "the connection to the database server timed out"),
    ("timed out", "the connection to the database server timed out"),
    ("could not translate host name", "the database host name could not be resolved"),
    ("failed to resolve host", "the database host name could not be resolved"),
    ("name or service not known", "the database host name could not be resolved"),
    ("authentication failed", "the database refused the credentials"),
    ("no password supplied", "the database asked for a password and none was configured"),
    ("does not exist", "the database or role named in the configuration does not exist"),
    ("permission denied", "the database refused access"),
)


def _database_error(error: BaseException) -> BaseException | None:
    """The PostgreSQL driver's error in ``error``'s cause chain, if any."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if type(current).__module__.split(".")[0] == "psycopg":
            return current
        current = current.__cause__ or current.__context__
    return None


def model_reason(problem: SessionQueryError) -> str:
    """The one line a misconfigured server answers every tool call with: ``CODE: reason``.

    A problem caused by the PostgreSQL driver (a database that cannot be reached or opened)
    is answered with a fixed sentence naming the reason only; host, port, socket path and
    connection string never reach the model (the server's log on stderr has them). Any other
    problem keeps its message.
    """
    driver = _database_error(problem)
    if driver is None:
        return _one_line(problem)
    detail = str(driver).lower()
    reason = next(
        (sentence for marker, sentence in _DATABASE_REASONS if marker in detail),
        "the database could not be opened",
    )
    return f"{problem.code.value}: {reason}; the server's log on stderr has the details"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sessionquery")
    except PackageNotFoundError:
        return "0"


def _log_problems(app: App) -> None:
    try:
        count = len(app.problems())
    except Exception:  # a diagnostic summary never stops the server
        logger.debug("counting the sources' problems failed", exc_info=True)
        return
    if count:
        logger.warning(
            "%d problems reading the session sources (run 'sessionquery sources' to see them)",
            count,
        )


def _log_to_stderr() -> None:
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("sessionquery mcp: %(message)s"))
        root.addHandler(handler)
    logging.getLogger("sessionquery").setLevel(logging.INFO)


def run_stdio(
    app: App | None,
    *,
    cwd: str | None,
    session_id: str | None,
    problem: SessionQueryError | None = None,
) -> None:
    """Serve the tools over stdin/stdout until the client disconnects.

    A configuration problem never stops the server: ``problem`` (or sources that cannot be
    opened, an unknown ``session_id``, or an index that cannot be opened) is logged on stderr
    and becomes the answer to every tool call, so the client can show why.

    Args:
        app: the composition root whose sources and index are served (``None`` only with
            ``problem``).
        cwd: the caller's workspace.
        session_id: the session the server acts as.
        problem: a configuration error found before serving.
    """
    _log_to_stderr()
    caller = CallerSpec(session_id=session_id, cwd=cwd)
    if problem is None:
        try:
            if app is None:
                raise SessionQueryError(ErrorCode.INVALID_CONFIG, "no sources were configured")
            with app.service() as probe:
                caller = resolve_caller(probe, cwd=cwd, session_id=session_id)
        except SessionQueryError as error:
            problem = error
    search: list[SqliteSearch | PostgresSearch] = []

    def open_query() -> SessionQuery:
        assert app is not None
        backend = app.open_index()
        search.append(backend)
        return app.service(backend)

    def warm(query: SessionQuery) -> IndexBuilder:
        assert app is not None
        backend = search[-1]

        def update(token: CancelToken, progress: Callable[[int, int], None]) -> object:
            result = backend.update(query.corpus, cancel=token, progress=progress)
            _log_problems(app)
            return result

        builder = IndexBuilder(update)
        builder.start()
        return builder

    server = build_server(
        open_query,
        caller,
        failure=problem,
        warm=warm,
        workspaces=app.workspaces if app is not None else None,
    )

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
