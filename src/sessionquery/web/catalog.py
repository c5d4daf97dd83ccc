"""What the viewer reads, and what it keeps between requests.

:class:`Catalog` wraps one :class:`~sessionquery.query.service.SessionQuery` (and the
persistence it reads) for a long-running server:

* the session listing, joined with each session's size, revision and source, is kept for
  :data:`LISTING_TTL_S` seconds, so paging and filtering a 10,000-session history costs one
  listing per few seconds, not one per request; its :meth:`stamp` changes whenever a session
  is added, removed or changed, which the pages poll for live updates; a new listing is taken
  in the background once no request is being answered (:meth:`serving`), so it never slows
  the answer that found the old one stale;
* titles are remembered per (id, revision) and read within a time budget; the pages ask for
  the rest afterwards;
* a session is shown over its outline (``SessionQuery.read_outline``: skeletons and fold, kept
  by the service per revision) and the events of the window shown
  (``SessionQuery.read_window``), so opening a 50,000-event session reads its envelopes once
  and the data of 150 events, never parsing the rest.

Invariants: every read goes through the service (and so through the redaction and the cold
read cache it was built with); nothing here writes; errors are the service's
:class:`~sessionquery.errors.SessionQueryError`.
"""

from __future__ import annotations

import builtins
import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from sessionquery.app import SessionIds
from sessionquery.model import SessionEvent, fold_title
from sessionquery.model.title import TITLE_TYPE
from sessionquery.persistence.base import PersistedSession, ReadHandle, SessionPersistence
from sessionquery.query.outline import LogOutline
from sessionquery.query.service import SessionQuery
from sessionquery.query.types import SessionRecord
from sessionquery.resume import resume_command
from sessionquery.web.conversation import SessionView

__all__ = ["LISTING_TTL_S", "NOT_READ", "Catalog", "Row", "TitleReader"]

LISTING_TTL_S = 2.0
"""Seconds one listing of the sources serves the pages."""

NOT_READ = object()
"""A title that was not read within the budget (the page fills it in later)."""

TitleReader = Callable[
    [SessionQuery, Sequence[PersistedSession], Sequence[str], float], Mapping[str, object]
]
"""``(query, listing, ids, budget_s) -> {id: title | None | NOT_READ}``: a title reader with
a persistent cache (the command line's), or ``None`` for the built-in memory-only one."""

_VIEWS_KEPT = 4

logger = logging.getLogger(__name__)


class _Listing:
    """A persistence that is one listing already taken (the records are built over it)."""

    def __init__(self, entries: Sequence[PersistedSession]) -> None:
        self._entries = entries

    def list(self) -> builtins.list[PersistedSession]:
        return list(self._entries)

    def stat(self, session_id: str) -> PersistedSession | None:
        raise NotImplementedError  # only list() is used

    def open_read(self, session_id: str) -> ReadHandle:
        raise NotImplementedError  # only list() is used


@dataclass(frozen=True, slots=True)
class Row:
    """One listed session as the viewer shows it.

    Attributes:
        record: the service's record.
        source: the label of the source it comes from (``store``, ``claude``, ``codex2``...).
        own_id: its id inside that source (what the agent itself calls it).
        revision: the source's revision token, when listed.
        event_count: events, when the source knows without reading.
        size_bytes: bytes on disk, when the source knows.
        archived: kept by the archive after its source went away.
    """

    record: SessionRecord
    source: str
    own_id: str
    revision: str | None
    event_count: int | None
    size_bytes: int | None
    archived: bool

    @property
    def id(self) -> str:
        """The session id."""
        return self.record.id

    @property
    def resume(self) -> str | None:
        """The command that resumes this session in its agent, if there is one."""
        header = self.record.header
        child = header.parent_session is not None
        return resume_command(self.source, self.own_id, header.cwd, child=child)


