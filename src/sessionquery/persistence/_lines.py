"""Bounded reading of a JSONL log's event lines for the search index.

The index reads every stored log (:meth:`JsonlPersistence.read_documents`); one line can be a
gigabyte (a pasted log, a huge tool output). Parsing such a line whole costs seconds that no
deadline can interrupt and several times its size in memory, on every search that finds the
session stale. So the index reads lines this way:

* the file is read in blocks of :data:`BLOCK_BYTES`, never whole; a line of at most
  :data:`LARGE_EVENT_BYTES` is parsed as JSON as it is;
* a longer line is **reduced** while it streams by (:class:`LineReducer`): its JSON structure
  is kept, the content of its strings only up to :data:`INDEXED_EVENT_TEXT` bytes in all (each
  string keeps at least :data:`_SHORT_STRING` bytes, so keys and type names survive), and once
  the reduced line passes its budget the rest of any container below the top level is left
  out (a reduced line longer than eight times :data:`INDEXED_EVENT_TEXT`, a top level of
  millions of members, cannot be indexed: the line is reported corrupt). The result is a
  small JSON line with the event's envelope (type, seq, time, surface
  operation...) intact and its text cut: the index holds the first
  :data:`INDEXED_EVENT_TEXT` bytes of such an event's text, while every exact read
  (``read_event``, ``read_session``) still returns the whole event;
* the reduction checks the caller's deadline every block
  (:func:`~sessionquery.persistence.documents.read_check`) and can be interrupted anywhere:
  its state is kept in a small process-wide cache (:data:`_CACHE_ENTRIES` lines) keyed by the
  file's device, inode and the line's offset, so the next read continues where the last one
  stopped, and a line reduced once is skipped without reading it again (appends to the log
  cost only the new lines). Memory stays bounded by a few blocks and the cache, whatever the
  size of a line.

A cache entry is trusted only while the file still holds the line's first bytes at that offset
and is at least as long as what was read of it (a file rewritten in place with the same first
bytes of a huge line and the same inode would keep its old reduced text until the process
ends; the JSONL store only ever appends).

Invariants: for a valid line the reduced line is valid JSON whose top-level members are the
original's, in order; a line that is not valid JSON may reduce to valid JSON (the index checks
only what search relies on; exact reads keep the full validation).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Final

from sessionquery.errors import PersistenceCorrupt

__all__ = [
    "BLOCK_BYTES",
    "INDEXED_EVENT_TEXT",
    "LARGE_EVENT_BYTES",
    "LineReducer",
    "event_records",
]

BLOCK_BYTES: Final = 1 << 20
"""How much of a log one read takes (and, inside a large line, between two deadline checks)."""
LARGE_EVENT_BYTES: Final = 8 << 20
"""Lines longer than this (8 MiB) are reduced for the index instead of parsed whole."""
INDEXED_EVENT_TEXT: Final = 1 << 20
"""How many bytes of string content a reduced line keeps (1 MiB): the indexed text of an event
longer than :data:`LARGE_EVENT_BYTES` is at most about this long."""

_SHORT_STRING: Final = 256
"""Every string of a reduced line keeps at least this many bytes (keys, type names, ids)."""
_OUTPUT_FLOOR: Final = 1 << 16
"""The smallest limit of a reduced line's length (for a tiny ``text`` budget)."""
_LITERAL_LIMIT: Final = 1 << 16
"""A number or literal longer than this is not JSON any reader accepts."""
_HEAD_BYTES: Final = 4096
_CACHE_ENTRIES: Final = 16
_STRUCTURE = re.compile(rb'[",\[\]{}]')
_BACKSLASH: Final = 0x5C
_FIRST_WINDOW: Final = 256


