"""Bounded reading of event lines for the index (``persistence/_lines.py``)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionquery import JsonlPersistence, SessionQuery
from sessionquery.errors import ErrorCode, PersistenceCorrupt, SessionQueryError
from sessionquery.model import SessionEvent, SessionHeader, fold_title, messages
from sessionquery.persistence import _lines
from sessionquery.persistence._lines import (
    INDEXED_EVENT_TEXT,
    LARGE_EVENT_BYTES,
    LineReducer,
    event_records,
)
from sessionquery.persistence.documents import checking, read_check
from sessionquery.query.filters import TextContains
from sessionquery.search.sqlite import SqliteSearch
from strategies import valid_logs

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=25,
)


def _reduce(line: bytes, cuts: list[int], text: int) -> Any:
    reducer = LineReducer(text)
    start = 0
    for cut in sorted({min(c, len(line)) for c in cuts}):
        reducer.feed(line[start:cut])
        start = cut
    reducer.feed(line[start:])
    return json.loads(reducer.reduced())


def _strings(value: Any) -> int:
    if isinstance(value, str):
        return 1
    if isinstance(value, list):
        return sum(_strings(item) for item in value)
    if isinstance(value, dict):
        return sum(1 + _strings(item) for item in value.values())
    return 0


def _is_cut_of(reduced: Any, original: Any) -> Any:
    """Whether ``reduced`` is ``original`` with strings cut and container tails left out."""
    if isinstance(original, str):
        return isinstance(reduced, str) and original.startswith(reduced)
    if isinstance(original, list):
        return (
            isinstance(reduced, list)
            and len(reduced) <= len(original)
            and all(_is_cut_of(r, o) for r, o in zip(reduced, original, strict=False))
        )
    if isinstance(original, dict):
        items = list(original.items())
        return (
            isinstance(reduced, dict)
            and len(reduced) <= len(items)
            and all(
                isinstance(key, str) and items[n][0].startswith(key) and _is_cut_of(v, items[n][1])
                for n, (key, v) in enumerate(reduced.items())
            )
        )
    return reduced == original


@given(_json, st.lists(st.integers(min_value=0, max_value=400)), st.booleans())
def test_a_line_within_its_budget_reduces_to_itself_however_it_is_split(
    value: Any, cuts: list[int], ascii_only: bool
) -> None:
    line = json.dumps(value, ensure_ascii=ascii_only).encode()
    assert _reduce(line, cuts, text=1 << 20) == value


@given(
    st.dictionaries(st.text(max_size=8), _json, max_size=6),
    st.lists(st.integers(min_value=0, max_value=400)),
    st.integers(min_value=96, max_value=400),  # keys (at most 96 bytes escaped) stay whole
    st.booleans(),
)
def test_a_reduced_line_is_json_with_its_top_level_and_every_string_cut_to_a_prefix(
    value: dict[str, Any], cuts: list[int], text: int, ascii_only: bool
) -> None:
    line = json.dumps(value, ensure_ascii=ascii_only).encode()
    reduced = _reduce(line, cuts, text)
    assert list(reduced) == list(value)
    assert _is_cut_of(reduced, value)
    assert len(json.dumps(reduced, ensure_ascii=ascii_only).encode()) <= max(
        len(line), 2 * text + 256 * _strings(value)
    )


def test_a_cut_never_splits_an_escape_a_surrogate_pair_or_a_utf8_sequence() -> None:
    for text in ["a\\b" * 50, "\U0001f600" * 50, 'é漢\U0001f600\n\t"' * 30]:
        for ascii_only in (True, False):
            line = json.dumps({"t": text}, ensure_ascii=ascii_only).encode()
            for budget in range(1, 80):
                reduced = _reduce(line, [], budget)["t"]
                assert text.startswith(reduced)
                reduced.encode("utf-8")  # no lone surrogate


def _store_with_line(root: Path, text: str) -> JsonlPersistence:
    store = JsonlPersistence(root)
    with store.create(SessionHeader(id="big", created_at=1, cwd="/w")):
        pass
    event: dict[str, Any] = {
        "type": "user/message",
        "seq": 0,
        "time": 2,
        "data": {
            "id": "m",
            "role": "user",
            "content": [{"type": "text", "text": text}],
            "source": {"kind": "user"},
        },
        "surfaceOp": "append",
    }
    small = {
        **event,
        "seq": 1,
        "data": {**event["data"], "content": [{"type": "text", "text": "tiny"}]},
    }
    with open(store.path_of("big"), "a", encoding="utf-8") as file:
        file.write(json.dumps(event) + "\n" + json.dumps(small) + "\n")
    return store


def test_an_event_over_the_large_size_is_indexed_up_to_its_cap_and_read_whole(
    tmp_path: Path,
) -> None:
    filler = "filler words of a pasted log\n" * (LARGE_EVENT_BYTES // 29 + 1000)
    text = "headword " + filler + " tailword"
    store = _store_with_line(tmp_path / "s", text)
    documents = store.read_documents("big").documents
    assert [d.seq for d in documents] == [0, 1]
    assert documents[0].text.startswith("headword filler")
    # The cap counts string bytes as written in the line (an escaped newline is two).
    assert INDEXED_EVENT_TEXT // 2 <= len(documents[0].text.encode()) <= INDEXED_EVENT_TEXT
    assert documents[1].text == "tiny"
    with SessionQuery(persistence=store, search=SqliteSearch(tmp_path / "i.sqlite")) as query:
        assert [h.record.id for h in query.search_sessions("headword").items] == ["big"]
        assert query.search_sessions("tailword").items == []
        window = query.read_event("big", 0)
        assert window.target.data["content"][0]["text"] == text
        found = query.filter_events("big", [TextContains("tailword")])
        assert [d.seq for d in found] == [0]


def test_an_interrupted_read_of_a_large_line_continues_where_it_stopped(tmp_path: Path) -> None:
    store = _store_with_line(tmp_path / "s", "word " * (3 * LARGE_EVENT_BYTES // 5))
    calls = 0

    def deadline() -> None:
        nonlocal calls
        calls += 1
        if calls % 12 == 0:  # every twelfth block: past the first 8 MiB of the line
            raise SessionQueryError(ErrorCode.ABORTED, "deadline")

    reads = 0
    while True:
        reads += 1
        with checking(deadline):
            try:
                documents = store.read_documents("big")
                break
            except SessionQueryError:
                assert reads < 20
    size = os.path.getsize(store.path_of("big"))
    assert reads > 2  # it was interrupted, and each read went further
    assert calls < 2 * size / _lines.BLOCK_BYTES  # the line was not read again from its start
    with checking(lambda: None):
        again = store.read_documents("big")  # reduced once: skipped without reading it again
    assert again == documents
    assert len(documents.documents[0].text) <= INDEXED_EVENT_TEXT


def test_a_large_line_without_its_newline_is_a_torn_tail_and_is_not_yielded(
    tmp_path: Path,
) -> None:
    path = tmp_path / "log"
    path.write_bytes(b'{"type":"x","seq":0,"time":1,"data":"' + b"a" * (LARGE_EVENT_BYTES + 10))
    fd = os.open(path, os.O_RDONLY)
    try:
        assert list(event_records(fd, 0, str(path), read_check())) == []
        with open(path, "ab") as file:
            file.write(b'"}\n')
        ((number, parsed),) = event_records(fd, 0, str(path), read_check())
    finally:
        os.close(fd)
    record: Any = parsed
    assert number == 2 and record["type"] == "x"
    assert INDEXED_EVENT_TEXT - 64 <= len(record["data"]) <= INDEXED_EVENT_TEXT


def test_a_large_line_that_is_not_json_is_a_corrupt_line(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes(b"[" * 10 + b"1" * (LARGE_EVENT_BYTES + 10) + b"\n")
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(PersistenceCorrupt, match="line 2: a number or literal is too long"):
            list(event_records(fd, 0, str(path), read_check()))
    finally:
        os.close(fd)


@given(valid_logs())
def test_the_title_read_equals_the_title_of_the_exact_read(events: list[SessionEvent]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = JsonlPersistence(Path(folder))
        header = SessionHeader(id="s", created_at=1, cwd="/w")
        with store.create(header) as writer:
            writer.append(events)
        with store.open_read("s") as handle:
            exact = fold_title(handle.read())
        assert store.read_title("s") == (header, exact)


def test_the_title_of_a_session_holding_a_huge_event_is_read_in_bounded_memory(
    tmp_path: Path,
) -> None:
    store = _store_with_line(tmp_path / "s", "word " * (3 * LARGE_EVENT_BYTES // 5))
    title = messages.session_title("the big one", [0], source="user")
    with open(store.path_of("big"), "a", encoding="utf-8") as file:
        line = {"type": "session/title", "seq": 2, "time": 3, "data": title}
        file.write(json.dumps(line) + "\n")
    with SessionQuery(persistence=store) as query:
        (result,) = query.read_title_snapshots(["big"])
        assert result.error is None and result.title is not None
        assert result.title.title == "the big one" and result.title.event_seq == 2
    header, snapshot = store.read_title("big")
    assert header.id == "big" and snapshot == result.title
