"""The store's change token and change journal: which sessions changed, at O(1) cost.

Files in the store root (all ``0600``, none of them a session):

* ``.change-token`` — ``<nonce>:<counter>``. Every change made through the store (create,
  flush of new events, torn-tail repair, delete), in any process, increments the counter under
  an exclusive ``flock`` on this file, once before the change and once after it. A recreated or
  damaged marker gets a new random nonce, so old tokens never recur.
* ``.change-journal`` — append-only: a first line ``sessionquery-journal <nonce>``, then one
  line ``<counter> <id as a JSON string>`` per increment, written *before* the marker moves
  (under the same lock), so the journal always covers every counter the marker shows. When it
  grows past :data:`JOURNAL_LIMIT` it is compacted to its newer half (a new file renamed into
  place), so it stays bounded.
* ``.change-token.changing`` — writers hold a shared ``flock`` on it while a change is in
  progress; a token read meanwhile is a one-off value that no later token equals.

A token is ``v2:<nonce>:<counter>:<directory part>``. The directory part is the store root's
own device, inode, mtime and ctime, so a session file added, removed or renamed into place by
hand (``cp``, ``rm``, ``mv``) changes the token although no counter moved. Directory times
are only as fine as the kernel's clock tick, so while the root changed less than
:data:`RACY_NS` ago the directory part also carries a digest of the root's entry names and
inode numbers (the same precaution as git's "racy" index entries); otherwise reading a token
costs a ``stat`` and two small opens whatever the size of the store.

Invariants:

* **Never an under-approximation.** :meth:`ChangeLog.changed_since` returns ``None``
  (meaning "list in full") whenever it cannot prove its answer: an unparsable, one-off or
  foreign token, another nonce, a changed directory, a counter gap in the journal (compacted
  away, damaged, or being written).
* **Crash-safe.** The kernel drops every lock of a dead process; a torn journal line is cut
  away by the next writer and never parsed as an entry; the journal is only ever replaced by
  an atomic rename.
* Limits: an edit *inside* an existing session file by another program (``cp`` onto it,
  ``>>``) changes neither the directory nor the counter; it is seen by the file's revision at
  the next full listing. Marker and journal are not fsynced: after a power failure they may
  lag behind the data, which a full listing repairs.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager

from sessionquery.persistence._files import (
    FILE_MODE,
    OPEN_FLAGS,
    open_regular,
    read_from,
    write_all,
)

__all__ = [
    "CHANGING_NAME",
    "JOURNAL_LIMIT",
    "JOURNAL_NAME",
    "MARKER_NAME",
    "RACY_NS",
    "ChangeLog",
]

logger = logging.getLogger(__name__)

MARKER_NAME = ".change-token"
CHANGING_NAME = ".change-token.changing"
JOURNAL_NAME = ".change-journal"
_JOURNAL_TEMP = ".change-journal.compacting"
_JOURNAL_MAGIC = "sessionquery-journal"
_VERSION = "v2"

JOURNAL_LIMIT = 256 * 1024
"""Bytes after which the journal is compacted to its newer half."""

RACY_NS = 200_000_000
"""A root changed less than this long ago gets an entry digest in its token (see above).

