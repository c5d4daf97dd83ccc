"""Tests for sessionquery.persistence.documents: text documents straight from JSON records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings

from sessionquery.errors import ErrorCode, PersistenceCorrupt, SessionQueryError
from sessionquery.model import SessionEvent, SessionHeader, fold_title, interrupted_turn_closers
from sessionquery.model.messages import user_message
from sessionquery.persistence import JsonlPersistence
from sessionquery.persistence.documents import (
    CHECK_EVERY_BYTES,
    CHECK_EVERY_LINES,
    checking,
    jsonl_documents,
    read_check,
)
from sessionquery.query.corpus import documents_of
from strategies import valid_logs

HEADER = SessionHeader(id="s", created_at=1)


def _lines(events: list[SessionEvent]) -> list[str]:
    return [json.dumps(event.to_json()) for event in events]


@settings(max_examples=150, deadline=None)
@given(valid_logs(open_tail=True))
def test_documents_from_json_records_equal_those_of_the_folded_exact_read(
    events: list[SessionEvent],
) -> None:
    fast = jsonl_documents(HEADER, "r1", _lines(events), "s.jsonl")
    full = list(events) + interrupted_turn_closers(events)
    assert list(fast.documents) == documents_of("s", full)
    assert fast.event_count == len(full)
    assert (fast.header, fast.revision) == (HEADER, "r1")
    assert fast.title_read and fast.title == fold_title(full)


def test_a_real_store_reads_documents_with_closers_and_ignores_a_torn_tail(
    tmp_path: Path,
) -> None:
    store = JsonlPersistence(tmp_path)
    events = [
        SessionEvent("turn/start", 0, 5, {"turn": 0}),
        SessionEvent(
            "user/message",
            1,
            6,
            {"id": "u", "role": "user", "content": [{"type": "text", "text": "hello there"}]},
            surface_op="append",
        ),
    ]
    with store.create(HEADER) as writer:
        writer.append(events)
    with open(store.path_of("s"), "ab") as file:
        file.write(b'{"type": "turn/e')  # a crash mid-append
    document_log = store.read_documents("s")
    texts = [(doc.seq, doc.type, doc.surface, doc.text) for doc in document_log.documents]
    assert texts[0] == (1, "user/message", "current", "hello there")
    assert texts[-1] == (2, "turn/end", "log-only", "interrupted")
    assert document_log.event_count == 3
    assert document_log.revision == store.stat("s").revision  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("line", "detail"),
    [
        ("{not json", "invalid JSON"),
        ('{"type": "turn/start", "seq": 5, "time": 1, "data": {}}', "expected 0"),
        ("[1, 2]", "not a JSON object"),
        (
            '{"type": "user/message", "seq": 0, "time": 1, "data": {}, '
            '"surfaceOp": {"op": "replace", "startSeq": 0, "endSeq": 0}}',
            "invalid surface",
        ),
    ],
)
def test_damaged_records_raise_persistence_corrupt_naming_the_line(line: str, detail: str) -> None:
    with pytest.raises(PersistenceCorrupt) as caught:
        jsonl_documents(HEADER, "r1", [line], "s.jsonl")
    assert "s.jsonl line 2" in str(caught.value)
    assert detail in str(caught.value)


def test_a_check_set_around_the_read_can_stop_a_very_large_log_midway() -> None:
    events = [SessionEvent("todo/write", seq, 1, {"todos": []}) for seq in range(3 * 2048)]
    calls: list[int] = []

    def check() -> None:
        calls.append(1)
        if len(calls) == 2:
            raise SessionQueryError(ErrorCode.ABORTED, "deadline")

    with checking(check), pytest.raises(SessionQueryError) as caught:
        jsonl_documents(HEADER, "r1", _lines(events), "s.jsonl")
    assert caught.value.code is ErrorCode.ABORTED
    assert len(calls) == 2  # stopped at the second check, a third of the way in
    assert jsonl_documents(HEADER, "r1", _lines(events), "s.jsonl").event_count == 3 * 2048


def test_one_multi_megabyte_line_is_a_checks_worth_of_work_by_itself() -> None:
    big = "x " * (CHECK_EVERY_BYTES // 2)
    events = [
        SessionEvent("user/message", seq, 1, user_message(big, id=f"u{seq}"), surface_op="append")
        for seq in range(3)
    ]
    calls: list[int] = []
    with checking(lambda: calls.append(1)):
        log = jsonl_documents(HEADER, "r1", _lines(events), "s.jsonl")
    assert len(log.documents) == 3
    assert len(calls) == 3  # a check before each line, although there are far fewer than 2048


def test_a_read_check_calls_the_installed_check_every_so_many_lines_or_bytes() -> None:
    read_check()(10**9)  # without an installed check: nothing to call, nothing raised
    calls: list[int] = []
    with checking(lambda: calls.append(1)):
        tick = read_check()
        for _ in range(CHECK_EVERY_LINES - 1):
            tick(1)
        assert calls == []
        tick(1)
        assert calls == [1]
        tick(CHECK_EVERY_BYTES)
        assert calls == [1, 1]
    assert read_check()(10**9) is None  # outside the block again


def test_the_documents_carry_the_title_the_last_string_title_event_gives() -> None:
    events = [
        SessionEvent("user/message", 0, 5, user_message("hi", id="u"), surface_op="append"),
        SessionEvent("session/title", 1, 6, {"title": "first", "messageSeqs": [0]}),
        SessionEvent("session/title", 2, 7, {"title": 42}),  # not a title: the first stays
    ]
    fast = jsonl_documents(HEADER, "r1", _lines(events), "s.jsonl")
    assert fast.title_read and fast.title is not None and fast.title.title == "first"
    assert fast.title == fold_title(events)
    untitled = jsonl_documents(HEADER, "r1", _lines(events[:1]), "s.jsonl")
    assert untitled.title_read and untitled.title is None
