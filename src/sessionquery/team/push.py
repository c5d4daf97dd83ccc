"""``push``: copy this machine's sessions into the team database.

:func:`push_sessions` reads every session of ``source`` (the composition root's corpus, which
is redacted: :class:`~sessionquery.redact.RedactingPersistence`; the text as stored on this
machine is never sent) and brings the team database up to date with it:

* a session never pushed is inserted (its events, one row each, and its index documents);
* a session that grew keeps every stored event up to the first one that differs (found over
  the last :data:`TAIL_EVENTS` stored events, behind an unchanged prefix: :func:`~.rows.digests`;
  an importer rewrites its closing events of the last turn when a line is appended) and gets
  the rest written, one row per event, and only the index documents that changed;
* a session that changed otherwise is replaced whole; an unchanged one (same revision as last
  pushed) is not even read. A session the database holds from another machine is left alone
  (each session belongs to the machine that pushed it first). Nothing is ever deleted.

Invariants:

* **Idempotent and crash-safe.** Sessions are written in batches, each one transaction
  holding the sessions' rows, their index rows, the statistics and the journal; a batch
  commits whole or not at all, and what committed is recognised by the next push (its
  revision and digest are stored with it). A push killed at any point and run again leaves
  the database as one uninterrupted push would.
* **Concurrent machines never conflict.** A machine is claimed once by the role that first
  pushes it; only that role pushes it, one push at a time (a session-level advisory lock).
  Rows and statistics are per machine, so two machines' batches touch no common row except
  the store's change counter and the index generation, updated last, just before commit.
  Workspace ids are resolved before a batch's transaction, in their own.
* Every written row carries the session's workspace and machine (``ws``, ``mid``), the
  columns row-level security filters by (:mod:`.schema`).
* The push's own database session commits without waiting for the WAL flush and compresses
  with lz4 (:func:`_tune`); neither changes what is stored.
* **Reading overlaps writing.** Sessions are read (redacted, tokenised) by
  :func:`~.reading.readers`, in this process or in ``jobs`` reader processes forked after the
  listing and before the connection opens; the calling thread gathers them into batches
  while one writer thread resolves and writes the previous batch. The database connection
  is used by that thread only, batches are written one at a time in order, and at most three
  batches (one being written, one waiting for it, one being gathered; and ``2 * jobs``
  sessions read ahead) are held in memory (:data:`QUEUED_WRITES`).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import psycopg

from sessionquery.errors import ErrorCode, PersistenceError, SessionQueryError
from sessionquery.model import SessionEvent, SurfaceError
from sessionquery.persistence.base import PersistedSession, SessionPersistence
from sessionquery.persistence.postgres._schema import (
    advisory_key,
    dumps,
    migrate,
    parse_event,
)
from sessionquery.search.postgres import schema as index_schema
from sessionquery.team import schema as team_schema
from sessionquery.team import tables
from sessionquery.team.reading import MAX_JOBS, Local, Read, readers
from sessionquery.team.rows import (
    Delta,
    Docs,
    OwnDocs,
    changed,
    copy_field,
    copy_lines,
    digests,
    documents,
    index_rows,
    lexemes_of_norm,
)
from sessionquery.team.workspace import valid_machine

__all__ = ["BATCH_BYTES", "BATCH_SESSIONS", "JOURNAL_KEEP", "PushReport", "push_sessions"]

BATCH_SESSIONS: Final = 400
"""Sessions per committed batch, at most..."""
BATCH_BYTES: Final = 16 << 20
"""...and bytes of their events' JSON (a batch holds at least one session). Each batch adds
its terms' counts to the statistics, one row per term and workspace, so a common term is
updated once a batch: batches of 16 MB (not 8) took the 1.4 GB history's first push from 162
to 135 s (server CPU 134 -> 113 s, the push's 146 -> 132 s), peaking at 500 MB of memory
(32 MB: 133 s, 700 MB)."""
QUEUED_WRITES: Final = 2
"""Batches handed to the writer thread and not yet committed, at most: while it writes one,
the next waits ready and the readers go on filling a third. With one, the readers stopped
whenever a batch was ready before the previous one had committed: 22-24 CPU seconds of two
cores idle during the 1.4 GB history's first push, 13-14 with two (156-161 s -> 149-155 s,
peak memory 480-500 -> 575-610 MB)."""
TAIL_EVENTS: Final = 32
"""Stored events compared one by one when a session grew: an importer may rewrite its last
synthetic events (closing a turn) when a line is appended; anything before the last
``TAIL_EVENTS`` must be an unchanged prefix, else the session is replaced whole."""
_REWRITTEN_TAIL: Final = 4
"""A session whose new events keep all but at most this many stored ones is reported grown."""
JOURNAL_KEEP: Final = 100_000
"""Change-journal rows of this machine kept after a push; older ones are pruned."""


Progress = Callable[[int, int], None]
Kind = Literal["new", "grown", "replaced", "same"]


@dataclass(frozen=True, slots=True)
class PushReport:
    """What one push did.

    Attributes:
        machine: the machine pushed as.
        role: the database role that pushed.
        sessions: sessions listed on this machine.
        new, grown, replaced: sessions inserted, appended to, rewritten.
        unchanged: sessions already pushed as they are.
        elsewhere: sessions the database holds from another machine (left alone).
        failed: sessions that could not be read here (their reasons are in ``problems``).
        events: event rows written.
        bytes: bytes of event JSON written.
        seconds: wall time.
        problems: one sentence per session that failed.
    """

    machine: str
    role: str
    sessions: int
    new: int
    grown: int
    replaced: int
    unchanged: int
    elsewhere: int
    failed: int
    events: int
    bytes: int
    seconds: float
    problems: tuple[str, ...] = ()

    def summary(self) -> str:
        """One line for a log or a terminal."""
        rate = self.bytes / self.seconds / 1e6 if self.seconds > 0 else 0.0
        parts = [
            f"pushed {self.new + self.grown + self.replaced} of {self.sessions} sessions "
            f"from {self.machine} as {self.role}",
            f"{self.new} new, {self.grown} grown, {self.replaced} replaced, "
            f"{self.unchanged} unchanged",
        ]
        if self.elsewhere:
            parts.append(f"{self.elsewhere} held by another machine")
        if self.failed:
            parts.append(f"{self.failed} unreadable")
        parts.append(
            f"{self.events} events, {self.bytes / 1e6:.1f} MB in {self.seconds:.1f} s "
            f"({rate:.1f} MB/s)"
        )
        return "; ".join(parts)


def _failed(message: str, exc: BaseException | None = None) -> SessionQueryError:
    detail = f": {exc}" if exc is not None else ""
    return SessionQueryError(ErrorCode.PERSISTENCE_FAILED, f"push: {message}{detail}")


@dataclass(slots=True)
class _Pushed:
    revision: str | None
    digest: str | None
    anchor: str | None
    count: int
    ws: int | None


@dataclass(slots=True)
class _Totals:
    new: int = 0
    grown: int = 0
    replaced: int = 0
    unchanged: int = 0
    elsewhere: int = 0
    events: int = 0
    bytes: int = 0
    problems: list[str] = field(default_factory=list)


class _Pusher:
    def __init__(self, conn: psycopg.Connection[Any], machine: str, store_id: str) -> None:
        self.conn = conn
        self.machine = machine
        self.store_id = store_id
        self.mid = 0
        self.role = ""
        self.totals = _Totals()
        self.claimed = False  # whether this push holds the machine's lock
        self.state: dict[str, _Pushed] = {}
        self._ws_ids: dict[str, int] = {}
        self._events: list[str] = []  # COPY text (tables.EVENT_COLUMNS)
        self._docs_out: list[str] = []  # COPY text (tables.DOC_COLUMNS)
        self._placed: dict[str, int | None] = {}  # the batch's sessions written: workspace
        self._index_new: list[tuple[object, ...]] = []
        self._index_changed: list[tuple[object, ...]] = []

    # -- set-up ----------------------------------------------------------------------

    def claim(self) -> None:
        conn = self.conn
        try:
            conn.execute(
                "INSERT INTO sq_machines (name, owner) VALUES (%s, current_user) "
                "ON CONFLICT (name) DO NOTHING",
                (self.machine,),
            )
        except psycopg.errors.InsufficientPrivilege:
            raise SessionQueryError(
                ErrorCode.INVALID_CONFIG,
                "push: this role may not push to the team database (the owner lets it with "
                "'sessionquery team grant ROLE WORKSPACE --push'); nothing was pushed",
            ) from None
        row = conn.execute(
            "SELECT m.id, m.owner = current_user, current_user FROM sq_machines AS m "
            "WHERE m.name = %s",
            (self.machine,),
        ).fetchone()
        who = conn.execute("SELECT current_user").fetchone()
        self.role = str(who[0]) if who else ""
        if row is None or not row[1]:
            raise SessionQueryError(
                ErrorCode.INVALID_CONFIG,
                f"push: machine {self.machine!r} is pushed by another role; push with that "
                "role or choose another machine name (--machine)",
            )
        self.mid = int(row[0])
        locked = conn.execute(
            "SELECT pg_try_advisory_lock(%s)",
            (advisory_key(self.store_id, f"push:{self.machine}"),),
        ).fetchone()
        if not locked or not locked[0]:
            raise SessionQueryError(
                ErrorCode.BUSY, f"push: another push from machine {self.machine!r} is running"
            )
        self.claimed = True
        rows = conn.execute(
            "SELECT id, source_revision, digest, anchor, event_count, ws FROM sq_sessions "
            "WHERE mid = %s",
            (self.mid,),
        ).fetchall()
        self.state = {
            str(sid): _Pushed(rev, dig, anchor, int(count), ws)
            for sid, rev, dig, anchor, count, ws in rows
        }

    def resolve(self, batch: Sequence[Local]) -> None:
        """Workspace ids of a batch, each in its own short transaction (before the batch's)."""
        for local in batch:
            name = local.workspace
            if name is None:
                continue
            if name not in self._ws_ids:
                row = self.conn.execute("SELECT sq_workspace_id(%s)", (name,)).fetchone()
                assert row is not None
                self._ws_ids[name] = int(row[0])
            local.ws = self._ws_ids[name]

    # -- writing one batch -----------------------------------------------------------

    def write(self, batch: Sequence[Local]) -> None:
        deltas: dict[int | None, Delta] = {}
        changed: list[str] = []
        changed_ws: list[int | None] = []
        self._clear()  # of what a batch that failed may have left
        with self.conn.transaction():
            fresh = [local for local in batch if local.header.id not in self.state]
            inserted = self._insert_sessions(fresh)
            for local in batch:
                if local.header.id not in self.state and local.header.id not in inserted:
                    self.totals.elsewhere += 1  # the database holds it from another machine
                    continue
                kind = self._write_one(local, deltas)
                if kind is None:
                    continue
                if kind == "same":
                    self.totals.unchanged += 1
                    continue
                changed.append(local.header.id)
                changed_ws.append(local.ws)
                setattr(self.totals, kind, getattr(self.totals, kind) + 1)
            tables.write_index_sessions(self.conn, self._index_new, self._index_changed)
            tables.insert_rows(self.conn, self.mid, self._placed, self._events, self._docs_out)
            tables.write_statistics(self.conn, self.mid, deltas)
            if changed:
                tables.record_changes(self.conn, self.mid, self.store_id, changed, changed_ws)
        self._clear()
        for local in batch:
            sid = local.header.id
            if local.digest and (sid in self.state or sid in inserted):  # written or unchanged
                self.state[local.header.id] = _Pushed(
                    local.entry.revision, local.digest, local.anchor, len(local.lines), local.ws
                )

    def _clear(self) -> None:
        for queue in (self._index_new, self._index_changed, self._events, self._docs_out):
            queue.clear()
        self._placed.clear()

    def release(self) -> None:
        """Let go of the machine's push lock now. Closing the connection would release it
        too, but only once the server's backend has exited, after the client has returned:
        a push started right after this one would find it still held."""
        if not self.claimed or self.conn.closed:
            return
        self.claimed = False
        try:
            if self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                self.conn.rollback()
            self.conn.execute(
                "SELECT pg_advisory_unlock(%s)",
                (advisory_key(self.store_id, f"push:{self.machine}"),),
            )
        except psycopg.Error:
            pass  # a broken connection: the lock ends with its backend

    def _digest(self, local: Local) -> str:
        """Set ``local``'s digests; return the digest at the stored session's anchor."""
        pushed = self.state.get(local.header.id)
        start = 0 if pushed is None else _anchor_at(pushed.count)
        (anchor, at_start), whole = digests(local.lines, _anchor_at(len(local.lines)), start)
        local.digest, local.anchor = whole, anchor
        return at_start

    def _insert_sessions(self, fresh: Sequence[Local]) -> set[str]:
        """Insert the session rows of sessions never pushed from here; the ids inserted (the
        others are held by another machine)."""
        if not fresh:
            return set()
        rows = []
        for local in fresh:
            self._digest(local)
            rows.append((local.header.id, *self._session_values(local)))
        columns = [list(column) for column in zip(*rows, strict=True)]
        found = self.conn.execute(
            "INSERT INTO sq_sessions (id, header_json, inherited_event_count, event_count, "
            "size_bytes, ws, source_revision, digest, anchor, created_at, cwd, parent_session, "
            "revision, mid, pushed_by, pushed_at) SELECT u.*, 0, %s, current_user, now() "
            "FROM unnest(%s::text[], %s::text[], %s::int[], %s::int[], %s::bigint[], %s::int[], "
            "%s::text[], %s::text[], %s::text[], %s::bigint[], %s::text[], %s::text[]) AS u "
            "ON CONFLICT (id) DO NOTHING RETURNING id",
            (self.mid, *columns),
        ).fetchall()
        return {str(row[0]) for row in found}

    def _write_one(self, local: Local, deltas: dict[int | None, Delta]) -> Kind | None:
        sid = local.header.id
        pushed = self.state.get(sid)
        count = len(local.lines)
        if pushed is None:
            return self._insert(local, deltas)
        start = _anchor_at(pushed.count)
        at_start = self._digest(local)
        if pushed.ws == local.ws and local.digest == pushed.digest and count == pushed.count:
            self.conn.execute(
                "UPDATE sq_sessions SET source_revision = %s WHERE id = %s AND mid = %s",
                (local.entry.revision, sid, self.mid),
            )
            return "same"
        if pushed.ws == local.ws and at_start == pushed.anchor and count >= start:
            tail = self._stored_tail(sid, start, pushed.count)
            if tail is not None:
                kept = self._grow(local, pushed, start, tail, deltas)
                grew = count > pushed.count and kept >= pushed.count - _REWRITTEN_TAIL
                return "grown" if grew else "replaced"
        self._replace(local, deltas)
        return "replaced"

    def _stored_tail(self, sid: str, start: int, stop: int) -> list[str] | None:
        """The stored event lines ``start .. stop`` (``None`` if any is missing)."""
        rows = self.conn.execute(
            "SELECT seq, event_json FROM sq_events WHERE session_id = %s AND seq >= %s "
            "ORDER BY seq",
            (sid, start),
        ).fetchall()
        lines = [str(text) for _seq, text in rows]
        if [int(seq) for seq, _text in rows] != list(range(start, stop)):
            return None
        return lines

    def _session_values(self, local: Local) -> tuple[object, ...]:
        return (
            dumps(local.header.to_json()),
            local.inherited,
            len(local.lines),
            local.size,
            local.ws,
            local.entry.revision,
            local.digest,
            local.anchor,
            local.header.created_at,
            local.header.cwd,
            local.header.parent_session,
        )

    def _insert(self, local: Local, deltas: dict[int | None, Delta]) -> Kind:
        """The events and index rows of a session whose row :meth:`_insert_sessions` wrote."""
        self._copy_events(local, 0)
        self._index_session(local, insert=True)
        self._add_docs(local, None, deltas)
        return "new"

    _UPDATE_SESSION: Final = (
        "UPDATE sq_sessions SET header_json = %s, inherited_event_count = %s, "
        "event_count = %s, size_bytes = %s, ws = %s, source_revision = %s, digest = %s, "
        "anchor = %s, created_at = %s, cwd = %s, parent_session = %s, "
        "pushed_by = current_user, pushed_at = now() "
        "WHERE id = %s AND mid = %s AND event_count = %s"
    )

    def _grow(
        self,
        local: Local,
        pushed: _Pushed,
        start: int,
        tail: list[str],
        deltas: dict[int | None, Delta],
    ) -> int:
        """Keep the stored events up to the first that differs; replace the rest (an
        importer may rewrite its last synthetic events when a line is appended). Returns how
        many stored events were kept."""
        sid = local.header.id
        same = start
        for stored, line in zip(tail, local.lines[start:], strict=False):
            if stored != line:
                break
            same += 1
        updated = self.conn.execute(
            self._UPDATE_SESSION, (*self._session_values(local), sid, self.mid, pushed.count)
        ).rowcount
        if updated != 1:
            raise _failed(f"session {sid!r} changed in the database during the push")
        if same < pushed.count:
            self.conn.execute(
                "DELETE FROM sq_events WHERE session_id = %s AND seq >= %s", (sid, same)
            )
        self._copy_events(local, same)
        if local.events is not None:
            kept = local.events[:same]
        else:
            kept = _parsed(sid, local.lines[:same], 0)
        old_events = [*kept, *_parsed(sid, tail[same - start :], same)]
        gone, added = changed(self._docs(sid, old_events), self._docs_of(local))
        delta = deltas.setdefault(local.ws, Delta())
        if gone:
            self.conn.execute(
                "DELETE FROM sqi_docs WHERE session_id = %s AND seq = ANY(%s::int[])",
                (sid, sorted(gone)),
            )
            for row, terms in index_rows(sid, gone):
                delta.add(row[9], terms, -1)
        self._index_session(local, insert=False)
        self._add_docs(local, added, deltas)
        return same

    def _replace(self, local: Local, deltas: dict[int | None, Delta]) -> None:
        sid = local.header.id
        conn = self.conn
        for ws, ntokens, norm in conn.execute(
            "SELECT ws, ntokens, norm FROM sqi_docs WHERE session_id = %s", (sid,)
        ).fetchall():
            deltas.setdefault(ws, Delta()).add(int(ntokens), lexemes_of_norm(str(norm)), -1)
        conn.execute("DELETE FROM sqi_docs WHERE session_id = %s", (sid,))
        conn.execute("DELETE FROM sq_events WHERE session_id = %s", (sid,))
        pushed = self.state[sid]
        updated = conn.execute(
            self._UPDATE_SESSION, (*self._session_values(local), sid, self.mid, pushed.count)
        ).rowcount
        if updated != 1:
            raise _failed(f"session {sid!r} changed in the database during the push")
        self._copy_events(local, 0)
        self._index_session(local, insert=False)
        self._add_docs(local, None, deltas)

    def _docs(self, sid: str, events: Sequence[SessionEvent]) -> Docs:
        try:
            return documents(events)
        except SurfaceError as exc:
            raise _failed(f"session {sid!r} does not fold", exc) from None

    def _docs_of(self, local: Local) -> Docs:
        """The documents the reader found for the whole log (folded again when it kept
        only their rows)."""
        if local.fold_error is not None:
            raise _failed(f"session {local.header.id!r} does not fold: {local.fold_error}")
        if local.docs is None:
            events = _parsed(local.header.id, local.lines, 0)
            local.docs = self._docs(local.header.id, events)
        return local.docs

    def _own(self, local: Local) -> OwnDocs:
        """The rows of the whole log's documents (tokenised by the reader)."""
        if local.fold_error is not None or local.own is None:
            raise _failed(f"session {local.header.id!r} does not fold: {local.fold_error}")
        return local.own

    def _add_docs(self, local: Local, docs: Docs | None, deltas: dict[int | None, Delta]) -> None:
        """Write ``docs`` (``None``: the whole log's, as the reader tokenised them)."""
        delta = deltas.setdefault(local.ws, Delta())
        self._placed[local.header.id] = local.ws
        if docs is None or (docs is local.docs and local.own is not None):
            own = self._own(local)
            self._docs_out.append(own.copy)
            delta.add_own(own)
            return
        rows = index_rows(local.header.id, docs)
        self._docs_out.append(copy_lines(row for row, _terms in rows))
        for row, terms in rows:
            delta.add(row[9], terms, 1)

    def _copy_events(self, local: Local, start: int) -> None:
        sid, lines = copy_field(local.header.id), local.lines
        self._placed[local.header.id] = local.ws
        self._events.append(
            "".join(f"{sid}\t{seq}\t{copy_field(lines[seq])}\n" for seq in range(start, len(lines)))
        )
        self.totals.events += len(lines) - start
        self.totals.bytes += sum(len(lines[seq]) + 1 for seq in range(start, len(lines)))

    def _index_session(self, local: Local, *, insert: bool) -> None:
        header = local.header
        values = (
            header.created_at,
            header.cwd,
            header.parent_session,
            dumps(header.to_json()),
            local.ws,
            header.id,
            self.mid,
        )
        (self._index_new if insert else self._index_changed).append(values)


def _parsed(sid: str, lines: Sequence[str], first: int) -> list[SessionEvent]:
    """The events of a log's wire ``lines``, the first of which is event ``first``."""
    return [parse_event(sid, first + n, line) for n, line in enumerate(lines)]


def _anchor_at(count: int) -> int:
    return max(0, count - TAIL_EVENTS)


def _tune(conn: psycopg.Connection[Any]) -> None:
    """Settings of the push's own session (any role may set them).

    * ``synchronous_commit = off``: a batch's commit does not wait for its WAL to reach disk.
      A batch lost to a server crash in that window is one the next push writes again (what
      committed is recognised from the database alone), so nothing is lost or duplicated.
    * ``default_toast_compression = lz4`` when the server has it: the documents' text, normal
      form and lexemes are compressed ~20% cheaper in server CPU than with pglz (measured on
      realistic transcripts); a server built without lz4 keeps its default.
    * ``gin_pending_list_limit = 16MB`` (the default is 4 MB): the full-text indexes take the
      batches' rows into a pending list and merge it into the index when it outgrows the
      limit; merging four times fewer, larger lists updates each common word's entry four
      times less often (15-20 % less server CPU for a push, measured). A search reads through
      the pending list, so the push empties it when it ends (:func:`.tables.clean_pending`).
    """
    conn.execute("SET synchronous_commit = off")
    conn.execute("SET gin_pending_list_limit = '16MB'")
    try:
        conn.execute("SET default_toast_compression = lz4")
    except psycopg.errors.InvalidParameterValue:
        pass


def _open(dsn: str, connect_timeout: float) -> tuple[psycopg.Connection[Any], str]:
    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=max(1, round(connect_timeout)))
    except psycopg.Error as exc:
        raise _failed("cannot connect to the team database", exc) from exc
    try:
        _tune(conn)
        store_id = migrate(conn)
        with conn.transaction():
            index_schema.ensure_schema(conn)
        if not team_schema.is_team(conn):
            team_schema.init_team(conn)
    except SessionQueryError:
        conn.close()
        raise
    except (psycopg.Error, PersistenceError) as exc:
        conn.close()
        raise _failed("the team database could not be opened", exc) from exc
    return conn, store_id


