"""Segment planning: appends cost the appended bytes, rewrites keep the matching prefix, and
every plan holds exactly the source's bytes."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from sessionquery.archive._db import NewBlob, Segment
from sessionquery.archive._segments import SEGMENT_MAX, Form, Plan, plan


class Stored:
    """The blobs of the plans so far, as the archive file would hold them."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        self.written = 0

    def apply(self, result: Plan) -> tuple[Segment, ...]:
        for blob in result.blobs:
            self.blobs[blob.key] = _raw(blob)
            self.written += len(blob.data)
        return result.segments

    def known(self, keys: object) -> set[str]:
        return {key for key in keys if key in self.blobs}  # type: ignore[attr-defined]

    def read(self, segments: tuple[Segment, ...]) -> bytes:
        return b"".join(self.blobs[s.blob] for s in segments)


def _raw(blob: NewBlob) -> bytes:
    from sessionquery.archive import _codec

    return _codec.decompress(blob.codec, blob.data)


def _reader(data: bytes):  # type: ignore[no-untyped-def]
    return lambda offset, length: data[offset : offset + length]


def _archive(store: Stored, data: bytes, segments: tuple[Segment, ...] = ()) -> tuple[Segment, ...]:
    return store.apply(plan(_reader(data), len(data), segments, known=store.known))


def test_appending_one_line_stores_a_segment_holding_only_that_line() -> None:
    store = Stored()
    data = b"".join(b'{"n": %d, "text": "some words here"}\n' % i for i in range(20_000))
    segments = _archive(store, data)
    before = store.written
    line = b'{"n": "last", "text": "the appended line"}\n'
    grown = _archive(store, data + line, segments)
    assert store.read(grown) == data + line
    assert grown[: len(segments)] == segments
    assert grown[-1].src_size == len(line)
    assert store.written - before < 2 * len(line)


def test_a_file_changed_near_its_end_keeps_every_segment_before_the_change() -> None:
    store = Stored()
    data = bytes(range(256)) * (3 * SEGMENT_MAX // 256)
    segments = _archive(store, data)
    assert len(segments) >= 3
    changed = data[:-10] + b"0123456789"
    rewritten = _archive(store, changed, segments)
    assert store.read(rewritten) == changed
    assert rewritten[:-1] == segments[:-1]
    assert rewritten[-1] != segments[-1]


def test_segments_end_at_a_line_break_and_never_exceed_the_maximum() -> None:
    store = Stored()
    line = b"x" * 999 + b"\n"
    data = line * (SEGMENT_MAX // 1000 * 2 + 7)
    segments = _archive(store, data)
    assert all(s.src_size <= SEGMENT_MAX for s in segments)
    assert all(
        data[s.src_offset + s.src_size - 1 : s.src_offset + s.src_size] == b"\n" for s in segments
    )


def test_a_transforming_form_stores_whole_lines_only_and_hashes_the_source() -> None:
    store = Stored()
    form = Form("upper", lambda lines: lines.upper())
    data = b"first line\nsecond li"
    result = plan(_reader(data), len(data), (), form, known=store.known)
    segments = store.apply(result)
    assert result.size == len(b"first line\n")
    assert store.read(segments) == b"FIRST LINE\n"
    assert segments[0].src_key == hashlib.sha256(b"first line\n").hexdigest()
    data += b"ne\n"
    grown = store.apply(plan(_reader(data), len(data), segments, form, known=store.known))
    assert store.read(grown) == b"FIRST LINE\nSECOND LINE\n"


@given(
    st.lists(
        st.tuples(st.sampled_from(["append", "rewrite", "truncate"]), st.binary(max_size=300)),
        min_size=1,
        max_size=40,
    )
)
def test_any_history_of_changes_archives_exactly_the_current_bytes(
    changes: list[tuple[str, bytes]],
) -> None:
    store = Stored()
    data = b""
    segments: tuple[Segment, ...] = ()
    for kind, chunk in changes:
        if kind == "append":
            data += chunk
        elif kind == "rewrite":
            data = chunk + data[len(chunk) :]
        else:
            data = data[: len(data) // 2]
        segments = _archive(store, data, segments)
        assert store.read(segments) == data
        assert sum(s.src_size for s in segments) == len(data)
        offsets = [s.src_offset for s in segments]
        assert offsets == sorted(offsets)


def test_many_one_line_appends_keep_few_segments_and_write_each_byte_a_few_times() -> None:
    store = Stored()
    data = b""
    segments: tuple[Segment, ...] = ()
    for i in range(1024):
        data += b'{"event": %d, "padding": "%s"}\n' % (i, b"p" * (i % 50))
        segments = _archive(store, data, segments)
    assert store.read(segments) == data
    assert len(segments) <= 12  # logarithmic in the number of appends


def test_a_big_source_is_read_one_segment_at_a_time() -> None:
    data = (b'{"line": "' + b"x" * 990 + b'"}\n') * (5 * SEGMENT_MAX // 1000)
    reads: list[int] = []

    def read(offset: int, length: int) -> bytes:
        reads.append(length)
        return data[offset : offset + length]

    store = Stored()
    segments = store.apply(plan(read, len(data), (), known=store.known))
    assert store.read(segments) == data
    assert max(reads) <= SEGMENT_MAX


def test_a_line_longer_than_a_segment_stays_whole_under_a_transforming_form() -> None:
    long_line = b"y" * (SEGMENT_MAX + 10) + b"\n"
    data = b"short\n" + long_line + b"tail\n"
    form = Form("same", lambda lines: lines)
    store = Stored()
    segments = store.apply(plan(_reader(data), len(data), (), form, known=store.known))
    assert store.read(segments) == data
    assert all(data[s.src_offset + s.src_size - 1] == ord("\n") for s in segments)


def test_a_redacted_unit_without_a_final_newline_keeps_its_last_line() -> None:
    from sessionquery.archive._segments import Form, plan

    form = Form("upper", bytes.upper)
    source = b'{"a": 1}\n{"b": 2}'
    first = plan(lambda o, n: source[o : o + n], len(source), (), form, appended=False)
    assert first.size == len(source)  # the last line is stored, without its line break
    grown = source + b', "c": 3}\n{"d": 4}\n'
    second = plan(lambda o, n: grown[o : o + n], len(grown), first.segments, form, appended=False)
    assert second.size == len(grown)
    ends = [seg.src_offset + seg.src_size for seg in second.segments]
    assert ends[-1] == len(grown)
    # every segment ends at a line break: the completed line was stored again whole, never
    # transformed (redacted) in two pieces
    assert all(grown[end - 1 : end] == b"\n" for end in ends)
    starts = [seg.src_offset for seg in second.segments]
    assert starts == [0, *ends[:-1]]
