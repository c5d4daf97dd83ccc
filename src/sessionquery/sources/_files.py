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

from sessionquery.sources._common import Problem

__all__ = ["DEFAULT_MAX_FILE_BYTES", "FileStamp", "SkippedFile", "find_files", "read_regular"]

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


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def find_files(
    root: Path, accept: Callable[[str], bool], *, follow_outside: bool
) -> tuple[list[tuple[Path, FileStamp]], list[Problem]]:
    """``*.jsonl`` files under ``root`` accepted by ``accept`` (given the name), sorted by path,
    with their stamps; and a problem for each one skipped (not regular, a link leaving the root,
    unreadable folder). Folders reached through a link are walked only when inside the root."""
    real_root = root.resolve()
    found: list[tuple[Path, FileStamp]] = []
    problems: list[Problem] = []

    def walk_error(error: OSError) -> None:
        problems.append(Problem(str(error.filename), None, f"cannot list folder: {error.strerror}"))

    for dirpath, dirnames, filenames in os.walk(root, onerror=walk_error, followlinks=True):
        folder = Path(dirpath)
        kept: list[str] = []
        for name in sorted(dirnames):
            sub = folder / name
            if sub.is_symlink() and not (follow_outside or _inside(sub.resolve(), real_root)):
                problems.append(Problem(str(sub), None, "link leaves the source folder; skipped"))
                continue
            kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            if not name.endswith(".jsonl") or not accept(name):
                continue
            path = folder / name
            try:
                found.append((path, _stamp(path, real_root, follow_outside=follow_outside)))
            except SkippedFile as exc:
                problems.append(Problem(str(path), None, str(exc)))
    return found, problems


def _stamp(path: Path, real_root: Path, *, follow_outside: bool) -> FileStamp:
    try:
        info = path.lstat()
        if stat_module.S_ISLNK(info.st_mode):
            target = path.resolve()
            if not follow_outside and not _inside(target, real_root):
                raise SkippedFile(f"link to {target} leaves the source folder; skipped")
            info = path.stat()
    except OSError as exc:
        raise SkippedFile(f"cannot read file: {exc.strerror or exc}; skipped") from None
    if not stat_module.S_ISREG(info.st_mode):
        raise SkippedFile("not a regular file; skipped")
    return FileStamp.of(info)


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
            data = handle.read(max_bytes + 1)
        except OSError as exc:
            raise SkippedFile(f"cannot read file: {exc.strerror or exc}; skipped") from None
    if len(data) > max_bytes:
        raise SkippedFile(
            f"file grew past the {max_bytes}-byte limit per transcript (max_file_bytes); skipped"
        )
    return data, FileStamp.of(info)