def _batches(pusher: _Pusher, read: Read, todo: Sequence[PersistedSession]) -> Any:
    batch: list[Local] = []
    size = 0
    wanted = ((entry, entry.header.id in pusher.state) for entry in todo)
    for local in read(wanted):
        if isinstance(local, str):
            pusher.totals.problems.append(local)
            continue
        batch.append(local)
        size += local.size
        if len(batch) >= BATCH_SESSIONS or size >= BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _write(pusher: _Pusher, batch: Sequence[Local]) -> int:
    pusher.resolve(batch)
    pusher.write(batch)
    return len(batch)


def _overlapped(pusher: _Pusher, batches: Iterator[list[Local]]) -> Iterator[int]:
    """Write each batch in one writer thread while the next are read here; yield each batch's
    size once it committed. An error of a write is raised here after the batch being read, and
    no batch queued after the one that failed is written; leaving early waits for the write
    under way (the connection is closed after it)."""
    failed: list[BaseException] = []

    def write(batch: Sequence[Local]) -> int:  # in the writer thread, one batch at a time
        if failed:
            raise failed[0]
        try:
            return _write(pusher, batch)
        except BaseException as exc:
            failed.append(exc)
            raise

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="sessionquery-push") as writer:
        queued: deque[Future[int]] = deque()
        try:
            for batch in batches:
                if len(queued) == QUEUED_WRITES:
                    yield queued.popleft().result()
                queued.append(writer.submit(write, batch))
            while queued:
                yield queued.popleft().result()
        finally:
            for pending in queued:
                pending.cancel()
            for pending in queued:
                try:
                    pending.result()
                except BaseException:  # the error being raised is the first one
                    pass


