"""The importers' view of their folder with the archive behind it.

:class:`ArchivedFiles` is what a :class:`~sessionquery.sources._catalog.FileCatalog` lists and
reads through when an archive is attached: the folder's own files, plus every archived file of
the same source and root whose source file no longer exists. Invariants:

* a file that exists is always read from the folder (the archive never hides a newer source);
* an archived file is served with the stamp of the source bytes it holds (for the raw form),
  so its sessions keep their ids (the catalog resolves ids over the same set of files as before
  the purge), their revisions (the search index does not re-index them) and their metadata
  cache rows;
* which files were served from the archive at the last listing is known (``archived``), so the
  listing can mark their sessions.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from sessionquery.archive._db import ArchiveDb, Unit
from sessionquery.sources._common import Problem
from sessionquery.sources._files import FileStamp, SkippedFile, find_files, read_regular

__all__ = ["ArchivedFiles", "served_stamp"]


def served_stamp(unit: Unit) -> FileStamp:
    """The stamp an archived unit is listed with: its source's, for raw bytes; a stamp of its
    own for a transformed form (whose bytes differ from the source's)."""
    if unit.form == "raw":
        try:
            dev, ino, size, mtime_ns, ctime_ns = (int(part) for part in unit.stamp.split(":"))
            return FileStamp(dev, ino, size, mtime_ns, ctime_ns)
        except ValueError:
            pass
    digest = hashlib.sha256(f"{unit.form}\0{unit.updated_at}".encode()).digest()
    return FileStamp(0, unit.id, unit.size, unit.mtime_ns, int.from_bytes(digest[:7], "big"))


class ArchivedFiles:
    """A folder's transcripts, with the archive's copies of the ones that are gone.

    Args:
        db: the archive.
        source: the importer kind the archive files them under.
        root: the source's root directory (absolute).
        read_unit: reads one archived unit's bytes.
    """

    def __init__(
        self, db: ArchiveDb, source: str, root: Path, read_unit: Callable[[Unit], bytes]
    ) -> None:
        self._db = db
        self._source = source
        self._root = root
        self._read_unit = read_unit
        self._lock = threading.Lock()
        self._version: int | None = None
        self._units: dict[str, Unit] = {}
        self._served: frozenset[str] = frozenset()

    def _current(self) -> dict[str, Unit]:
        with self._lock:
            version = self._db.data_version()
            if version != self._version:
                self._units = {u.rel: u for u in self._db.units(self._source, str(self._root))}
                self._version = version
            return self._units

    def keeps(self) -> bool:
        """Whether the archive holds any file of this source."""
        return bool(self._current())

    def find(
        self, root: Path, accept: Callable[[str], bool], *, follow_outside: bool
    ) -> tuple[list[tuple[str, FileStamp]], list[Problem]]:
        """The folder's files (see :func:`~sessionquery.sources._files.find_files`) plus the
        archived ones that are gone from it, sorted by path."""
        files: list[tuple[str, FileStamp]] = []
        problems: list[Problem] = []
        if root.is_dir():
            files, problems = find_files(root, accept, follow_outside=follow_outside)
        present = {rel for rel, _ in files}
        extra = [
            (rel, served_stamp(unit))
            for rel, unit in self._current().items()
            if rel not in present and accept(PurePosixPath(rel).name) and _gone(root / rel)
        ]
        with self._lock:
            self._served = frozenset(rel for rel, _ in extra)
        return sorted([*files, *extra]), problems

    def read(self, root: Path, rel: str, max_bytes: int) -> tuple[bytes, FileStamp]:
        """The file's bytes from the folder, or from the archive when it is gone.

        Raises:
            SkippedFile: as :func:`~sessionquery.sources._files.read_regular`, for a file that
                exists, or one that is neither there nor archived.
        """
        path = root / rel
        try:
            return read_regular(path, max_bytes)
        except SkippedFile:
            unit = self._current().get(rel)
            if unit is None or not _gone(path):
                raise
        return self._read_unit(unit), served_stamp(unit)

    def stat(self, root: Path, rel: str) -> FileStamp | None:
        """The file's stamp, its archived copy's when it is gone, else ``None``."""
        path = root / rel
        try:
            return FileStamp.of(os.stat(path))
        except OSError:
            pass
        unit = self._current().get(rel)
        return served_stamp(unit) if unit is not None and _gone(path) else None

    def archived(self, rel: str) -> bool:
        """Whether the last listing served ``rel`` from the archive."""
        return rel in self._served

    def served(self) -> frozenset[str]:
        """Every file the last listing served from the archive."""
        return self._served


def _gone(path: Path) -> bool:
    """No file (nor link) at ``path``: only then does the archive stand in for it."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False
    return False
