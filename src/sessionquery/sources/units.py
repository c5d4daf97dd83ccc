"""Raw units: what an importer reads, one stamped piece at a time (part of the importer seam).

A *unit* is the smallest thing a source can tell changed: one transcript file, or one
session's rows of an agent's database. A :class:`UnitStore` enumerates the units of one source
location with a **stamp** each (equal stamps ⇒ equal bytes) and hands out their bytes; the
catalog (:mod:`._catalog`) parses units into sessions and caches what each yields by stamp.
The archive reads the same units to keep copies, and can give the catalog a store of its own
(for instance its archived copies beside the live ones) to parse them exactly as the importer
parses its source.

* A unit's ``key`` is stable for the unit's lifetime and never empty: a ``/``-separated path
  relative to the source root for files, ``session/<id>`` for database rows.
* A unit's ``role`` is ``transcript`` (parsed into sessions) or ``side`` (read by parsers as
  context, such as Gemini's project registry; never listed as a session).
* :class:`FileTree` keeps the safety rules of :mod:`._files`: regular files only, links followed
  only inside the root (unless allowed), a size cap, opened non-blocking.
"""

from __future__ import annotations

import os
import stat as stat_module
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from sessionquery.sources._common import Problem
from sessionquery.sources._files import FileStamp, SkippedFile, read_regular

__all__ = ["ArchiveBacked", "FileTree", "Role", "SkippedFile", "Unit", "UnitStore"]

Role = Literal["transcript", "side"]
"""``transcript``: parsed into sessions; ``side``: context that parsers may read."""


@dataclass(frozen=True, slots=True)
class Unit:
    """One raw unit of a source.

    Attributes:
        key: its stable, non-empty name inside the source (a relative ``/`` path for files).
        stamp: an opaque token; equal stamps of one key mean equal bytes.
        size: its size in bytes, when known.
        role: ``transcript`` or ``side``.
    """

    key: str
    stamp: str
    size: int | None = None
    role: Role = "transcript"


@runtime_checkable
class UnitStore(Protocol):
    """The raw units of one source location (a folder, or a database)."""

    @property
    def location(self) -> Path:
        """The folder or database file this store reads (absolute)."""
        ...

    def fingerprint(self) -> str | None:
        """A token that is cheap to read and changes whenever any unit may have changed, or
        ``None`` when the store cannot offer one (then every listing calls :meth:`scan`)."""
        ...

    def scan(self) -> tuple[list[Unit], list[Problem]]:
        """Every unit (sorted by key) and a problem for each thing left out."""
        ...

    def stat(self, key: str) -> Unit | None:
        """One unit's current stamp (cheap), or ``None`` when it is gone."""
        ...

    def read(self, key: str, max_bytes: int) -> tuple[bytes, Unit]:
        """A unit's bytes and its stamp at the time they were read.

        Raises:
            SkippedFile: the unit cannot be read (gone, not regular, too big, locked...); the
                message says why.
        """
        ...

    def where(self, key: str) -> str:
        """What a problem about ``key`` names: an absolute file path (for a row, the database
        file's path)."""
        ...


@runtime_checkable
class ArchiveBacked(Protocol):
    """A unit store that serves some units from an archive (``sessionquery.archive``): the
    ones gone from the source."""

    def served(self) -> frozenset[str]:
        """The keys its last :meth:`UnitStore.scan` served from the archive."""
        ...


Select = Callable[[str, bool], Role | None]
"""``(relative path, is a folder) -> role`` for a file (``None``: not a unit); for a folder,
any non-``None`` value means "walk into it"."""


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class FileTree:
    """The files under one folder that ``select`` picks, each a unit stamped by its stat.

    Args:
        root: the folder.
        select: which files are units (and of which role), and which folders to walk.
        follow_outside_links: follow symbolic links that leave ``root``.
    """

    def __init__(self, root: Path, select: Select, *, follow_outside_links: bool = False) -> None:
        self._root = root.absolute()
        self._select = select
        self._follow = follow_outside_links
        self._roles: dict[str, Role] = {}

    @property
    def location(self) -> Path:
        """The folder."""
        return self._root

    def fingerprint(self) -> str | None:
        """Always ``None``: a folder tree has no cheap whole-tree stamp."""
        return None

    def where(self, key: str) -> str:
        """The file's absolute path."""
        return str(self._root / key)

    def scan(self) -> tuple[list[Unit], list[Problem]]:
        """Every selected file (sorted), and a problem for each one skipped."""
        root = self._root
        if not root.is_dir():
            return [], [Problem(str(root), None, "not a directory; no sessions imported")]
        real_root = os.path.realpath(root)
        found: list[Unit] = []
        problems: list[Problem] = []
        visited: set[tuple[int, int]] = set()
        try:
            top = os.stat(root)
            visited.add((top.st_dev, top.st_ino))
        except OSError:
            pass
        self._walk(str(root), "", real_root, visited, found, problems)
        found.sort(key=lambda unit: unit.key)
        self._roles = {unit.key: unit.role for unit in found}
        return found, problems

    def _walk(  # noqa: PLR0917 - the walk's state, passed down
        self,
        folder: str,
        prefix: str,
        real_root: str,
        visited: set[tuple[int, int]],
        found: list[Unit],
        problems: list[Problem],
    ) -> None:
        try:
            with os.scandir(folder) as scan:
                entries = sorted(scan, key=lambda e: e.name)
        except OSError as exc:
            problems.append(Problem(folder, None, f"cannot list folder: {exc.strerror}; skipped"))
            return
        for entry in entries:
            rel = f"{prefix}{entry.name}"
            try:
                is_dir = entry.is_dir()
                role = self._select(rel, is_dir)
                if role is None:
                    continue
                if (
                    entry.is_symlink()
                    and not self._follow
                    and not _inside(os.path.realpath(entry.path), real_root)
                ):
                    message = "link leaves the source folder; skipped"
                    problems.append(Problem(entry.path, None, message))
                    continue
                info = entry.stat()
            except OSError as exc:
                message = f"cannot read file: {exc.strerror or exc}; skipped"
                problems.append(Problem(entry.path, None, message))
                continue
            if is_dir:
                if (info.st_dev, info.st_ino) not in visited:
                    visited.add((info.st_dev, info.st_ino))
                    self._walk(entry.path, f"{rel}/", real_root, visited, found, problems)
                continue
            if not stat_module.S_ISREG(info.st_mode):
                problems.append(Problem(entry.path, None, "not a regular file; skipped"))
                continue
            stamp = FileStamp.of(info)
            found.append(Unit(rel, stamp.revision, stamp.size, role))

    def stat(self, key: str) -> Unit | None:
        """The file's current stamp, or ``None`` when it is gone or not a regular file."""
        try:
            info = os.stat(self._root / key)
        except (OSError, ValueError):
            return None
        if not stat_module.S_ISREG(info.st_mode):
            return None
        stamp = FileStamp.of(info)
        return Unit(key, stamp.revision, stamp.size, self._roles.get(key, "transcript"))

    def read(self, key: str, max_bytes: int) -> tuple[bytes, Unit]:
        """The file's bytes and stamp (see :func:`._files.read_regular`).

        Raises:
            SkippedFile: not a regular file, too big, or unreadable.
        """
        data, stamp = read_regular(self._root / key, max_bytes)
        return data, Unit(key, stamp.revision, stamp.size, self._roles.get(key, "transcript"))
