"""The JSONL session file format: strict parsing with path and line, in linear time."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from sessionquery.errors import PersistenceCorrupt
from sessionquery.model import SessionEvent, SessionHeader
from sessionquery.persistence import _format


def _line(event: SessionEvent) -> bytes:
    return _format.dumps_line(event.to_json())


def test_a_header_round_trips() -> None:
    header = SessionHeader(id="s1", created_at=5, cwd="/w")
    line = _format.encode_header(header, 0)
    assert _format.parse_header(line.rstrip(b"\n"), "f") == (header, 0)


def test_a_bad_event_line_carries_its_path_and_line() -> None:
    data = _line(SessionEvent("note", 0, 1, {})) + b"{not json\n"
    with pytest.raises(PersistenceCorrupt) as caught:
        _format.parse_events(data, 0, "/store/s.jsonl")
    assert (caught.value.path, caught.value.line) == ("/store/s.jsonl", 3)
    assert "/store/s.jsonl line 3" in str(caught.value)


def test_invalid_utf8_names_the_line_that_holds_it() -> None:
    good = _line(SessionEvent("note", 0, 1, {})) + _line(SessionEvent("note", 1, 1, {}))
    with pytest.raises(PersistenceCorrupt) as caught:
        _format.parse_events(good + b'{"bad":"\xff"}\n', 0, "f")
    assert caught.value.line == 4


def test_a_header_error_is_line_one() -> None:
    with pytest.raises(PersistenceCorrupt) as caught:
        _format.parse_header(b"[]", "f")
    assert (caught.value.path, caught.value.line) == ("f", 1)


def test_an_empty_file_has_no_header(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(PersistenceCorrupt, match="empty") as caught:
            _format.read_header_line(fd, str(path))
    finally:
        os.close(fd)
    assert caught.value.line == 1


def test_a_64_mb_header_line_is_read_in_linear_time(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    size = 64 << 20
    with path.open("wb") as file:
        file.write(b"x" * size + b"\nrest\n")
    fd = os.open(path, os.O_RDONLY)
    started = time.monotonic()
    try:
        line, end = _format.read_header_line(fd, str(path))
    finally:
        os.close(fd)
    # Hard bound against a quadratic read (which took over 20 s here), not a benchmark.
    assert time.monotonic() - started < 8
    assert (len(line), end) == (size, size + 1)