class Catalog:
    """The viewer's reads over one query service.

    Args:
        query: the service (with its search backend for the search page).
        persistence: the persistence the service reads (for sizes and revisions).
        source_label: the label of a single source (when ``persistence`` is not combined).
        titles: a title reader with a persistent cache, or ``None``.
        clock: a monotonic clock.
        live_store: the live store ``query`` was built with, if any (its sessions are then
            listed through ``query`` itself).
    """

    def __init__(
        self,
        query: SessionQuery,
        persistence: SessionPersistence | None,
        *,
        source_label: str = "store",
        titles: TitleReader | None = None,
        clock: Callable[[], float] = time.monotonic,
        live_store: object | None = None,
    ) -> None:
        self.query = query
        self._persistence = persistence
        self._label = source_label
        self._titles_reader = titles
        self._clock = clock
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._serving = 0
        self._rows: list[Row] | None = None
        self._refreshing = False
        self._plain = live_store is None
        self._entries: list[PersistedSession] = []
        self._index: dict[str, int] = {}
        self._stamp = ""
        self._listed_at = 0.0
        self._titles: dict[str, tuple[str | None, str | None]] = {}
        self._ids: tuple[str, SessionIds] | None = None
        self._views: OrderedDict[str, tuple[LogOutline, SessionView]] = OrderedDict()

    # -- the listing ---------------------------------------------------------------------

    def rows(self) -> list[Row]:
        """Every session, newest first.

        The first call lists the sources; later calls answer from the last listing at once
        and, when it is older than :data:`LISTING_TTL_S`, list again in a background thread
        (a failed listing keeps the previous one and is logged), so no page waits for a
        listing of a large history after the first.
        """
        with self._lock:
            rows = self._rows
            stale = rows is None or self._clock() - self._listed_at >= LISTING_TTL_S
            start = rows is not None and stale and not self._refreshing
            if start:
                self._refreshing = True
        if rows is None:
            return self._refresh()
        if start:
            threading.Thread(
                target=self._refresh_quietly, name="sessionquery-listing", daemon=True
            ).start()
        return rows

    @contextmanager
    def serving(self) -> Iterator[None]:
        """Mark a request being answered while the block runs: a listing that falls due
        meanwhile starts when no request is being answered (or after
        :data:`LISTING_TTL_S`), since it would only take the processor from the answer
        (which is given from the last listing anyway)."""
        with self._idle:
            self._serving += 1
        try:
            yield
        finally:
            with self._idle:
                self._serving -= 1
                if not self._serving:
                    self._idle.notify_all()

    def _refresh_quietly(self) -> None:
        with self._idle:
            self._idle.wait_for(lambda: not self._serving, timeout=LISTING_TTL_S)
        try:
            self._refresh()
        except Exception:  # the thread's top level: keep serving the last listing
            logger.warning(
                "listing the session sources failed; keeping the last listing", exc_info=True
            )
        finally:
            with self._lock:
                self._refreshing = False

    def _refresh(self) -> list[Row]:
        entries = list(self._persistence.list()) if self._persistence is not None else []
        # One listing serves both the records (ordered and checked by the service, over this
        # very listing) and the sizes, revisions and sources joined to them.
        if self._persistence is not None and self._plain:
            records = SessionQuery(persistence=_Listing(entries)).list_sessions()
        else:
            records = self.query.list_sessions()
        by_id = {entry.header.id: entry for entry in entries}
        origin = getattr(self._persistence, "origin_of", None)
        rows = []
        for record in records:
            entry = by_id.get(record.id)
            where = origin(record.id) if origin is not None else None
            label, own = where if where is not None else (self._label, record.id)
            rows.append(
                Row(
                    record=record,
                    source=label,
                    own_id=own,
                    revision=entry.revision if entry else None,
                    event_count=entry.event_count if entry else None,
                    size_bytes=entry.size_bytes if entry else None,
                    archived=record.archived,
                )
            )
        digest = hashlib.blake2b(digest_size=12)
        for row in rows:
            digest.update(f"{row.id}\0{row.revision}\0{row.record.live}\n".encode())
        with self._lock:
            self._rows, self._entries = rows, entries
            self._index = {row.id: index for index, row in enumerate(rows)}
            self._stamp = digest.hexdigest()
            self._listed_at = self._clock()
        return rows

    def stamp(self) -> str:
        """A token that changes whenever a session is added, removed or changed."""
        self.rows()
        return self._stamp

    def row(self, session_id: str) -> Row | None:
        """The listed row of one session (``None`` when it is not listed)."""
        rows = self.rows()
        index = self._index.get(session_id)
        return None if index is None else rows[index]

    def neighbours(self, session_id: str) -> tuple[Row | None, Row | None]:
        """The sessions listed just before (newer) and after (older) one session."""
        rows = self.rows()
        index = self._index.get(session_id)
        if index is None:
            return None, None
        newer = rows[index - 1] if index > 0 else None
        older = rows[index + 1] if index + 1 < len(rows) else None
        return newer, older

    def resolve(self, text: str) -> str:
        """The listed session id ``text`` names: itself, or the one id it starts.

        Raises:
            SessionQueryError: ``SESSION_NOT_FOUND``, or ``AmbiguousId`` when it starts
                several ids.
        """
        rows = self.rows()
        if text in self._index:
            return text
        kept = self._ids
        if kept is None or kept[0] != self._stamp:
            kept = (self._stamp, SessionIds.of(row.record for row in rows))
            self._ids = kept
        return kept[1].resolve(text)

    # -- titles --------------------------------------------------------------------------

    def titles(self, ids: Sequence[str], budget_s: float) -> dict[str, str | object | None]:
        """The title of each id: text, ``None`` (untitled) or :data:`NOT_READ`.

        Remembered titles are always answered; others are read (a whole-log read each)
        for at most ``budget_s`` seconds, at least one when the budget is positive, none
        when it is 0.
        """
        revisions = {row.id: row.revision for row in self.rows()}
        out: dict[str, str | object | None] = {}
        missing = []
        for session_id in ids:
            known = self._titles.get(session_id)
            if known is not None and known[0] == revisions.get(session_id):
                out[session_id] = known[1]
            else:
                missing.append(session_id)
        if missing:
            read = self._read_titles(missing, budget_s)
            for session_id, title in read.items():
                out[session_id] = title
                if title is not NOT_READ:
                    text = title if isinstance(title, str) else None
                    self._titles[session_id] = (revisions.get(session_id), text)
        return out

    def _read_titles(self, ids: Sequence[str], budget_s: float) -> dict[str, str | object | None]:
        if self._titles_reader is not None:
            found = self._titles_reader(self.query, self._entries, ids, budget_s)
            return {
                k: (NOT_READ if v is not None and not isinstance(v, str) else v)
                for k, v in found.items()
            }
        deadline = self._clock() + budget_s
        out: dict[str, str | object | None] = {}
        for index, session_id in enumerate(ids):
            if budget_s <= 0 or (index and self._clock() > deadline):
                out[session_id] = NOT_READ
                continue
            (result,) = self.query.read_title_snapshots([session_id])
            out[session_id] = result.title.title if result.title else None
        return out

    def own_title(self, session_id: str, view: SessionView) -> str | None:
        """The title of a session being shown: remembered, else folded from the title events
        of its outline (a window of a few events, not a read of the whole log), and then
        remembered as :meth:`titles` remembers it.

        Raises:
            SessionQueryError: as :meth:`SessionQuery.read_window`.
        """
        row = self.row(session_id)
        revision = row.revision if row is not None else None
        known = self._titles.get(session_id)
        if known is not None and known[0] == revision:
            return known[1]
        seqs = [s.seq for s in view.outline.skeletons if s.type == TITLE_TYPE]
        snapshot = fold_title(view.events_at(seqs)) if seqs else None
        title = snapshot.title if snapshot is not None else None
        if row is not None:
            self._titles[session_id] = (revision, title)
        return title

    # -- one session ---------------------------------------------------------------------

    def view(self, session_id: str) -> tuple[LogOutline, SessionView]:
        """One session's outline and its view (outlined once per revision, by the service).

        Raises:
            SessionQueryError: as :meth:`SessionQuery.read_outline`.
        """
        outline = self.query.read_outline(session_id)
        with self._lock:
            kept = self._views.get(session_id)
            if kept is not None and kept[0] is outline:
                self._views.move_to_end(session_id)
                return kept
        query = self.query

        def read(seqs: Sequence[int]) -> Sequence[SessionEvent]:
            return query.read_window(session_id, seqs).events

        view = SessionView(outline, read)
        with self._lock:
            self._views[session_id] = (outline, view)
            while len(self._views) > _VIEWS_KEPT:
                self._views.popitem(last=False)
        return outline, view
