"""Tables, migrations and the encoding of rows of the PostgreSQL session store."""

from __future__ import annotations

import errno
import hashlib
import json
import secrets
from dataclasses import dataclass
from typing import Any, Final

import psycopg

from sessionquery.errors import PersistenceCorrupt, PersistenceError, PersistenceWriteFailed
from sessionquery.model import SessionEvent, SessionHeader

__all__ = [
    "IDLE_CONNECTIONS",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "StoreProblem",
    "advisory_key",
    "check_id",
    "dumps",
    "migrate",
    "parse_event",
    "parse_header",
    "write_failed",
]

_LOCK_NAMESPACE: Final = b"sessionquery.session:"
IDLE_CONNECTIONS: Final = 8
"""Writer connections kept open for reuse after their handle closed."""
_MIGRATION_LOCK: Final = 0x5351_4D49_4752_0001
"""Advisory lock serialising migrations across processes."""


def advisory_key(store_id: str, session_id: str) -> int:
    """The signed 64-bit advisory-lock key of one session of one store (stable across
    processes; stores in other schemas of the same database get other keys)."""
    name = f"{store_id}:{session_id}".encode()
    digest = hashlib.blake2b(_LOCK_NAMESPACE + name, digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


# --------------------------------------------------------------------------- migrations

_M001_INITIAL: Final = (
    """CREATE TABLE sq_store (
        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        store_id text NOT NULL,
        change_counter bigint NOT NULL DEFAULT 0)""",
    """CREATE TABLE sq_sessions (
        id text COLLATE "C" PRIMARY KEY,
        header_json text NOT NULL,
        inherited_event_count integer NOT NULL DEFAULT 0,
        event_count integer NOT NULL DEFAULT 0,
        size_bytes bigint NOT NULL DEFAULT 0,
        revision bigint NOT NULL)""",
    """CREATE TABLE sq_events (
        session_id text COLLATE "C" NOT NULL REFERENCES sq_sessions (id) ON DELETE CASCADE,
        seq integer NOT NULL CHECK (seq >= 0),
        event_json text NOT NULL,
        PRIMARY KEY (session_id, seq))""",
    """CREATE TABLE sq_changes (
        change_id bigint PRIMARY KEY,
        session_id text COLLATE "C" NOT NULL)""",
)

_M002_TEAM: Final = (
    # Team history (sessionquery.team): who pushed a session from which machine, and its team
    # workspace. Rows written by this store's own handles leave them NULL. ``ws``/``mid`` are
    # repeated on every row that row-level security filters, so a policy never joins.
    """CREATE TABLE sq_workspaces (
        id serial PRIMARY KEY,
        name text COLLATE "C" NOT NULL UNIQUE)""",
    """CREATE TABLE sq_machines (
        id serial PRIMARY KEY,
        name text COLLATE "C" NOT NULL UNIQUE,
        owner name NOT NULL)""",
    """CREATE TABLE sq_grants (
        role name NOT NULL,
        workspace text COLLATE "C" NOT NULL,
        PRIMARY KEY (role, workspace))""",
    "ALTER TABLE sq_sessions ADD COLUMN ws integer, ADD COLUMN mid integer, "
    "ADD COLUMN pushed_by name, ADD COLUMN pushed_at timestamptz, "
    "ADD COLUMN source_revision text, ADD COLUMN digest text, ADD COLUMN anchor text",
    "ALTER TABLE sq_events ADD COLUMN ws integer, ADD COLUMN mid integer",
    "ALTER TABLE sq_changes ADD COLUMN ws integer, ADD COLUMN mid integer",
    "CREATE INDEX sq_sessions_mid ON sq_sessions (mid)",
    "ALTER TABLE sq_store ADD COLUMN pruned_through bigint NOT NULL DEFAULT 0",
)

_M003_LISTING: Final = (
    # The listing order and the header fields a listing filters by, as columns written with
    # the header (``create``, a push), so that a page of the listing is one indexed query
    # (``PostgresPersistence.list_newest``). Rows stored before are filled from their headers
    # by :func:`_fill_listing_columns`; a row whose header does not parse keeps NULL there.
    'ALTER TABLE sq_sessions ADD COLUMN created_at bigint, ADD COLUMN cwd text COLLATE "C", '
    'ADD COLUMN parent_session text COLLATE "C"',
    "CREATE INDEX sq_sessions_newest ON sq_sessions (created_at DESC, id)",
)

MIGRATIONS: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    ("m001_initial", _M001_INITIAL),
    ("m002_team", _M002_TEAM),
    ("m003_listing", _M003_LISTING),
)
"""Named, ordered migrations; a shipped one is never edited."""

SCHEMA_VERSION: Final = len(MIGRATIONS)