Directory times come from the kernel's coarse clock, which lags the fine one by at most a
tick (1-10 ms); 200 ms leaves a wide margin at the cost of one directory read per token
during the 200 ms after a file is added, removed or renamed."""

_COUNTER_WIDTH = 20


class ChangeLog:
    """The change token, the journal and the "change in progress" lock of one store root."""

    def __init__(self, root: str) -> None:
        self._root = root
        self._marker = os.path.join(root, MARKER_NAME)
        self._changing_path = os.path.join(root, CHANGING_NAME)
        self._journal = os.path.join(root, JOURNAL_NAME)

    # ------------------------------------------------------------------ reading

    def token(self) -> str:
        """The current token (see the module docstring); O(1) unless the root changed just now."""
        directory = self._directory_part()
        nonce, counter = self._read_marker()
        token = f"{_VERSION}:{nonce}:{counter}:{directory}"
        # Read the token first, then look for a change in progress: a change that starts
        # after this check moves the counter past the value just read.
        if self._change_in_progress():
            # A one-off value: whoever keeps it must list again next time.
            return f"{token}+{secrets.token_hex(8)}"
        return token

    def changed_since(self, token: str) -> frozenset[str] | None:
        """Ids changed through the store since ``token`` was read, or ``None`` if unknown.

        Read the new token *before* calling this: every change not in the answer then moves
        the token past the new one.
        """
        parsed = _parse_token(token)
        if parsed is None:
            return None
        nonce, counter, directory = parsed
        if not self._same_directory(directory):
            return None
        now_nonce, now_counter = self._read_marker()
        if now_nonce != nonce or now_counter < counter:
            return None
        if now_counter == counter:
            return frozenset()
        return self._journal_ids(nonce, counter, now_counter)

    def _same_directory(self, directory: str) -> bool:
        current = self._directory_part()
        if current == directory:
            return True
        # A token read just after a change carries an entry digest; once the root is quiet its
        # stat part alone is current. Equal stat parts and equal entries: nothing changed.
        stat_part, _, digest = directory.partition("#")
        return (
            bool(digest)
            and current.partition("#")[0] == stat_part
            and (self._entries_digest() == digest)
        )

    def _journal_ids(self, nonce: str, after: int, upto: int) -> frozenset[str] | None:
        try:
            fd = open_regular(self._journal, os.O_RDONLY)
        except OSError:
            return None
        try:
            data = read_from(fd, 0)
        except OSError:
            return None
        finally:
            os.close(fd)
        lines = data.split(b"\n")
        lines.pop()  # bytes after the last newline: empty, or a line still being written
        if not lines or lines[0] != f"{_JOURNAL_MAGIC} {nonce}".encode("ascii"):
            return None
        ids: set[str] = set()
        expected = upto
        for raw in reversed(lines[1:]):
            entry = _parse_entry(raw)
            if entry is None:
                return None
            number, session_id = entry
            if number > upto:
                continue  # written after the marker was read: not needed
            if number != expected:
                return None  # a gap: compacted away or damaged
            if number <= after:
                break
            ids.add(session_id)
            expected -= 1
        if expected != after:
            return None
        return frozenset(ids)

    def _read_marker(self) -> tuple[str, int]:
        try:
            fd = os.open(self._marker, os.O_RDONLY | os.O_NONBLOCK | OPEN_FLAGS)
        except OSError:
            return "none", 0
        try:
            raw = os.pread(fd, 128, 0)
        except OSError:
            return "none", 0
        finally:
            os.close(fd)
        return _parse_marker(raw) or ("damaged", 0)

    def _change_in_progress(self) -> bool:
        try:
            fd = os.open(self._changing_path, os.O_RDONLY | os.O_NONBLOCK | OPEN_FLAGS)
        except FileNotFoundError:
            return False
        except OSError:
            return True  # cannot tell: the caller must not trust the token
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)  # also drops the probe's own lock
        return False

    def _directory_part(self) -> str:
        try:
            st = os.stat(self._root)
        except OSError:
            return "missing"
        part = f"{st.st_dev}.{st.st_ino}.{st.st_mtime_ns}.{st.st_ctime_ns}"
        # Adding, removing or renaming an entry sets mtime to the coarse clock's "now": a
        # token whose mtime is older than a tick cannot be confused with a later change.
        if time.time_ns() - st.st_mtime_ns < RACY_NS:
            part += "#" + self._entries_digest()
        return part

    def _entries_digest(self) -> str:
        try:
            entries = sorted(f"{entry.name}\0{entry.inode()}" for entry in os.scandir(self._root))
        except OSError:
            return secrets.token_hex(8)  # unknowable: never equal to anything
        text = "\n".join(entries).encode("utf-8", "surrogateescape")
        return hashlib.blake2b(text, digest_size=12).hexdigest()

    # ------------------------------------------------------------------ writing

    @contextmanager
    def changing(self, session_id: str, *, strict: bool) -> Iterator[None]:
        """Announce a change to ``session_id``'s file to token and journal readers.

        The counter moves (with a journal entry) before the change and again after it, and a
        shared lock on ``.change-token.changing`` is held throughout (the kernel drops it if
        the process dies). A token read while the lock is held is never trusted, so an index
        that reconciles in the middle of a change, or while a killed writer's bytes are
        landing, lists the store again next time.

        Args:
            session_id: the session whose file changes.
            strict: raise when the first announcement fails (flush, repair, delete);
                otherwise only log it (create, whose new file changes the directory anyway).
        """
        try:
            fd: int | None = os.open(
                self._changing_path, os.O_RDWR | os.O_CREAT | OPEN_FLAGS, FILE_MODE
            )
        except OSError:
            if strict:
                raise
            fd = None
        try:
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_SH)
            try:
                self._bump(session_id)
            except OSError:
                if strict:
                    raise
                logger.warning("could not update the change token of %s", self._root)
            yield
        finally:
            try:
                self._bump(session_id)
            except OSError:
                logger.warning("could not update the change token of %s", self._root)
            if fd is not None:
                os.close(fd)

    def _bump(self, session_id: str) -> None:
        try:
            fd = os.open(self._marker, os.O_RDWR | os.O_CREAT | os.O_EXCL | OPEN_FLAGS, FILE_MODE)
            os.fchmod(fd, FILE_MODE)
        except FileExistsError:
            fd = os.open(self._marker, os.O_RDWR | OPEN_FLAGS)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            parsed = _parse_marker(os.pread(fd, 128, 0))
            fresh = parsed is None
            # A fresh (or damaged) marker gets a new nonce so old tokens never recur.
            nonce, counter = parsed or (secrets.token_hex(8), 0)
            counter += 1
            try:
                self._append_entry(nonce, counter, session_id, fresh=fresh)
            except OSError:
                # The marker still moves (the token must); readers of the journal will find
                # the gap and answer "unknown".
                logger.warning("could not append to the change journal of %s", self._root)
            # Fixed width: a concurrent reader never sees a shorter, stale-looking value.
            write_all(fd, f"{nonce}:{counter:0{_COUNTER_WIDTH}d}\n".encode("ascii"), 0)
        finally:
            os.close(fd)

    def _append_entry(self, nonce: str, counter: int, session_id: str, *, fresh: bool) -> None:
        """Append one entry (caller holds the marker lock): repair, reset or compact as needed."""
        magic = f"{_JOURNAL_MAGIC} {nonce}\n".encode("ascii")
        fd = os.open(self._journal, os.O_RDWR | os.O_CREAT | os.O_APPEND | OPEN_FLAGS, FILE_MODE)
        try:
            size = os.fstat(fd).st_size
            if fresh or size < len(magic) or os.pread(fd, len(magic), 0) != magic:
                os.ftruncate(fd, 0)
                os.write(fd, magic)
                size = len(magic)
            elif os.pread(fd, 1, size - 1) != b"\n":
                size = self._cut_torn_tail(fd, size)
            line = _entry_line(counter, session_id)
            os.write(fd, line)
            size += len(line)
        finally:
            os.close(fd)
        if size > JOURNAL_LIMIT:
            self._compact(magic)

    @staticmethod
    def _cut_torn_tail(fd: int, size: int) -> int:
        start = max(size - 4096, 0)
        while True:
            tail = os.pread(fd, size - start, start)
            newline = tail.rfind(b"\n")
            if newline != -1 or start == 0:
                good = start + newline + 1
                os.ftruncate(fd, good)
                return good
            start = max(start - 4096, 0)

    def _compact(self, magic: bytes) -> None:
        fd = open_regular(self._journal, os.O_RDONLY)
        try:
            lines = read_from(fd, 0).split(b"\n")[1:-1]
        finally:
            os.close(fd)
        kept = lines[len(lines) // 2 :]
        temp = os.path.join(self._root, _JOURNAL_TEMP)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | OPEN_FLAGS, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)
            write_all(fd, magic + b"".join(line + b"\n" for line in kept), 0)
        finally:
            os.close(fd)
        os.replace(temp, self._journal)


def _entry_line(counter: int, session_id: str) -> bytes:
    return f"{counter:0{_COUNTER_WIDTH}d} {json.dumps(session_id)}\n".encode("ascii")


def _parse_entry(raw: bytes) -> tuple[int, str] | None:
    number = raw[:_COUNTER_WIDTH]
    if len(raw) < _COUNTER_WIDTH + 3 or not number.isdigit() or raw[_COUNTER_WIDTH] != 0x20:
        return None
    try:
        session_id = json.loads(raw[_COUNTER_WIDTH + 1 :])
    except ValueError:
        return None
    if not isinstance(session_id, str):
        return None
    return int(number), session_id


def _parse_marker(raw: bytes) -> tuple[str, int] | None:
    nonce, _, counter = raw.decode("ascii", "replace").partition(":")
    count = counter.strip()
    if not (nonce and nonce.isalnum() and count.isdigit()):
        return None
    return nonce, int(count)


def _parse_token(token: str) -> tuple[str, int, str] | None:
    if not isinstance(token, str) or "+" in token:
        return None
    parts = token.split(":")
    if len(parts) != 4 or parts[0] != _VERSION or not parts[2].isdigit():
        return None
    return parts[1], int(parts[2]), parts[3]