def push_sessions(
    source: SessionPersistence,
    dsn: str,
    *,
    machine: str,
    progress: Progress | None = None,
    connect_timeout: float = 10.0,
    jobs: int = 1,
) -> PushReport:
    """Bring the team database at ``dsn`` up to date with this machine's sessions.

    Args:
        source: this machine's sessions, already redacted (``App.persistence()``).
        dsn: the team database (a role with :data:`~.schema.PUSH_ROLE`, or the owner).
        machine: this machine's name in the team database (:func:`~.workspace.valid_machine`).
        progress: called with ``(sessions done, sessions to push)``.
        connect_timeout: seconds to wait for the server.
        jobs: reader processes (:func:`~.reading.readers`): more than one reads, redacts and
            tokenises sessions on that many cores while this process writes. They are
            forked from this process after the source is listed, so ``source`` must be
            readable in a forked child (every source of this package is).

    Raises:
        ValueError: an invalid machine name, or ``jobs`` out of range.
        SessionQueryError: ``INVALID_CONFIG`` (the database is not a team database and this
            role may not make it one; the role may not push; the machine belongs to another
            role), ``BUSY`` (another
            push of this machine is running), ``PERSISTENCE_FAILED`` (the server refused).
    """
    started = time.monotonic()
    valid_machine(machine)
    if not 1 <= jobs <= MAX_JOBS:
        raise ValueError(f"jobs must be between 1 and {MAX_JOBS}, not {jobs}")
    # Listed, and the readers forked, before connecting: a reader never holds the connection.
    listing = sorted(source.list(), key=lambda entry: entry.header.id)
    with readers(source, machine, jobs if len(listing) > 1 else 1) as read:
        return _push(read, listing, dsn, machine, progress, connect_timeout, started)