class LineReducer:
    """Reduces one JSON line fed in pieces (see the module docstring); resumable by nature.

    Args:
        text: how many bytes of string content to keep in all (each string keeps at least
            :data:`_SHORT_STRING` bytes, or ``text`` if smaller); past twice that many reduced
            bytes the rest of each container below the top level is left out.

    Attributes:
        consumed: how many bytes of the line were fed so far.
    """

    __slots__ = (
        "_budget",
        "_depth",
        "_full",
        "_in_string",
        "_kept",
        "_literal",
        "_odd",
        "_out",
        "_short",
        "_skip",
        "_string_start",
        "_text",
        "_text_cap",
        "consumed",
    )

    def __init__(self, text: int = INDEXED_EVENT_TEXT) -> None:
        self._text_cap = text
        self._short = min(_SHORT_STRING, text)
        self._budget = 2 * text
        self._out = bytearray()
        self._depth = 0
        self._in_string = False
        self._odd = False  # in a string: the bytes fed so far end with an odd backslash run
        self._kept = 0  # content bytes kept of the current string
        self._full = False  # the current string keeps no more
        self._string_start = 0
        self._text = 0  # content bytes kept by the strings before the current one
        self._skip = 0  # > 0: leaving out the rest of the container open at this depth
        self._literal = 0
        self.consumed = 0

    def feed(self, piece: bytes) -> None:
        """Take the next bytes of the line (no newline among them).

        Raises:
            ValueError: the line cannot be reduced to a bounded JSON line.
        """
        i, n = 0, len(piece)
        while i < n:
            if self._in_string:
                i = self._string(piece, i)
            else:
                i = self._structure(piece, i)
        self.consumed += n
        if len(self._out) > max(4 * self._budget, _OUTPUT_FLOOR):
            raise ValueError("the line is too large to index even reduced")

    def reduced(self) -> bytes:
        """The reduced line so far (the whole of it once the line was fed completely)."""
        return bytes(self._out)

    def _string(self, piece: bytes, i: int) -> int:
        end = self._string_end(piece, i)
        stop = len(piece) if end < 0 else end
        if not self._skip and not self._full and stop > i:
            room = max(self._short, self._text_cap - self._text) - self._kept
            if stop - i <= room:
                self._out += piece[i:stop]
                self._kept += stop - i
            else:
                self._out += piece[i : i + room]
                self._kept += room
                self._full = True
                self._cut_safely()
        if end < 0:
            return len(piece)
        if not self._skip:
            self._out += b'"'
        self._in_string = False
        self._text += self._kept
        return end + 1

    def _string_end(self, piece: bytes, i: int) -> int:
        """The index of the quote closing the current string, or -1 (and the escape carry
        updated) when it does not close in ``piece``.

        Escapes are neutralised a window at a time (``\\\\`` pairs, then ``\\"``, each
        replaced by two bytes that are not a quote, so offsets stay), and the first quote left
        is the closing one: a few passes of C code over the string, however many escapes it
        holds. Windows start small and double, so the cost is linear in the string's length.
        """
        n = len(piece)
        pos = i + 1 if self._odd else i  # after an escaping backslash, skip the escaped byte
        self._odd = False
        if piece.find(b'"', pos) == -1:  # no quote at all: only the carry is to be found
            k = n
            while k > pos and piece[k - 1] == _BACKSLASH:
                k -= 1
            self._odd = (n - k) % 2 == 1
            return -1
        width = _FIRST_WINDOW
        while pos < n:
            end = min(n, pos + width)
            window = piece[pos:end].replace(b"\\\\", b"__").replace(b'\\"', b"__")
            quote = window.find(b'"')
            if quote != -1:
                return pos + quote
            if window.endswith(b"\\"):  # an escape cut by the window's end
                if end == n:
                    self._odd = True
                    return -1
                pos = end + 1
            else:
                pos = end
            width *= 2
        return -1

    def _cut_safely(self) -> None:
        """Drop a cut UTF-8 sequence or escape (and a surrogate pair's first half) from the end
        of the current string's content."""
        out, start = self._out, self._string_start
        end = len(out)
        k = end
        while k > start and out[k - 1] & 0xC0 == 0x80:
            k -= 1
        if k > start and out[k - 1] >= 0xC0:
            lead = out[k - 1]
            length = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
            if end - (k - 1) < length:
                end = k - 1
        while True:
            cut = _escape_cut(out, start, end)
            if cut == end:
                break
            end = cut
        del out[end:]

    def _structure(self, piece: bytes, i: int) -> int:
        match = _STRUCTURE.search(piece, i)
        stop = len(piece) if match is None else match.start()
        if stop > i and not self._skip:
            segment = piece[i:stop].translate(None, b" \t\r\n")  # JSON's whitespace
            self._literal += len(segment)
            if self._literal > _LITERAL_LIMIT:
                raise ValueError("a number or literal is too long")
            self._out += segment
        if match is None:
            return len(piece)
        self._literal = 0
        char = piece[stop]
        skipping = bool(self._skip)
        if char == ord('"'):
            self._in_string, self._kept, self._full = True, 0, False
            if not skipping:
                self._out += b'"'
                self._string_start = len(self._out)
        elif char in b"[{":
            self._depth += 1
            if not skipping:
                self._out.append(char)
        elif char in b"]}":
            if skipping and self._depth == self._skip:
                self._skip = 0
                skipping = False
            if not skipping:
                self._out.append(char)
            self._depth -= 1
            if self._depth < 0:
                raise ValueError("unbalanced brackets")
        elif not skipping:  # a comma
            if self._depth >= 2 and len(self._out) > self._budget:
                self._skip = self._depth
            else:
                self._out += b","
        return stop + 1


