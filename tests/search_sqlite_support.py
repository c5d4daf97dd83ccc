"""Small in-memory fakes of our own seams (``Corpus``, ``SessionPersistence``) for the search
tests of both backends, built from real ``SessionEvent`` logs, and readers of an index file."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw

from builders import log
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model import (
    SessionEvent,
    SessionHeader,
    interrupted_turn_closers,
)
from sessionquery.persistence.base import PersistedSession
from sessionquery.query.backend import LiveSnapshot
from sessionquery.query.cancel import CancelToken, check_cancel
from sessionquery.query.types import SessionLog

_revisions = itertools.count(1)


def indexed_rows(path: Path | str) -> list[tuple[object, ...]]:
    """Every persisted document row of an index file with its session's id and header, in
    (session id, seq) order: two indexes of the same corpus compare equal on these."""
    conn = index_file(path)
    try:
        return conn.execute(
            "SELECT p.id, p.header_json, d.id & 4294967295, d.text, d.type, d.time, d.surface, "
            "d.length FROM doc_rows d JOIN persisted_sessions p ON p.key = d.id >> 32 "
            "ORDER BY p.id, d.id"
        ).fetchall()
    finally:
        conn.close()


def index_file(path: Path | str, *, read_only: bool = False) -> apsw.Connection:
    """A connection to an index file through the index's own SQLite (APSW). Tests read an
    index that is open in this process this way: a second SQLite library in one process
    would release the index connection's POSIX locks when it closes the file."""
    if not read_only:
        return apsw.Connection(str(path))
    flags = apsw.SQLITE_OPEN_URI | apsw.SQLITE_OPEN_READONLY
    conn = apsw.Connection(f"file:{path}?mode=ro", flags=flags)
    conn.set_busy_timeout(50)
    return conn


def header(session_id: str, created_at: int = 1, **fields: object) -> SessionHeader:
    return SessionHeader(id=session_id, created_at=created_at, **fields)  # type: ignore[arg-type]


@dataclass
class _Stored:
    header: SessionHeader
    events: list[SessionEvent]
    revision: str


class _Handle:
    def __init__(self, stored: _Stored) -> None:
        self._stored = stored

    @property
    def header(self) -> SessionHeader:
        return self._stored.header

    @property
    def inherited_event_count(self) -> int:
        return 0

    def read(self, offset: int = 0, length: int | None = None) -> list[SessionEvent]:
        end = None if length is None else offset + length
        return list(self._stored.events[offset:end])

    def close(self) -> None:
        pass

    def __enter__(self) -> _Handle:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class FakePersistence:
    """An in-memory store: ``put``/``append``/``delete`` change revisions and the token."""

    def __init__(self) -> None:
        self.sessions: dict[str, _Stored] = {}
        self.token = 0
        self.list_calls = 0

    def put(self, session_header: SessionHeader, events: Sequence[SessionEvent]) -> None:
        self.sessions[session_header.id] = _Stored(
            session_header, list(events), f"r{next(_revisions)}"
        )
        self.token += 1

    def append(self, session_id: str, events: Sequence[SessionEvent]) -> None:
        stored = self.sessions[session_id]
        stored.events.extend(events)
        stored.revision = f"r{next(_revisions)}"
        self.token += 1

    def delete(self, session_id: str) -> None:
        del self.sessions[session_id]
        self.token += 1

    def list(self) -> list[PersistedSession]:
        self.list_calls += 1
        return [
            PersistedSession(s.header, s.revision, len(s.events)) for s in self.sessions.values()
        ]

    def stat(self, session_id: str) -> PersistedSession | None:
        s = self.sessions.get(session_id)
        return None if s is None else PersistedSession(s.header, s.revision, len(s.events))

    def open_read(self, session_id: str) -> _Handle:
        return _Handle(self.sessions[session_id])


@dataclass
class FakeCorpus:
    """A live-first corpus over a dict of live sessions and an optional fake store."""

    store: FakePersistence | None = None
    live: dict[str, tuple[SessionHeader, list[SessionEvent]]] = field(default_factory=dict)
    with_token: bool = True
    reads: list[str] = field(default_factory=list)

    @property
    def persistence(self) -> FakePersistence | None:
        return self.store

    def live_ids(self) -> frozenset[str]:
        return frozenset(self.live)

    def live_snapshots(self) -> list[LiveSnapshot]:
        return [LiveSnapshot(h, 0, tuple(events)) for h, events in self.live.values()]

    def list_persisted(self, cancel: CancelToken | None = None) -> list[PersistedSession]:
        check_cancel(cancel)
        return [] if self.store is None else self.store.list()

    def read_persisted(self, session_id: str, cancel: CancelToken | None = None) -> SessionLog:
        check_cancel(cancel)
        self.reads.append(session_id)
        if self.store is None or session_id not in self.store.sessions:
            raise SessionQueryError(ErrorCode.SESSION_NOT_FOUND, f"{session_id!r} not found")
        stored = self.store.sessions[session_id]
        events = list(stored.events)
        events.extend(interrupted_turn_closers(events))
        return SessionLog(stored.header, 0, tuple(events))

    def change_token(self) -> str | None:
        if self.store is None or not self.with_token:
            return None
        return str(self.store.token)


def corpus_of(*sessions: tuple[str, list[str]]) -> FakeCorpus:
    """A corpus of stored sessions ``(id, texts)``, created one after another."""
    store = FakePersistence()
    for number, (sid, texts) in enumerate(sessions):
        store.put(header(sid, created_at=number + 1), log(*texts))
    return FakeCorpus(store)


def titled(docs: list[str]) -> list[SessionEvent]:
    """The messages, then (for two or more) a title made of the last one's text."""
    events = log(*docs)
    if len(docs) > 1:
        events.append(
            SessionEvent(
                type="session/title",
                seq=len(events),
                time=5_000,
                data={"title": docs[-1], "messageSeqs": [0], "source": {"kind": "summary"}},
            )
        )
    return events


def build_corpus(persisted: dict[str, list[str]], live: dict[str, list[str]]) -> FakeCorpus:
    """Stored sessions (alternating workspaces ``/v`` and ``/w``) and live ones, each titled
    (:func:`titled`)."""
    store = FakePersistence()
    for i, (sid, docs) in enumerate(sorted(persisted.items())):
        store.put(header(sid, created_at=i, cwd="/w" if i % 2 else "/v"), titled(docs))
    corpus = FakeCorpus(store=store)
    for sid, docs in live.items():
        corpus.live[sid] = (header(sid, created_at=9, cwd="/w"), titled(docs))
    return corpus


def all_session_pages(
    search: object,
    corpus: object,
    query: str,
    shape: Callable[[Any], list[tuple[object, ...]]],
    **kw: object,
) -> list[tuple[object, ...]]:
    """Every page of a session search, two hits a page, each page shaped by ``shape``."""
    out: list[tuple[object, ...]] = []
    cursor = None
    while True:
        page = search.search_sessions(corpus, query, limit=2, cursor=cursor, **kw)  # type: ignore[attr-defined]
        out += shape(page)
        cursor = page.next_cursor
        if cursor is None:
            return out