def _push(  # noqa: PLR0917
    read: Read,
    listing: Sequence[PersistedSession],
    dsn: str,
    machine: str,
    progress: Progress | None,
    connect_timeout: float,
    started: float,
) -> PushReport:
    conn, store_id = _open(dsn, connect_timeout)
    pusher = _Pusher(conn, machine, store_id)
    try:
        pusher.claim()
        todo = [
            entry
            for entry in listing
            if (state := pusher.state.get(entry.header.id)) is None
            or state.revision != entry.revision
        ]
        pusher.totals.unchanged = len(listing) - len(todo)
        done = 0
        if progress is not None:
            progress(0, len(todo))
        for written in _overlapped(pusher, _batches(pusher, read, todo)):
            done += written
            if progress is not None:
                progress(done, len(todo))
        tables.prune_journal(conn, pusher.mid, JOURNAL_KEEP)
        if done:
            tables.clean_pending(conn)
    except psycopg.Error as exc:
        raise _failed("the team database refused the push", exc) from exc
    finally:
        pusher.release()
        conn.close()
    totals = pusher.totals
    return PushReport(
        machine=machine,
        role=pusher.role,
        sessions=len(listing),
        new=totals.new,
        grown=totals.grown,
        replaced=totals.replaced,
        unchanged=totals.unchanged,
        elsewhere=totals.elsewhere,
        failed=len(totals.problems),
        events=totals.events,
        bytes=totals.bytes,
        seconds=time.monotonic() - started,
        problems=tuple(totals.problems),
    )
