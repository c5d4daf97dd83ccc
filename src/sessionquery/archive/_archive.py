"""The archive: runs that copy sources' raw units in, status, retention, reads back.

Invariants:

* one run at a time per archive (an advisory lock on ``archive.lock``, released by the kernel
  when a process dies); a run that must not wait (``wait=False``, the archive on every index
  update) skips when another holds it;
* a unit whose source stamp is the one archived is not opened: an unchanged history costs one
  ``stat`` per file;
* each unit is stored in one transaction (:mod:`._db`), so a run killed at any point leaves
  every unit either as it was or fully updated, and the next run completes the rest;
* one unreadable source file is a problem of the run, never its failure;
* retention (``keep_days``) keeps units whose source changed within that many days: older
  ones are neither archived nor kept. Without it the archive keeps everything forever.
"""

from __future__ import annotations

import fcntl
import os
import stat as stat_module
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sessionquery.archive._db import ArchiveDb, Unit
from sessionquery.archive._segments import RAW, Form, Plan, head_of, is_appended, plan
from sessionquery.archive._units import ArchivedUnits
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.sources._common import Problem
from sessionquery.sources._files import FileStamp
from sessionquery.sources.units import FileTree, SkippedFile, UnitStore
from sessionquery.sources.units import Unit as SourceUnit

__all__ = [
    "ARCHIVE_FILE",
    "Archive",
    "ArchiveReport",
    "ArchiveStatus",
    "RescuedUnit",
    "SourceUnits",
]

ARCHIVE_FILE = "archive.sqlite3"
_LOCK_FILE = "archive.lock"
_DAY_MS = 86_400_000
_CHECKPOINT_BYTES = 64 << 10


@dataclass(frozen=True, slots=True)
class SourceUnits:
    """One source to archive: its importer kind and its raw units (the store its catalog
    reads, :meth:`sessionquery.sources.registry.SourceKind.units`).

    Attributes:
        kind: the importer kind (``claude``, ``codex``, ``opencode``...).
        store: its units.
    """

    kind: str
    store: UnitStore

    @property
    def root(self) -> Path:
        """The source's folder or database file."""
        return self.store.location

    def units(self) -> tuple[list[SourceUnit], list[Problem]]:
        """Every unit with its stamp (none when the location is gone), and the problems."""
        if not self.store.location.exists():
            return [], []
        return self.store.scan()


@dataclass(frozen=True, slots=True)
class ArchiveReport:
    """What one archive run did.

    Attributes:
        units: source units looked at.
        stored: units whose new bytes were stored (new or grown).
        unchanged: units whose stamp was the archived one.
        gone: archived units whose source was found gone in this run.
        written: compressed bytes of the blobs this run wrote.
        pruned: units removed by retention.
        skipped: ``True`` when another run held the archive and this one did nothing.
        problems: source units that could not be read.
    """

    units: int = 0
    stored: int = 0
    unchanged: int = 0
    gone: int = 0
    written: int = 0
    pruned: int = 0
    skipped: bool = False
    problems: tuple[Problem, ...] = ()


@dataclass(frozen=True, slots=True)
class RescuedUnit:
    """An archived unit whose source is gone: it is read from the archive."""

    source: str
    root: str
    rel: str
    size: int
    modified_at: int  # epoch ms of the source's last change
    gone_at: int | None


