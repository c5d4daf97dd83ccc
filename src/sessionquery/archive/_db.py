"""The archive's one SQLite file: content-addressed compressed blobs and the manifest.

Invariants:

* a blob's key is the SHA-256 of its raw (uncompressed) bytes, so bytes that several units
  share (a renamed or copied transcript) are stored once; every read checks the bytes against
  the key, so damage is reported, never served;
* a *unit* is one archived source unit (a transcript file, a side file its parser reads, or
  one session's rows of an agent's database as the importer's normalised document): a row naming its
  source, root and source-relative key, the stamp and size of the source bytes it holds, and
  an ordered list of *segments*, each a blob plus the range of source bytes it came from and
  their hash (equal to the blob's key unless the archive holds a transformed, e.g. redacted,
  form);
* every change of a unit (its segments, its row, the blobs it needs and the blobs nothing
  references any more) is one transaction: a killed process leaves the old or the new state
  of each unit, never a torn one (SQLite's journal, ``synchronous = FULL``);
* the file carries ``application_id`` ``SQAR`` and a schema version; a file that is not ours
  is refused with ``INVALID_CONFIG`` and never written; one of a newer schema is refused too
  (the archive is not derived data and is never rebuilt).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sessionquery import _forks
from sessionquery.archive import _codec
from sessionquery.errors import ErrorCode, PersistenceCorrupt, SessionQueryError

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "ArchiveDb", "NewBlob", "Segment", "Unit"]

APPLICATION_ID = 0x53514152
"""``PRAGMA application_id`` of an archive (ASCII ``SQAR``)."""

SCHEMA_VERSION = 1

_BUSY_MS = 10_000
_WAL_LIMIT = 4 << 20
"""The write-ahead log is truncated back to this size after a checkpoint."""
_SQLITE_MAGIC = b"SQLite format 3\x00"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS blobs ("
    " key TEXT PRIMARY KEY, codec TEXT NOT NULL, size INTEGER NOT NULL,"
    " data BLOB NOT NULL) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS units ("
    " id INTEGER PRIMARY KEY, source TEXT NOT NULL, root TEXT NOT NULL, rel TEXT NOT NULL,"
    " stamp TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, head TEXT,"
    " form TEXT NOT NULL, archived_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,"
    " gone_at INTEGER, role TEXT NOT NULL, UNIQUE (source, root, rel))",
    "CREATE INDEX IF NOT EXISTS units_head ON units (head)",
    "CREATE TABLE IF NOT EXISTS segments ("
    " unit INTEGER NOT NULL, position INTEGER NOT NULL, blob TEXT NOT NULL,"
    " size INTEGER NOT NULL, src_offset INTEGER NOT NULL, src_size INTEGER NOT NULL,"
    " src_key TEXT NOT NULL, PRIMARY KEY (unit, position)) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS segments_blob ON segments (blob)",
)

_UNIT_COLUMNS = (
    "id, source, root, rel, stamp, size, mtime_ns, head, form, archived_at, updated_at, gone_at,"
    " role"
)


@dataclass(frozen=True, slots=True)
class Segment:
    """One stored piece of a unit: a blob and the source bytes it came from."""

    blob: str
    size: int
    src_offset: int
    src_size: int
    src_key: str


@dataclass(frozen=True, slots=True)
class NewBlob:
    """A blob to store: its key (SHA-256 of ``raw``), codec and stored bytes."""

    key: str
    codec: str
    size: int
    data: bytes

    @classmethod
    def of(cls, raw: bytes) -> NewBlob:
        """Compress ``raw`` into a new blob."""
        codec, data = _codec.compress(raw)
        return cls(hashlib.sha256(raw).hexdigest(), codec, len(raw), data)


@dataclass(frozen=True, slots=True)
class Unit:
    """One archived unit's row (its segments are read separately).

    Attributes:
        id: row id.
        source: the importer kind (``claude``, ``codex``...).
        root: the source's root directory (absolute) or database path.
        rel: the unit's key inside the source (a relative path for file importers).
        stamp: the source stamp whose bytes the unit holds (``dev:ino:size:mtime_ns:ctime_ns``
            for files).
        size: source bytes held.
        mtime_ns: the source's modification time when archived (its last activity).
        head: SHA-256 of the unit's first line, to find copies and renames.
        form: ``raw``, or the transformation applied (``redacted:<fingerprint>``).
        archived_at: when the unit was first archived (epoch ms).
        updated_at: when it last changed (epoch ms).
        gone_at: when an archive run found its source gone (epoch ms), else ``None``.
        role: ``transcript``, or ``side`` for context the importer's parser reads.
    """

    id: int
    source: str
    root: str
    rel: str
    stamp: str
    size: int
    mtime_ns: int
    head: str | None
    form: str
    archived_at: int
    updated_at: int
    gone_at: int | None
    role: str = "transcript"


def _refuse(path: Path, detail: str) -> SessionQueryError:
    return SessionQueryError(
        ErrorCode.INVALID_CONFIG,
        f"archive {str(path)!r} {detail}; refusing to use or change it",
    )


def _check_foreign(path: Path) -> None:
    try:
        with path.open("rb") as handle:
            head = handle.read(100)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _refuse(path, f"cannot be read ({exc.strerror})") from None
    if not head:
        return
    if not head.startswith(_SQLITE_MAGIC) or len(head) < 72:
        raise _refuse(path, "is not a SQLite database")
    app_id = int.from_bytes(head[68:72], "big")
    if app_id != APPLICATION_ID:
        raise _refuse(path, f"belongs to another application (application_id {app_id:#x})")


class ArchiveDb:
    """The connection to one archive file and its transactions (thread-safe).

    Args:
        path: the archive file (created ``0600`` in a ``0700`` folder when missing and
            ``create`` is true).
        create: create the file when it is missing; else a missing file is
            ``INVALID_CONFIG``.

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` for a file that is not an archive (or of a newer
            schema), ``PERSISTENCE_FAILED`` when it cannot be opened.
    """

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True) -> None:
        self._path = Path(path)
        self._lock = threading.RLock()
        _check_foreign(self._path)
        if not create and not self._path.is_file():
            raise _refuse(self._path, "does not exist")
        try:
            self._conn = self._connect()
            _forks.register(self)
        except sqlite3.Error as exc:
            raise SessionQueryError(
                ErrorCode.PERSISTENCE_FAILED, f"cannot open archive {str(self._path)!r}: {exc}"
            ) from None

    @property
    def path(self) -> Path:
        """The archive file."""
        return self._path

    def _connect(self) -> sqlite3.Connection:
        fresh = not self._path.exists()
        if fresh:
            self._path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            descriptor = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.close(descriptor)
        conn = sqlite3.connect(
            self._path, timeout=_BUSY_MS / 1000, check_same_thread=False, isolation_level=None
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_MS}")
            conn.execute("PRAGMA synchronous = FULL")
            (app_id,) = conn.execute("PRAGMA application_id").fetchone()
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            if app_id == APPLICATION_ID and version > SCHEMA_VERSION:
                raise _refuse(self._path, f"has schema version {version}, newer than this one")
            if app_id != APPLICATION_ID:
                # Before the first table: pruning can then give pages back to the system.
                conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
                # Before the switch to WAL, so the mark is in the file's header at once.
                conn.execute("BEGIN IMMEDIATE")
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                conn.execute("COMMIT")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(f"PRAGMA journal_size_limit = {_WAL_LIMIT}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _forked(self) -> None:
        """In a forked child (:mod:`sessionquery._forks`): a connection of its own."""
        self._lock = threading.RLock()
        _forks.set_aside(self._conn)
        try:
            self._conn = self._connect()
        except sqlite3.Error:
            # Every use then fails with PERSISTENCE_FAILED: this child cannot read the archive.
            self._conn = sqlite3.connect(":memory:", check_same_thread=False)

    def close(self) -> None:
        """Close the connection; idempotent."""
        with self._lock:
            self._conn.close()

    @contextmanager
    def _failing(self, what: str) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise SessionQueryError(
                    ErrorCode.PERSISTENCE_FAILED,
                    f"archive {str(self._path)!r}: cannot {what}: {exc}",
                ) from None

    @contextmanager
    def _transaction(self, what: str) -> Iterator[sqlite3.Connection]:
        with self._failing(what) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # -- reading

    def data_version(self) -> int:
        """A number that changes whenever another connection commits a change."""
        with self._failing("read its version") as conn:
            (value,) = conn.execute("PRAGMA data_version").fetchone()
            return int(value)

    def units(self, source: str | None = None, root: str | None = None) -> list[Unit]:
        """Every unit (of one source and root when given), by id."""
        sql = f"SELECT {_UNIT_COLUMNS} FROM units"
        params: tuple[str, ...] = ()
        if source is not None and root is not None:
            sql += " WHERE source = ? AND root = ?"
            params = (source, root)
        with self._failing("list its units") as conn:
            rows = conn.execute(sql + " ORDER BY id", params).fetchall()
        return [Unit(*row) for row in rows]

    def unit(self, source: str, root: str, rel: str) -> Unit | None:
        """One unit's row, or ``None``."""
        with self._failing("read a unit") as conn:
            row = conn.execute(
                f"SELECT {_UNIT_COLUMNS} FROM units WHERE source = ? AND root = ? AND rel = ?",
                (source, root, rel),
            ).fetchone()
        return None if row is None else Unit(*row)

    def with_head(self, head: str, form: str, max_size: int) -> list[Unit]:
        """Units of the same first line and form holding at most ``max_size`` source bytes,
        largest first (copy and rename candidates)."""
        with self._failing("look up copies") as conn:
            rows = conn.execute(
                f"SELECT {_UNIT_COLUMNS} FROM units WHERE head = ? AND form = ? AND size <= ?"
                " ORDER BY size DESC, id LIMIT 4",
                (head, form, max_size),
            ).fetchall()
        return [Unit(*row) for row in rows]

    def segments(self, unit_id: int) -> list[Segment]:
        """A unit's segments in order."""
        with self._failing("read segments") as conn:
            rows = conn.execute(
                "SELECT blob, size, src_offset, src_size, src_key FROM segments"
                " WHERE unit = ? ORDER BY position",
                (unit_id,),
            ).fetchall()
        return [Segment(*row) for row in rows]

    def has_blobs(self, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` are stored."""
        wanted = list(dict.fromkeys(keys))
        found: set[str] = set()
        with self._failing("look up blobs") as conn:
            for key in wanted:
                if conn.execute("SELECT 1 FROM blobs WHERE key = ?", (key,)).fetchone():
                    found.add(key)
        return found

    def blob(self, key: str) -> bytes:
        """A blob's raw bytes, checked against its key.

        Raises:
            PersistenceCorrupt: the blob is missing or its bytes do not match its key.
        """
        with self._failing("read a blob") as conn:
            row = conn.execute("SELECT codec, data FROM blobs WHERE key = ?", (key,)).fetchone()
        if row is None:
            raise PersistenceCorrupt(f"archive {str(self._path)!r}: blob {key} is missing")
        try:
            raw = _codec.decompress(str(row[0]), bytes(row[1]))
        except ValueError as exc:
            raise PersistenceCorrupt(f"archive {str(self._path)!r}: blob {key}: {exc}") from None
        if hashlib.sha256(raw).hexdigest() != key:
            raise PersistenceCorrupt(f"archive {str(self._path)!r}: blob {key} is damaged")
        return raw

    def totals(self) -> tuple[int, int, int]:
        """``(blobs, stored bytes, raw bytes of the distinct blobs)``."""
        with self._failing("count its blobs") as conn:
            count, stored, raw = conn.execute(
                "SELECT count(*), coalesce(sum(length(data)), 0), coalesce(sum(size), 0) FROM blobs"
            ).fetchone()
        return int(count), int(stored), int(raw)

    # -- writing

    def put_unit(
        self,
        row: Unit,
        segments: Sequence[Segment],
        blobs: Sequence[NewBlob],
    ) -> None:
        """Store one unit's new state, the blobs it needs and drop the blobs nothing references
        any more, in one transaction (``row.id`` is ignored for a unit not stored yet)."""
        with self._transaction("store a unit") as conn:
            for blob in blobs:
                conn.execute(
                    "INSERT OR IGNORE INTO blobs VALUES (?, ?, ?, ?)",
                    (blob.key, blob.codec, blob.size, blob.data),
                )
            found = conn.execute(
                "SELECT id FROM units WHERE source = ? AND root = ? AND rel = ?",
                (row.source, row.root, row.rel),
            ).fetchone()
            values = (
                row.stamp,
                row.size,
                row.mtime_ns,
                row.head,
                row.form,
                row.updated_at,
                row.gone_at,
                row.role,
            )
            if found is None:
                cursor = conn.execute(
                    "INSERT INTO units (source, root, rel, stamp, size, mtime_ns, head, form,"
                    " updated_at, gone_at, role, archived_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (row.source, row.root, row.rel, *values, row.archived_at),
                )
                unit_id = cursor.lastrowid
                old: list[str] = []
                start = 0
            else:
                unit_id = int(found[0])
                conn.execute(
                    "UPDATE units SET stamp = ?, size = ?, mtime_ns = ?, head = ?, form = ?,"
                    " updated_at = ?, gone_at = ?, role = ? WHERE id = ?",
                    (*values, unit_id),
                )
                stored = [
                    Segment(*row)
                    for row in conn.execute(
                        "SELECT blob, size, src_offset, src_size, src_key FROM segments"
                        " WHERE unit = ? ORDER BY position",
                        (unit_id,),
                    ).fetchall()
                ]
                # Only the rows from the first changed position on are rewritten, so an
                # appended line touches a few pages however many segments the unit has.
                first = 0
                while first < min(len(stored), len(segments)) and stored[first] == segments[first]:
                    first += 1
                old = [segment.blob for segment in stored[first:]]
                conn.execute(
                    "DELETE FROM segments WHERE unit = ? AND position >= ?", (unit_id, first)
                )
                segments = segments[first:]
                start = first
            conn.executemany(
                "INSERT INTO segments VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (unit_id, position, s.blob, s.size, s.src_offset, s.src_size, s.src_key)
                    for position, s in enumerate(segments, start)
                ],
            )
            _drop_orphans(conn, old)

    def set_gone(self, unit_ids: Iterable[int], at: int | None) -> None:
        """Record that these units' sources are gone (``at``) or back (``None``)."""
        ids = list(unit_ids)
        if not ids:
            return
        with self._transaction("mark units") as conn:
            conn.executemany("UPDATE units SET gone_at = ? WHERE id = ?", [(at, i) for i in ids])

    def remove_units(self, unit_ids: Iterable[int]) -> None:
        """Delete units, their segments and the blobs nothing else references."""
        ids = list(unit_ids)
        if not ids:
            return
        with self._transaction("remove units") as conn:
            old: list[str] = []
            for unit_id in ids:
                old += [
                    str(key)
                    for (key,) in conn.execute(
                        "SELECT blob FROM segments WHERE unit = ?", (unit_id,)
                    ).fetchall()
                ]
                conn.execute("DELETE FROM segments WHERE unit = ?", (unit_id,))
                conn.execute("DELETE FROM units WHERE id = ?", (unit_id,))
            _drop_orphans(conn, old)

    def checkpoint(self, *, vacuum: bool = False) -> None:
        """Move the write-ahead log into the main file and, with ``vacuum``, give the pages
        freed by removed units back to the file system (best effort)."""
        with self._lock:
            try:
                if vacuum:
                    # executescript steps the pragma to its end (execute frees one page).
                    self._conn.executescript("PRAGMA incremental_vacuum;")
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error:
                pass


def _drop_orphans(conn: sqlite3.Connection, keys: Iterable[str]) -> None:
    for key in set(keys):
        if conn.execute("SELECT 1 FROM segments WHERE blob = ? LIMIT 1", (key,)).fetchone():
            continue
        conn.execute("DELETE FROM blobs WHERE key = ?", (key,))
