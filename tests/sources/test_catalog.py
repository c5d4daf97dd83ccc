"""The importers' common body (``sources/_catalog.py``): what it answers while a listing runs.

A first listing of a large history parses every transcript while it holds the source, for
minutes. A unit store whose ``scan`` waits at a gate holds a listing open for as long as a
test needs (real files, a real catalog; only the moment is chosen).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from cli_support import CLAUDE_ID, make_agent_home
from sessionquery.query.cancel import CancelToken
from sessionquery.query.service import SessionQuery
from sessionquery.search.sqlite import SqliteSearch
from sessionquery.sources import ClaudeCodeSource, Problem
from sessionquery.sources.units import Unit, UnitStore

T = TypeVar("T")

WAIT_S = 20.0
"""A hang guard: how long a thread may take before the test calls it stuck."""


class _Gated:
    """A unit store that serves ``inner``'s units, its ``scan`` waiting for ``gate`` (after
    setting ``entered``); with ``archived`` it is archive-backed and says every unit it scanned
    came from the archive."""

    def __init__(self, inner: UnitStore, *, archived: bool) -> None:
        self._inner = inner
        self._archived = archived
        self._served: frozenset[str] = frozenset()
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()

    @property
    def location(self) -> Path:
        return self._inner.location

    def fingerprint(self) -> str | None:
        return self._inner.fingerprint()

    def scan(self) -> tuple[list[Unit], list[Problem]]:
        self.entered.set()
        assert self.gate.wait(WAIT_S)
        units, problems = self._inner.scan()
        if self._archived:
            self._served = frozenset(unit.key for unit in units)
        return units, problems

    def stat(self, key: str) -> Unit | None:
        return self._inner.stat(key)

    def read(self, key: str, max_bytes: int) -> tuple[bytes, Unit]:
        return self._inner.read(key, max_bytes)

    def where(self, key: str) -> str:
        return self._inner.where(key)


class _ArchiveGated(_Gated):
    def served(self) -> frozenset[str]:
        return self._served


def _gated_source(home: Path, *, archived: bool) -> tuple[ClaudeCodeSource, _Gated]:
    make_agent_home(home)
    source = ClaudeCodeSource(home / ".claude" / "projects")
    kind = _ArchiveGated if archived else _Gated
    gated = kind(source.unit_store, archived=archived)
    source.use_units(gated)
    return source, gated


def _in_thread(target: Callable[[], T]) -> tuple[threading.Thread, list[T]]:
    out: list[T] = []

    def run() -> None:
        out.append(target())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


@pytest.mark.parametrize("archived", [False, True])
def test_archived_ids_answer_at_once_while_a_listing_holds_the_source(
    tmp_path: Path, archived: bool
) -> None:
    source, gated = _gated_source(tmp_path, archived=archived)
    source.list()
    before = source.archived_ids()
    assert before == (frozenset({CLAUDE_ID}) if archived else frozenset())
    gated.gate.clear()
    gated.entered.clear()
    lister, _listed = _in_thread(source.list)
    try:
        assert gated.entered.wait(WAIT_S)  # the listing holds the source now
        asking, answers = _in_thread(source.archived_ids)
        asking.join(WAIT_S)
        assert not asking.is_alive(), "archived_ids waited for the listing"
        assert answers == [before]  # the last listing's set
    finally:
        gated.gate.set()
        lister.join(WAIT_S)
    assert not lister.is_alive()


def test_a_partial_search_answers_within_its_deadline_while_a_first_listing_runs(
    tmp_path: Path,
) -> None:
    """The MCP server's situation on a first start: its background build is in the first
    listing of the history (no importer cache yet) when a tool search asks for a partial
    answer. It used to answer only after the listing ended (44 s on the 1.4 GB history)."""
    source, gated = _gated_source(tmp_path / "home", archived=False)
    gated.gate.clear()
    with SqliteSearch(tmp_path / "index.sqlite3") as backend:
        query = SessionQuery(persistence=source, search=backend)
        builder, _built = _in_thread(lambda: backend.update(query.corpus))
        try:
            assert gated.entered.wait(WAIT_S)
            cancel = CancelToken.after(1.0)
            searching, pages = _in_thread(
                lambda: query.search_sessions(
                    "websocket", match="relevance", allow_partial=True, cancel=cancel
                )
            )
            searching.join(WAIT_S)
            assert not searching.is_alive(), "the search waited for the listing"
        finally:
            gated.gate.set()
            builder.join(WAIT_S)
        assert not builder.is_alive()
        (page,) = pages
        assert page.partial is not None and page.partial.sessions_indexed == 0
        assert page.items == []
        whole = query.search_sessions("websocket", match="relevance", allow_partial=True)
        assert whole.partial is None
        query.close()