def _escape_cut(out: bytearray, start: int, end: int) -> int:
    """Where the content ``out[start:end]`` must end so that it does not end inside an escape
    (a lone backslash, a cut ``\\uXXXX``) or after the first half of a surrogate pair."""
    tail_start = max(start, end - 6)
    backslash = bytes(out[tail_start:end]).rfind(b"\\")
    if backslash == -1:
        return end
    at = tail_start + backslash
    run = 0
    while at - run > start and out[at - run - 1] == _BACKSLASH:
        run += 1
    if run % 2 == 1:  # this backslash is itself escaped: the content ends with a whole escape
        return end
    after = bytes(out[at + 1 : end])
    if not after:
        return at
    if after[:1] == b"u":
        digits = after[1:5]
        if len(digits) < 4 or digits[:2].lower() in (b"d8", b"d9", b"da", b"db"):
            return at
    return end


class _Entry:
    """A large line's reduction, kept between reads (see the module docstring)."""

    __slots__ = ("end", "head", "reducer")

    def __init__(self, head: bytes) -> None:
        self.head = head
        self.reducer = LineReducer()
        self.end: int | None = None
        """The file offset of the line's newline, once the whole line was reduced."""


_CACHE: OrderedDict[tuple[int, int, int], _Entry] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def _digest(head: bytes) -> bytes:
    return hashlib.blake2b(head, digest_size=16).digest()


def _cached(key: tuple[int, int, int], fd: int, offset: int) -> _Entry | None:
    with _CACHE_LOCK:
        entry = _CACHE.get(key)
        if entry is not None:
            _CACHE.move_to_end(key)
    if entry is None:
        return None
    read = entry.reducer.consumed if entry.end is None else entry.end - offset + 1
    valid = (
        os.fstat(fd).st_size >= offset + read
        and _digest(os.pread(fd, _HEAD_BYTES, offset)) == entry.head
    )
    if valid and entry.end is not None:
        valid = os.pread(fd, 1, entry.end) == b"\n"
    if not valid:
        with _CACHE_LOCK:
            _CACHE.pop(key, None)
        return None
    return entry


def _remember(key: tuple[int, int, int], entry: _Entry) -> None:
    with _CACHE_LOCK:
        _CACHE[key] = entry
        _CACHE.move_to_end(key)
        while len(_CACHE) > _CACHE_ENTRIES:
            _CACHE.popitem(last=False)


