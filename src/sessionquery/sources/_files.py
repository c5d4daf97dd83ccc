"""Finding and opening transcript files safely.

* Only regular files are read: the type is checked on the path (``lstat``/``stat``) before
  opening, the file is opened non-blocking (so a FIFO that replaced it in between cannot hang
  the open) and checked again on the open descriptor before a byte is read.
* Symbolic links are followed only while they stay inside the source root (unless the source
  allows leaving it); a link that leaves the root, or dangles, is reported and skipped.
* A file larger than the source's size cap is reported and skipped, never read.
* A file's identity and stat (device, inode, size, mtime_ns, ctime_ns) are its revision: any
  rewrite changes at least ctime_ns, which user space cannot set.
"""

from __future__ import annotations

import os
import stat as stat_module
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

from sessionquery.sources._common import Problem

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "DiskFiles",
    "FileAccess",
    "FileStamp",
    "SkippedFile",
    "find_files",
    "read_regular",
]

DEFAULT_MAX_FILE_BYTES = 256 * 1024 * 1024
"""Transcripts larger than this (256 MiB) are reported and not read, unless configured."""


@dataclass(frozen=True, slots=True)
class FileStamp:
    """A file's identity and stat, as far as change detection needs it."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, result: os.stat_result) -> FileStamp:
        """The stamp of a ``stat`` result."""
        return cls(
            result.st_dev, result.st_ino, result.st_size, result.st_mtime_ns, result.st_ctime_ns
        )

    @property
    def revision(self) -> str:
        """The revision token of the file: changes whenever its bytes (or identity) change."""
        return f"{self.dev}:{self.ino}:{self.size}:{self.mtime_ns}:{self.ctime_ns}"


class SkippedFile(Exception):
    """A candidate file that is not read; the message says why."""


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def find_files(
    root: Path, accept: Callable[[str], bool], *, follow_outside: bool
) -> tuple[list[tuple[str, FileStamp]], list[Problem]]:
    """``*.jsonl`` files under ``root`` accepted by ``accept`` (given the name), as paths
    relative to ``root`` (``/``-separated, sorted) with their stamps; and a problem for each one
    skipped (not regular, a link leaving the root or dangling, an unreadable folder). Folders
    reached through a link are walked only when they stay inside the root (and once)."""
    real_root = os.path.realpath(root)
    found: list[tuple[str, FileStamp]] = []
    problems: list[Problem] = []
    visited: set[tuple[int, int]] = set()

    def walk(folder: str, prefix: str) -> None:
        try:
            with os.scandir(folder) as scan:
                entries = sorted(scan, key=lambda e: e.name)
        except OSError as exc:
            problems.append(Problem(folder, None, f"cannot list folder: {exc.strerror}; skipped"))
            return
        for entry in entries:
            rel = f"{prefix}{entry.name}"
            try:
                link = entry.is_symlink()
                if (
                    link
                    and not follow_outside
                    and not _inside(os.path.realpath(entry.path), real_root)
                ):
                    if entry.is_dir() or entry.name.endswith(".jsonl"):
                        message = "link leaves the source folder; skipped"
                        problems.append(Problem(entry.path, None, message))
                    continue
                if entry.is_dir():
                    info = entry.stat()
                    if (info.st_dev, info.st_ino) not in visited:
                        visited.add((info.st_dev, info.st_ino))
                        walk(entry.path, f"{rel}/")
                    continue
                if not entry.name.endswith(".jsonl") or not accept(entry.name):
                    continue
                info = entry.stat()
            except OSError as exc:
                message = f"cannot read file: {exc.strerror or exc}; skipped"
                problems.append(Problem(entry.path, None, message))
                continue
            if not stat_module.S_ISREG(info.st_mode):
                problems.append(Problem(entry.path, None, "not a regular file; skipped"))
                continue
            found.append((rel, FileStamp.of(info)))

    try:
        top = os.stat(root)
        visited.add((top.st_dev, top.st_ino))
    except OSError:
        pass
    walk(str(root), "")
    return found, problems


def read_regular(path: Path, max_bytes: int) -> tuple[bytes, FileStamp]:
    """The bytes of the regular file at ``path`` and its stamp at open time.

    Raises:
        SkippedFile: not a regular file, larger than ``max_bytes``, or unreadable.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise SkippedFile(f"cannot read file: {exc.strerror or exc}; skipped") from None
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat_module.S_ISREG(info.st_mode):
            raise SkippedFile("not a regular file; skipped")
        if info.st_size > max_bytes:
            raise SkippedFile(
                f"file is {info.st_size} bytes, over the {max_bytes}-byte limit per transcript "
                "(max_file_bytes); skipped"
            )
        try:
            data = _read_to_end(handle, info.st_size, max_bytes)
        except OSError as exc:
            raise SkippedFile(f"cannot read file: {exc.strerror or exc}; skipped") from None
    if len(data) > max_bytes:
        raise SkippedFile(
            f"file grew past the {max_bytes}-byte limit per transcript (max_file_bytes); skipped"
        )
    return data, FileStamp.of(info)


def _read_to_end(handle: BinaryIO, expected: int, max_bytes: int) -> bytes:
    # read(n) allocates n bytes up front, so ask for the stat size, then small chunks for
    # whatever was appended since (stopping once past the cap).
    parts = [handle.read(expected)]
    total = len(parts[0])
    while total <= max_bytes:
        chunk = handle.read(1 << 20)
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


class FileAccess(Protocol):
    """How a catalog lists and reads its folder (the folder itself, or the folder with an
    archive behind it: :class:`sessionquery.archive.ArchivedFiles`)."""

    def keeps(self) -> bool:
        """Whether there may be files to list even when the folder is missing."""
        ...

    def find(
        self, root: Path, accept: Callable[[str], bool], *, follow_outside: bool
    ) -> tuple[list[tuple[str, FileStamp]], list[Problem]]:
        """The transcript files under ``root`` with their stamps, and the problems."""
        ...

    def read(self, root: Path, rel: str, max_bytes: int) -> tuple[bytes, FileStamp]:
        """One file's bytes and stamp (raises :class:`SkippedFile`)."""
        ...

    def stat(self, root: Path, rel: str) -> FileStamp | None:
        """One file's current stamp, or ``None`` when it is gone."""
        ...

    def archived(self, rel: str) -> bool:
        """Whether the last listing served ``rel`` from an archive."""
        ...

    def served(self) -> frozenset[str]:
        """Every file the last listing served from an archive."""
        ...


class DiskFiles:
    """:class:`FileAccess` of the folder itself."""

    def keeps(self) -> bool:
        """Never: a missing folder has no files."""
        return False

    def find(
        self, root: Path, accept: Callable[[str], bool], *, follow_outside: bool
    ) -> tuple[list[tuple[str, FileStamp]], list[Problem]]:
        """:func:`find_files`."""
        return find_files(root, accept, follow_outside=follow_outside)

    def read(self, root: Path, rel: str, max_bytes: int) -> tuple[bytes, FileStamp]:
        """:func:`read_regular`."""
        return read_regular(root / rel, max_bytes)

    def stat(self, root: Path, rel: str) -> FileStamp | None:
        """``os.stat`` as a stamp."""
        try:
            return FileStamp.of(os.stat(root / rel))
        except OSError:
            return None

    def archived(self, rel: str) -> bool:
        """Never."""
        return False

    def served(self) -> frozenset[str]:
        """Nothing."""
        return frozenset()
