"""Opening transcript files safely (finding them is :class:`._units.FileTree`'s job).

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
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

__all__ = ["DEFAULT_MAX_FILE_BYTES", "FileStamp", "SkippedFile", "read_regular"]

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
