"""Planning one unit's segments: append-aware, exact, content-addressed.

Given a unit's stored segments and the source's current bytes, :func:`plan` keeps every
leading segment whose source bytes still hash to what was stored (read and hashed, never
trusted from a stamp), and stores only what follows the last kept one. So:

* a transcript that grew by one line costs one new segment holding that line (plus, now and
  then, a merge of small trailing segments: the merge rule is a binary counter, so each byte
  is rewritten O(log n) times overall and the number of segments stays logarithmic);
* a file rewritten near its end keeps every segment before the change;
* a new unit whose first line matches a stored unit's (a renamed or copied file) reuses that
  unit's segments as far as they match, so the shared bytes are stored once.

Segments hold at most :data:`SEGMENT_MAX` source bytes and end at a line break when there is
one. With a transforming form (redaction), a segment holds whole lines. In a unit written by
appending lines (a JSONL or text transcript) a partial last line is being written: it waits
for the next run, so a secret it holds is never stored cut and unrecognised. In a unit that
is rewritten whole (a JSON document, a database session) the last line is stored even without
its line break; such a segment is kept only while the source has not grown past it, so a
line completed later is stored again whole and never redacted in two pieces. The source
is read a segment at a time: a plan holds a few raw segments and the compressed new blobs,
whatever the file's size.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from sessionquery.archive._db import NewBlob, Segment

__all__ = [
    "HEAD_MAX",
    "SEGMENT_MAX",
    "Form",
    "Plan",
    "Reader",
    "head_of",
    "is_appended",
    "plan",
]

APPENDED_SUFFIXES = (".jsonl", ".txt")
"""Units with these names are written by appending lines (transcripts); others (JSON
documents, database sessions) are rewritten whole."""


def is_appended(key: str) -> bool:
    """Whether the unit named ``key`` grows by appended lines."""
    return key.lower().endswith(APPENDED_SUFFIXES)


SEGMENT_MAX = 4 << 20
"""Largest number of source bytes in one segment (4 MiB)."""

HEAD_MAX = 64 << 10
"""The first line is hashed up to this many bytes to find copies."""

Reader = Callable[[int, int], bytes]
"""``(offset, length) -> bytes`` of the source (fewer bytes only at its end)."""


@dataclass(frozen=True, slots=True)
class Form:
    """How source bytes become stored bytes.

    Attributes:
        name: ``raw``, or a name that changes whenever ``transform`` would (it is stored with
            every unit; a unit stored in another form is stored again).
        transform: maps whole lines to their stored form, or ``None`` to store the bytes as
            they are.
    """

    name: str
    transform: Callable[[bytes], bytes] | None = None


RAW = Form("raw")


@dataclass(frozen=True, slots=True)
class Plan:
    """What storing a unit needs: its new segments, the blobs to write, the bytes consumed."""

    segments: tuple[Segment, ...]
    blobs: tuple[NewBlob, ...]
    size: int
    kept: int  # leading segments reused unchanged

    @property
    def written(self) -> int:
        """Stored bytes of the new blobs."""
        return sum(len(blob.data) for blob in self.blobs)


def head_of(read: Reader) -> str:
    """The hash of the source's first line (up to :data:`HEAD_MAX` bytes)."""
    start = read(0, HEAD_MAX)
    cut = start.find(b"\n")
    return hashlib.sha256(start if cut < 0 else start[: cut + 1]).hexdigest()


def _verified(
    read: Reader, size: int, stored: Sequence[Segment], *, whole_lines: bool
) -> tuple[int, list[bytes]]:
    """How many leading segments still match the source, and the source bytes of the kept
    trailing run of small segments (merge material). With ``whole_lines``, a segment that
    ends inside a line matches only while the source ends there too."""
    kept = 0
    tail: list[bytes] = []
    for segment in stored:
        end = segment.src_offset + segment.src_size
        if end > size:
            break
        data = read(segment.src_offset, segment.src_size)
        if len(data) != segment.src_size or hashlib.sha256(data).hexdigest() != segment.src_key:
            break
        if whole_lines and end < size and not data.endswith(b"\n"):
            break  # its last line has grown since: store it again whole
        kept += 1
        # A segment over half the maximum never merges with a later one: not merge material.
        tail = [] if segment.src_size > SEGMENT_MAX // 2 else [*tail, data]
    return kept, tail