@dataclass(frozen=True, slots=True)
class ArchiveStatus:
    """What the archive holds.

    Attributes:
        path: the archive file.
        units: archived units (files).
        source_bytes: source bytes they hold.
        stored_bytes: compressed bytes of their (distinct) blobs.
        file_bytes: size of the archive file on disk.
        oldest: the oldest last-change time among them (epoch ms), or ``None``.
        rescued: the units whose source is gone.
    """

    path: Path
    units: int
    source_bytes: int
    stored_bytes: int
    file_bytes: int
    oldest: int | None
    rescued: tuple[RescuedUnit, ...]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class Archive:
    """An archive of imported sessions' raw units under one folder.

    Args:
        folder: the archive folder (``<data home>/archive``); created ``0700`` when missing
            and ``create`` is true.
        create: create it when missing (else a missing archive is ``INVALID_CONFIG``).
        form: how units are stored (raw bytes by default; see ``docs/archive.md`` for
            redaction).
        keep_days: retention in days, or ``None`` to keep everything.
        clock: epoch milliseconds (injected by tests).

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` for a file that is not an archive, or
            ``keep_days`` that is not a positive integer; ``PERSISTENCE_FAILED`` when it
            cannot be opened.
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        create: bool = True,
        form: Form = RAW,
        keep_days: int | None = None,
        clock: Callable[[], int] = _now_ms,
    ) -> None:
        if keep_days is not None and (type(keep_days) is not int or keep_days < 1):
            raise SessionQueryError(
                ErrorCode.INVALID_CONFIG,
                f"archive retention must be a positive number of days, not {keep_days!r}",
            )
        self._folder = Path(folder).absolute()
        self._db = ArchiveDb(self._folder / ARCHIVE_FILE, create=create)
        self._form = form
        self._keep_days = keep_days
        self._clock = clock

    @property
    def folder(self) -> Path:
        """The archive folder."""
        return self._folder

    def close(self) -> None:
        """Close the archive file; idempotent."""
        self._db.close()

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- reading

    def units_of(self, kind: str, store: UnitStore) -> ArchivedUnits:
        """The importer view of ``store`` with this archive behind it (for
        :meth:`~sessionquery.sources._catalog.Catalog.use_units`)."""
        return ArchivedUnits(store, self._db, kind, self.read_unit)

    def holds(self, kind: str, location: Path) -> bool:
        """Whether the archive holds units of the source of ``kind`` at ``location``."""
        return bool(self._db.units(kind, str(location.absolute())))

    def read_unit(self, unit: Unit) -> bytes:
        """All bytes of one archived unit.

        Raises:
            PersistenceCorrupt: a blob is missing or damaged.
        """
        return b"".join(self._db.blob(segment.blob) for segment in self._db.segments(unit.id))

    def read(self, kind: str, root: Path, rel: str) -> bytes | None:
        """The archived bytes of one unit, or ``None`` when it is not archived."""
        unit = self._db.unit(kind, str(root.absolute()), rel)
        return None if unit is None else self.read_unit(unit)

    def units(self) -> list[Unit]:
        """Every archived unit."""
        return self._db.units()

    # -- running

    @contextmanager
    def _locked(self, *, wait: bool) -> Iterator[bool]:
        path = self._folder / _LOCK_FILE
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(descriptor)

    def run(
        self,
        sources: Sequence[SourceUnits],
        *,
        wait: bool = True,
        progress: Callable[[int, int], None] | None = None,
    ) -> ArchiveReport:
        """Bring the archive up to date with ``sources``.

        Args:
            sources: what to archive.
            wait: wait for another run to finish (else skip, ``report.skipped``).
            progress: called with ``(done, total)`` units.

        Raises:
            SessionQueryError: ``PERSISTENCE_FAILED`` when the archive cannot be written.
        """
        with self._locked(wait=wait) as held:
            if not held:
                return ArchiveReport(skipped=True)
            return self._run(sources, progress)

    def _run(
        self, sources: Sequence[SourceUnits], progress: Callable[[int, int], None] | None
    ) -> ArchiveReport:
        now = self._clock()
        cutoff = None if self._keep_days is None else now - self._keep_days * _DAY_MS
        listed = [(source, *source.units()) for source in sources]
        total = sum(len(units) for _, units, _ in listed)
        done = stored = unchanged = gone = written = 0
        problems: list[Problem] = []
        form = self._form.name
        for source, units, unit_problems in listed:
            problems += unit_problems
            root = str(source.root.absolute())
            known = {unit.rel: unit for unit in self._db.units(source.kind, root)}
            back: list[int] = []
            for found in units:
                done += 1
                unit = known.get(found.key)
                if unit is not None and (unit.stamp, unit.form) == (found.stamp, form):
                    unchanged += 1
                    if unit.gone_at is not None:
                        back.append(unit.id)
                else:
                    try:
                        bytes_written = self._store(source, found, unit, now, cutoff)
                    except (OSError, SkippedFile) as exc:
                        reason = exc.strerror if isinstance(exc, OSError) else str(exc)
                        where = source.store.where(found.key)
                        problems.append(Problem(where, None, f"cannot archive: {reason}"))
                    else:
                        if bytes_written is not None:
                            written += bytes_written
                            stored += 1
                if progress is not None:
                    progress(done, total)
            present = {found.key for found in units}
            newly_gone = [
                u.id for rel, u in known.items() if rel not in present and u.gone_at is None
            ]
            self._db.set_gone(newly_gone, now)
            self._db.set_gone(back, None)
            gone += len(newly_gone)
        pruned = self._prune(cutoff) if cutoff is not None else 0
        if written >= _CHECKPOINT_BYTES or pruned:
            # After a big run only: a small one (an appended line) leaves its few pages in
            # the write-ahead log, which SQLite folds in once it has grown.
            self._db.checkpoint(vacuum=bool(pruned))
        return ArchiveReport(
            units=total,
            stored=stored,
            unchanged=unchanged,
            gone=gone,
            written=written,
            pruned=pruned,
            problems=tuple(problems),
        )

    def _store(
        self,
        source: SourceUnits,
        found: SourceUnit,
        unit: Unit | None,
        now: int,
        cutoff: int | None,
    ) -> int | None:
        """Store one changed unit; its compressed bytes written, or ``None`` when retention
        leaves it out (its source last changed before ``cutoff``)."""
        with _reading(source.store, found.key) as (read, size, stamp, mtime_ns):
            if cutoff is not None and mtime_ns // 1_000_000 < cutoff:
                return None
            chosen = self._plan(read, size, unit, is_appended(found.key))
            head = head_of(read) if size else None
        row = Unit(
            id=0 if unit is None else unit.id,
            source=source.kind,
            root=str(source.root.absolute()),
            rel=found.key,
            stamp=stamp,
            size=chosen.size,
            mtime_ns=mtime_ns,
            head=head,
            form=self._form.name,
            archived_at=now if unit is None else unit.archived_at,
            updated_at=now,
            gone_at=None,
            role=found.role,
        )
        self._db.put_unit(row, chosen.segments, chosen.blobs)
        return chosen.written

    def _plan(
        self, read: Callable[[int, int], bytes], size: int, unit: Unit | None, appended: bool
    ) -> Plan:
        own = (
            self._db.segments(unit.id) if unit is not None and unit.form == self._form.name else []
        )
        best = plan(read, size, own, self._form, known=self._db.has_blobs, appended=appended)
        if best.kept or not size:
            return best
        # Nothing of its own to extend: maybe a copy or rename of a stored unit.
        for candidate in self._db.with_head(head_of(read), self._form.name, size):
            if unit is not None and candidate.id == unit.id:
                continue
            other = plan(
                read,
                size,
                self._db.segments(candidate.id),
                self._form,
                known=self._db.has_blobs,
                appended=appended,
            )
            if other.kept and other.written < best.written:
                best = other
        return best

    # -- retention and status

    def prune(self, older_than_days: int) -> int:
        """Remove every unit whose source last changed more than ``older_than_days`` ago.

        Raises:
            SessionQueryError: ``INVALID_CONFIG`` for a number of days that is not a
                positive integer; ``PERSISTENCE_FAILED`` when the archive cannot be written.
        """
        if type(older_than_days) is not int or older_than_days < 1:
            raise SessionQueryError(
                ErrorCode.INVALID_CONFIG,
                f"--prune-older-than takes a positive number of days, not {older_than_days!r}",
            )
        with self._locked(wait=True):
            count = self._prune(self._clock() - older_than_days * _DAY_MS)
            self._db.checkpoint(vacuum=True)
            return count

    def _prune(self, cutoff: int) -> int:
        old = [unit.id for unit in self._db.units() if unit.mtime_ns // 1_000_000 < cutoff]
        self._db.remove_units(old)
        return len(old)

    def status(self) -> ArchiveStatus:
        """Counts, sizes, the oldest unit and what was rescued."""
        units = self._db.units()
        _blobs, stored, _raw = self._db.totals()
        files = [self._db.path, Path(f"{self._db.path}-wal")]
        file_bytes = sum(path.stat().st_size for path in files if path.exists())
        rescued = tuple(
            RescuedUnit(u.source, u.root, u.rel, u.size, u.mtime_ns // 1_000_000, u.gone_at)
            for u in units
            if u.gone_at is not None or _gone(Path(u.root), u.rel)
        )
        return ArchiveStatus(
            path=self._db.path,
            units=len(units),
            source_bytes=sum(u.size for u in units),
            stored_bytes=stored,
            file_bytes=file_bytes,
            oldest=min((u.mtime_ns // 1_000_000 for u in units), default=None),
            rescued=rescued,
        )


def _gone(root: Path, rel: str) -> bool:
    """Whether a unit's source is gone as far as the file system tells: its location, or
    its file under a folder (a database's rows are known gone from a run's scan)."""
    if not root.exists():
        return True
    return root.is_dir() and not (root / rel).exists()


_MAX_UNIT_BYTES = 1 << 30
"""A unit read into memory (a database's session document) is refused beyond this."""

_Read = Callable[[int, int], bytes]


@contextmanager
def _reading(store: UnitStore, key: str) -> Iterator[tuple[_Read, int, str, int]]:
    """``(read, size, stamp, mtime_ns)`` of one unit. A file is read in place a segment at a
    time (never a FIFO or a device); other units (a database's session document) are read
    whole through the store, and their change time is now.

    Raises:
        OSError, SkippedFile: the unit cannot be read.
    """
    if isinstance(store, FileTree):
        descriptor = os.open(store.where(key), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            info = os.fstat(descriptor)
            if not stat_module.S_ISREG(info.st_mode):
                raise OSError(0, "not a regular file")

            def read(offset: int, length: int) -> bytes:
                return os.pread(descriptor, length, offset)

            yield read, info.st_size, FileStamp.of(info).revision, info.st_mtime_ns
        finally:
            os.close(descriptor)
        return
    data, unit = store.read(key, _MAX_UNIT_BYTES)
    yield (
        (lambda offset, length: data[offset : offset + length]),
        len(data),
        unit.stamp,
        (time.time_ns()),
    )
