"""The viewer's catalog: one listing serves the pages, and a new one is taken behind them."""

from __future__ import annotations

import threading
from pathlib import Path

from sessionquery import JsonlPersistence, SessionQuery
from sessionquery.persistence.base import PersistedSession, ReadHandle
from sessionquery.web.catalog import LISTING_TTL_S, Catalog
from web_support import make_history


class _Counted:
    """A persistence (our own protocol) that counts its listings and signals each one."""

    def __init__(self, inner: JsonlPersistence) -> None:
        self._inner = inner
        self.listings = 0
        self.listed = threading.Event()

    def list(self) -> list[PersistedSession]:
        found = self._inner.list()
        self.listings += 1
        self.listed.set()
        return found

    def stat(self, session_id: str) -> PersistedSession | None:
        return self._inner.stat(session_id)

    def open_read(self, session_id: str) -> ReadHandle:
        return self._inner.open_read(session_id)


def test_a_listing_that_falls_due_waits_until_no_request_is_being_answered(
    tmp_path: Path,
) -> None:
    persistence = _Counted(JsonlPersistence(make_history(tmp_path)))
    now = [0.0]
    with SessionQuery(persistence=persistence) as query:
        catalog = Catalog(query, persistence, clock=lambda: now[0])
        first = catalog.rows()
        assert persistence.listings == 1
        persistence.listed.clear()
        now[0] += LISTING_TTL_S
        with catalog.serving():
            assert catalog.rows() is first  # answered from the last listing at once
            # The new listing waits for the answer (it would only slow it down).
            assert not persistence.listed.wait(0.3)
            assert persistence.listings == 1
        assert persistence.listed.wait(30)  # a hang catcher
        assert persistence.listings == 2