def _parse(line: bytes | str, number: int, path: str) -> object:
    try:
        return json.loads(line)
    except UnicodeDecodeError:
        raise PersistenceCorrupt(f"{path} line {number}: invalid UTF-8") from None
    except (ValueError, RecursionError):
        raise PersistenceCorrupt(f"{path} line {number}: invalid JSON") from None


def _lines(data: bytes) -> list[bytes] | list[str]:
    """The complete lines of ``data`` (which ends with a newline), decoded once if possible."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data.split(b"\n")[:-1]
    lines = text.split("\n")
    lines.pop()
    return lines


def event_records(
    fd: int, start: int, path: str, tick: Callable[[int], None]
) -> Iterator[tuple[int, object]]:
    """``(line number, parsed record)`` for each complete line of the open log from ``start``
    (the offset after the header line; the header is line 1). A torn final line (no newline)
    is not yielded, as every read of the store ignores it. ``tick(size)`` is called before
    each block is used (the caller's deadline, :func:`~.documents.read_check`).

    Raises:
        PersistenceCorrupt: a line that is not JSON (or, reduced, too large to index).
    """
    st = os.fstat(fd)
    identity = (st.st_dev, st.st_ino)
    number = 2
    offset = start  # the file offset of the next byte to read
    pending = b""  # the start of an incomplete line, read from ``offset - len(pending)``
    while True:
        line_start = offset - len(pending)
        entry = _cached((*identity, line_start), fd, line_start)
        if entry is not None:  # a large line this process reduced (or began to) before
            record, after = _large(entry, fd, line_start, b"", path=path, number=number, tick=tick)
            if after is None:
                return
            yield number, record
            number, offset, pending = number + 1, after, b""
            continue
        block = os.pread(fd, BLOCK_BYTES, offset)
        if not block:
            return
        tick(len(block))
        offset += len(block)
        data = pending + block if pending else block
        last = data.rfind(b"\n")
        if last == -1 and len(data) <= LARGE_EVENT_BYTES:
            pending = data
            continue
        first = data.find(b"\n") if pending else 0  # only a carried line can be this long
        if last == -1 or first > LARGE_EVENT_BYTES:
            entry = _Entry(_digest(data[:_HEAD_BYTES]))
            _remember((*identity, line_start), entry)
            head = data if last == -1 else data[:first]
            if last != -1:
                entry.end = line_start + first
            record, after = _large(entry, fd, line_start, head, path=path, number=number, tick=tick)
            if after is None:
                return
            yield number, record
            number, offset, pending = number + 1, after, b""
            continue
        for line in _lines(data[: last + 1]):
            yield number, _parse(line, number, path)
            number += 1
        pending = data[last + 1 :]


def _large(
    entry: _Entry,
    fd: int,
    line_start: int,
    first: bytes,
    *,
    path: str,
    number: int,
    tick: Callable[[int], None],
) -> tuple[object, int | None]:
    """Reduce (or finish reducing) the large line at ``line_start``; ``first`` is its start,
    already read and checked. Returns the reduced record and the offset after the line, or
    ``None`` for a line still without its newline (a torn or growing tail)."""
    reducer = entry.reducer
    try:
        for at in range(0, len(first), BLOCK_BYTES):  # read already; checked as it is fed
            if at:
                tick(BLOCK_BYTES)
            reducer.feed(first[at : at + BLOCK_BYTES])
        while entry.end is None:
            at = line_start + reducer.consumed
            block = os.pread(fd, BLOCK_BYTES, at)
            if not block:
                return None, None
            tick(len(block))
            newline = block.find(b"\n")
            reducer.feed(block if newline == -1 else block[:newline])
            if newline != -1:
                entry.end = at + newline
    except ValueError as exc:
        _forget(fd, line_start)
        raise PersistenceCorrupt(f"{path} line {number}: {exc}") from None
    assert entry.end is not None
    return _parse(reducer.reduced(), number, path), entry.end + 1


def _forget(fd: int, line_start: int) -> None:
    st = os.fstat(fd)
    with _CACHE_LOCK:
        _CACHE.pop((st.st_dev, st.st_ino, line_start), None)
