"""Reading this machine's sessions for a push (:mod:`.push`).

:func:`read_local` turns one session of the (redacted) source into what a push writes: its
events' wire lines, its team workspace and its index documents, tokenised. :func:`readers`
runs it over the sessions to push, in this process (``jobs=1``) or in ``jobs`` reader
processes forked from this one, which is how a push uses more than one core (reading,
redacting and tokenising are per-byte Python work; the database writes stay in this process).

Invariants:

* The sessions come back in the order they were asked for, whatever the number of readers;
  at most ``2 * jobs`` sessions are read ahead of the one being consumed.
* A reader process reads the source as the parent held it when the readers started (a
  forked copy); nothing it does is visible to the parent except the results it returns. It
  never writes the source, and importer caches opened by the parent are reopened in the child
  (:mod:`sessionquery.sources._cache`), never shared.
* A session that cannot be read yields one sentence saying why, in its place; one bad
  session never stops the others.
* Reader processes never outlive the process that forked them: each asks the kernel to kill
  it when its parent dies (Linux: ``PR_SET_PDEATHSIG``) and, everywhere, watches its parent
  and exits when it is gone. A push killed with SIGKILL leaves no reader behind holding its
  pipes.
* Readers are forked only where the ``fork`` start method exists (Linux, macOS); elsewhere a
  push reads in this process.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final

from sessionquery.errors import ErrorCode, PersistenceError, SessionQueryError
from sessionquery.model import SessionEvent, SessionHeader, SurfaceError
from sessionquery.persistence.base import PersistedSession, SessionPersistence
from sessionquery.persistence.postgres._schema import check_id
from sessionquery.team.rows import Docs, OwnDocs, documents, event_lines, own_docs
from sessionquery.team.workspace import team_workspace

__all__ = ["MAX_JOBS", "Local", "default_jobs", "read_local", "readers"]

MAX_JOBS: Final = 16
"""The most reader processes a push starts."""

Wanted = tuple[PersistedSession, bool]
"""A session to read and whether its documents are kept (a session pushed before may need
them to find what changed; a new one needs only its rows)."""
Read = Callable[[Iterable[Wanted]], Iterator["Local | str"]]


@dataclass(slots=True)
class Local:
    """One session as read here, ready to be written.

    Attributes:
        events: the events, when read in this process (a reader process leaves them out: a
            push that needs them parses ``lines`` again).
        docs: the log's index documents; ``None`` when they were not kept (``own`` holds
            them tokenised).
        fold_error: why the log does not fold (then ``docs`` and ``own`` are ``None``).
        own: the ``sqi_docs`` rows of the documents as ``COPY`` text, with the statistics
            they add (formatted by the reader, so the writer only forwards them).
    """

    entry: PersistedSession
    header: SessionHeader
    inherited: int
    lines: list[str]
    workspace: str | None
    size: int
    events: list[SessionEvent] | None
    docs: Docs | None
    fold_error: str | None
    own: OwnDocs | None
    ws: int | None = None
    digest: str = ""
    anchor: str = ""


class _Workspaces:
    """Each cwd's team workspace, computed once per cwd."""

    def __init__(self, machine: str) -> None:
        self.machine = machine
        self._known: dict[str | None, str | None] = {}

    def __call__(self, cwd: str | None) -> str | None:
        if cwd not in self._known:
            self._known[cwd] = team_workspace(cwd, self.machine)
        return self._known[cwd]


def read_local(
    source: SessionPersistence,
    entry: PersistedSession,
    workspace_of: Callable[[str | None], str | None],
    *,
    keep_events: bool = True,
    keep_docs: bool = True,
) -> Local | str:
    """One session read, redacted as ``source`` gives it, and tokenised; or why it could not
    be read (one sentence)."""
    sid = entry.header.id
    try:
        check_id(sid)
        with source.open_read(sid) as handle:
            header, inherited = handle.header, handle.inherited_event_count
            events = handle.read()
    except (PersistenceError, OSError, ValueError, SessionQueryError) as exc:
        return f"session {sid!r} could not be read: {exc}"
    lines = event_lines(events)
    size = sum(len(line.encode("utf-8", "surrogatepass")) + 1 for line in lines)
    docs: Docs | None = None
    own: OwnDocs | None = None
    fold_error: str | None = None
    try:
        docs = documents(events)
    except SurfaceError as exc:
        fold_error = str(exc)
    else:
        own = own_docs(sid, docs)
    return Local(
        entry,
        header,
        inherited,
        lines,
        workspace_of(header.cwd),
        size,
        list(events) if keep_events else None,
        docs if keep_docs else None,
        fold_error,
        own,
    )


def default_jobs() -> int:
    """Reader processes for a push when none are asked for: the cores, at most 4."""
    return max(1, min(4, os.cpu_count() or 1))


@contextmanager
def readers(source: SessionPersistence, machine: str, jobs: int = 1) -> Iterator[Read]:
    """A function reading sessions in order with ``jobs`` readers (see the module).

    Raises:
        ValueError: ``jobs`` is not between 1 and :data:`MAX_JOBS`.
        SessionQueryError: ``PERSISTENCE_FAILED`` when a reader process died.
    """
    if not 1 <= jobs <= MAX_JOBS:
        raise ValueError(f"jobs must be between 1 and {MAX_JOBS}, not {jobs}")
    if jobs == 1 or "fork" not in multiprocessing.get_all_start_methods():
        yield _in_process(source, machine)
        return
    _FORKED.append((source, _Workspaces(machine)))
    try:
        pool = ProcessPoolExecutor(
            jobs,
            mp_context=multiprocessing.get_context("fork"),
            initializer=_reader_started,
            initargs=(os.getpid(),),
        )
        # The first submit forks every reader (before any thread of the pool starts).
        pool.submit(_ready).result()
    finally:
        _FORKED.clear()
    try:
        yield _forked(pool, jobs)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _in_process(source: SessionPersistence, machine: str) -> Read:
    workspace_of = _Workspaces(machine)

    def read(wanted: Iterable[Wanted]) -> Iterator[Local | str]:
        for entry, _keep_docs in wanted:
            yield read_local(source, entry, workspace_of)

    return read


def _forked(pool: ProcessPoolExecutor, jobs: int) -> Read:
    def read(wanted: Iterable[Wanted]) -> Iterator[Local | str]:
        ahead: deque[Future[Local | str]] = deque()
        try:
            for entry, keep_docs in wanted:
                ahead.append(pool.submit(_read_forked, entry, keep_docs))
                if len(ahead) > 2 * jobs:
                    yield _result(ahead.popleft())
            while ahead:
                yield _result(ahead.popleft())
        finally:
            for future in ahead:
                future.cancel()

    return read


def _result(future: Future[Local | str]) -> Local | str:
    try:
        return future.result()
    except BrokenProcessPool as exc:
        raise SessionQueryError(
            ErrorCode.PERSISTENCE_FAILED, f"push: a reader process died ({exc})"
        ) from None


_FORKED: list[tuple[SessionPersistence, _Workspaces]] = []
"""What the reader processes read: held only while they are forked (each child keeps its
copy)."""


def _reader_started(parent: int) -> None:
    """In a new reader process: end with the parent (see the module)."""
    if sys.platform == "linux":
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the request above
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


_PR_SET_PDEATHSIG: Final = 1


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def _ready() -> bool:
    return bool(_FORKED)


def _read_forked(entry: PersistedSession, keep_docs: bool) -> Local | str:
    assert _FORKED, "a push reader runs only in a forked reader process"
    source, workspace_of = _FORKED[0]
    return read_local(source, entry, workspace_of, keep_events=False, keep_docs=keep_docs)