def _pieces(
    read: Reader, start: int, end: int, *, whole_lines: bool, appended: bool
) -> Iterator[bytes]:
    """The source's bytes ``start .. end`` read one segment at a time, cut at line breaks; a
    line longer than a segment is cut only when the form does not need whole lines, and with
    whole lines the partial last line of an ``appended`` unit is left for the next run."""
    position = start
    while position < end:
        data = read(position, min(SEGMENT_MAX, end - position))
        if not data:
            return
        if position + len(data) < end:
            cut = data.rfind(b"\n")
            while cut < 0 and whole_lines and position + len(data) < end:
                more = read(position + len(data), min(SEGMENT_MAX, end - position - len(data)))
                if not more:
                    break
                found = more.find(b"\n")
                data += more if found < 0 else more[: found + 1]
                cut = len(data) - 1 if found >= 0 else -1
            if cut >= 0:
                data = data[: cut + 1]
        elif whole_lines and appended:
            data = data[: data.rfind(b"\n") + 1]
            if not data:
                return
        yield data
        position += len(data)


def _segment(source: bytes, offset: int, form: Form) -> tuple[Segment, NewBlob]:
    stored = source if form.transform is None else form.transform(source)
    blob = NewBlob.of(stored)
    src_key = blob.key if form.transform is None else hashlib.sha256(source).hexdigest()
    return Segment(blob.key, blob.size, offset, len(source), src_key), blob


def plan(
    read: Reader,
    size: int,
    stored: Sequence[Segment],
    form: Form = RAW,
    *,
    known: Callable[[Sequence[str]], set[str]] = lambda _keys: set(),
    appended: bool = True,
) -> Plan:
    """The segments that make the unit hold the source's first ``size`` bytes.

    Args:
        read: reads the source.
        size: the source's size when the run looked (later appends wait for the next run).
        stored: the unit's current segments (or a copy candidate's), in order.
        form: how source bytes are stored.
        known: which blob keys are already stored (those are not written again).
        appended: the unit grows by appended lines (a transcript), rather than being
            rewritten whole (see the module docstring for what that changes).
    """
    whole_lines = form.transform is not None
    kept, tail_sources = _verified(read, size, stored, whole_lines=whole_lines)
    segments = list(stored[:kept])
    consumed = segments[-1].src_offset + segments[-1].src_size if segments else 0
    base = len(segments) - len(tail_sources)
    del segments[base:]
    blobs: dict[str, NewBlob] = {}
    offset = segments[-1].src_offset + segments[-1].src_size if segments else 0
    # Groups of pieces under the binary counter: (source bytes, the stored segment when the
    # group is one untouched kept segment). Groups before the last one over half a segment can
    # never merge again, so they are stored at once and only a few segments stay in memory.
    groups: list[tuple[list[bytes], Segment | None]] = [
        ([data], stored[base + index]) for index, data in enumerate(tail_sources)
    ]

    def settle(final: bool) -> None:
        nonlocal offset
        ready = len(groups) if final else _final_groups(groups)
        for parts, untouched in groups[:ready]:
            if untouched is not None:
                segments.append(untouched)
            else:
                segment, blob = _segment(b"".join(parts), offset, form)
                segments.append(segment)
                blobs[blob.key] = blob
            offset += sum(map(len, parts))
        del groups[:ready]

    pieces = _pieces(read, consumed, size, whole_lines=whole_lines, appended=appended)
    for piece in pieces:
        groups.append(([piece], None))
        while len(groups) >= 2:
            (first, _a), (second, _b) = groups[-2], groups[-1]
            s1, s2 = sum(map(len, first)), sum(map(len, second))
            if s1 > s2 or s1 + s2 > SEGMENT_MAX:
                break
            groups[-2:] = [([*first, *second], None)]
        settle(final=False)
    settle(final=True)
    present = known(list(blobs)) if blobs else set()
    new_blobs = tuple(blob for key, blob in blobs.items() if key not in present)
    return Plan(tuple(segments), new_blobs, offset, kept)


def _final_groups(groups: Sequence[tuple[list[bytes], Segment | None]]) -> int:
    """How many leading groups can no longer merge: all up to the last group over half a
    segment that is not the last group."""
    for index in range(len(groups) - 2, -1, -1):
        if sum(map(len, groups[index][0])) > SEGMENT_MAX // 2:
            return index + 1
    return 0