def migrate(conn: psycopg.Connection[Any]) -> str:
    """Apply pending migrations (serialised across processes); return the store id.

    A store that is already current is only read (a read-only role may open it)."""
    with conn.transaction():
        current = conn.execute("SELECT to_regclass('sq_migrations') IS NOT NULL").fetchone()
        if current and current[0]:
            applied = {str(row[0]) for row in conn.execute("SELECT name FROM sq_migrations")}
            if applied == {name for name, _ in MIGRATIONS}:
                row = conn.execute("SELECT store_id FROM sq_store").fetchone()
                if row is not None:
                    return str(row[0])
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS sq_migrations (name text PRIMARY KEY, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
        applied = {str(row[0]) for row in conn.execute("SELECT name FROM sq_migrations")}
        known = {name for name, _ in MIGRATIONS}
        unknown = sorted(applied - known)
        if unknown:
            raise PersistenceError(
                "the PostgreSQL session store has a newer schema than this version of "
                f"sessionquery understands (migrations {', '.join(unknown)}); upgrade sessionquery"
            )
        for name, statements in MIGRATIONS:
            if name in applied:
                continue
            for statement in statements:
                conn.execute(statement)
            if name == "m001_initial":
                conn.execute("INSERT INTO sq_store (store_id) VALUES (%s)", (secrets.token_hex(8),))
            if name == "m003_listing":
                _fill_listing_columns(conn)
            conn.execute("INSERT INTO sq_migrations (name) VALUES (%s)", (name,))
        row = conn.execute("SELECT store_id FROM sq_store").fetchone()
    assert row is not None
    return str(row[0])


_FILL_CHUNK: Final = 5000


def _fill_listing_columns(conn: psycopg.Connection[Any]) -> None:
    """Copy ``created_at``, ``cwd`` and ``parent_session`` out of every stored header (the
    m003 migration; headers that do not parse are left NULL: listing them still fails as
    before, through the whole listing)."""
    rows = conn.execute("SELECT id, header_json FROM sq_sessions").fetchall()
    for start in range(0, len(rows), _FILL_CHUNK):
        ids, created, cwds, parents = [], [], [], []
        for sid, header_json in rows[start : start + _FILL_CHUNK]:
            try:
                header = parse_header(str(sid), str(header_json))
            except PersistenceCorrupt:
                continue
            ids.append(header.id)
            created.append(header.created_at)
            cwds.append(header.cwd)
            parents.append(header.parent_session)
        conn.execute(
            "UPDATE sq_sessions AS t SET created_at = u.c, cwd = u.w, parent_session = u.p "
            "FROM unnest(%s::text[], %s::bigint[], %s::text[], %s::text[]) AS u(id, c, w, p) "
            "WHERE t.id = u.id",
            (ids, created, cwds, parents),
        )


# --------------------------------------------------------------------------- encoding


def dumps(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: keep them as JSON escapes
        text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text


def check_id(session_id: object) -> str:
    if not isinstance(session_id, str):
        raise ValueError(f"session id must be a string, not {type(session_id).__name__}")
    try:
        session_id.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(
            f"session id {session_id!r} is not valid UTF-8 text and cannot be stored in PostgreSQL"
        ) from None
    if not session_id or "\x00" in session_id:
        raise ValueError(f"invalid session id {session_id!r}")
    return session_id


def parse_header(session_id: str, header_json: str) -> SessionHeader:
    try:
        header = SessionHeader.from_json(json.loads(header_json))
    except (ValueError, TypeError, RecursionError) as exc:
        raise PersistenceCorrupt(f"postgres session {session_id!r} header: {exc}") from None
    if header.id != session_id:
        raise PersistenceCorrupt(f"postgres session {session_id!r} header names {header.id!r}")
    return header


def parse_event(session_id: str, seq: int, event_json: str) -> SessionEvent:
    try:
        event = SessionEvent.from_json(json.loads(event_json))
    except (ValueError, TypeError, RecursionError) as exc:
        raise PersistenceCorrupt(
            f"postgres session {session_id!r} event seq {seq}: {exc}"
        ) from None
    if event.seq != seq:
        raise PersistenceCorrupt(
            f"postgres session {session_id!r} event seq {seq}: the stored event has seq {event.seq}"
        )
    return event


def write_failed(exc: BaseException, doing: str) -> PersistenceWriteFailed:
    return PersistenceWriteFailed(errno.EIO, f"PostgreSQL session store: {doing} failed: {exc}")


@dataclass(frozen=True, slots=True)
class StoreProblem:
    """One finding of :meth:`PostgresPersistence.verify`.

    Attributes:
        session_id: the session concerned.
        seq: the event concerned, or ``None`` for the whole session.
        message: what is wrong, as a sentence.
    """

    session_id: str
    seq: int | None
    message: str
