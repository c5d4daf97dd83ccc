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
one. With a transforming form (redaction), only whole lines are stored; a partial last line
waits for the next run. Memory stays bounded by a few segments, whatever the file's size.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sessionquery.archive._db import NewBlob, Segment

__all__ = ["HEAD_MAX", "SEGMENT_MAX", "Form", "Plan", "Reader", "head_of", "plan"]

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


def _verified(read: Reader, size: int, stored: Sequence[Segment]) -> tuple[int, list[bytes]]:
    """How many leading segments still match the source, and the source bytes of the kept
    trailing run of small segments (merge material)."""
    kept = 0
    tail: list[bytes] = []
    for segment in stored:
        end = segment.src_offset + segment.src_size
        if end > size:
            break
        data = read(segment.src_offset, segment.src_size)
        if len(data) != segment.src_size or hashlib.sha256(data).hexdigest() != segment.src_key:
            break
        kept += 1
        # A segment over half the maximum never merges with a later one: not merge material.
        tail = [] if segment.src_size > SEGMENT_MAX // 2 else [*tail, data]
    return kept, tail


def _pieces(data: bytes, *, whole_lines: bool) -> list[bytes]:
    """``data`` cut into segments at line breaks; a line longer than a segment is cut only
    when the form does not need whole lines."""
    out: list[bytes] = []
    start = 0
    while start < len(data):
        end = min(start + SEGMENT_MAX, len(data))
        if end < len(data):
            cut = data.rfind(b"\n", start, end)
            if cut >= start:
                end = cut + 1
            elif whole_lines:
                found = data.find(b"\n", end)
                end = len(data) if found < 0 else found + 1
        out.append(data[start:end])
        start = end
    return out


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
) -> Plan:
    """The segments that make the unit hold the source's first ``size`` bytes.

    Args:
        read: reads the source.
        size: the source's size when the run looked (later appends wait for the next run).
        stored: the unit's current segments (or a copy candidate's), in order.
        form: how source bytes are stored.
        known: which blob keys are already stored (those are not written again).
    """
    kept, tail_sources = _verified(read, size, stored)
    segments = list(stored[:kept])
    consumed = segments[-1].src_offset + segments[-1].src_size if segments else 0
    fresh = read(consumed, size - consumed) if size > consumed else b""
    if form.transform is not None:
        fresh = fresh[: fresh.rfind(b"\n") + 1]  # whole lines only
    pieces = _pieces(fresh, whole_lines=form.transform is not None)
    # Merge material: the kept small trailing segments' source bytes, then the new pieces.
    run = [*tail_sources, *pieces]
    base = len(segments) - len(tail_sources)
    sizes = [len(p) for p in run]
    groups = _binary_counter(sizes, first_new=len(tail_sources))
    del segments[base:]
    blobs: dict[str, NewBlob] = {}
    offset = segments[-1].src_offset + segments[-1].src_size if segments else 0
    index = 0
    for count in groups:
        part = run[index : index + count]
        if count == 1 and index < len(tail_sources):
            segments.append(stored[base + index])  # an untouched kept segment
        else:
            source = b"".join(part)
            segment, blob = _segment(source, offset, form)
            segments.append(segment)
            blobs[blob.key] = blob
        offset += sum(len(p) for p in part)
        index += count
    present = known(list(blobs)) if blobs else set()
    new_blobs = tuple(blob for key, blob in blobs.items() if key not in present)
    return Plan(tuple(segments), new_blobs, offset, kept)


def _binary_counter(sizes: Sequence[int], first_new: int) -> list[int]:
    """Group consecutive pieces: each new piece is pushed, then the last two groups merge
    while the earlier is not larger than the later and both fit in one segment."""
    groups: list[tuple[int, int]] = []  # (pieces, bytes)
    for index, size in enumerate(sizes):
        groups.append((1, size))
        if index < first_new:
            continue  # stored segments are merged only by a new piece's arrival
        while len(groups) >= 2:
            (n1, s1), (n2, s2) = groups[-2], groups[-1]
            if s1 > s2 or s1 + s2 > SEGMENT_MAX:
                break
            groups[-2:] = [(n1 + n2, s1 + s2)]
    return [count for count, _ in groups]
