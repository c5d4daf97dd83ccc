"""Tests for sessionquery.query.prepared: lazily computed, memoised projections of a log."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given

from conftest import raises_code
from sessionquery.errors import ErrorCode
from sessionquery.model import SessionEvent, SessionHeader, extract_event_text, fold_surface
from sessionquery.query import prepared as prepared_module
from sessionquery.query.prepared import PreparedLog
from strategies import LogBuilder, valid_logs

HEADER = SessionHeader(id="s", created_at=0)


@given(valid_logs())
def test_projections_equal_the_model_functions(events: list[SessionEvent]) -> None:
    log = PreparedLog(HEADER, 0, tuple(events), live=False)
    assert log.fold() == fold_surface(events)
    assert log.texts() == tuple(extract_event_text(e) for e in events)
    for event in events:
        cited = tuple(e.seq for e in events if event.seq in (e.source_event_seqs or ()))
        assert log.derived_of(event.seq) == cited


def test_the_fold_runs_once_per_prepared_log(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = fold_surface

    def counting(events: Any) -> Any:
        calls.append(1)
        return real(events)

    monkeypatch.setattr(prepared_module, "fold_surface", counting)
    b = LogBuilder()
    b.turn_start()
    b.user("hi")
    log = PreparedLog(HEADER, 0, tuple(b.events), live=False)
    assert log.fold() is log.fold()
    assert len(calls) == 1


@pytest.mark.parametrize(
    ("live", "code"), [(True, ErrorCode.INVALID_SURFACE), (False, ErrorCode.CORRUPT_SESSION)]
)
def test_a_fold_failure_is_remembered_and_coded_by_origin(live: bool, code: ErrorCode) -> None:
    events = (SessionEvent("user/message", 0, 0, {}),)  # missing surface operation
    log = PreparedLog(HEADER, 0, events, live=live)
    for _ in range(2):
        with raises_code(code) as caught:
            log.fold()
        assert "'s'" in caught.value.message


@pytest.mark.parametrize("seq", [-1, 1, True, "0", 0.0, None])
def test_event_at_returns_none_for_anything_but_a_present_seq(seq: Any) -> None:
    log = PreparedLog(HEADER, 0, (SessionEvent("x", 0, 0),), live=True)
    assert log.event_at(seq) is None
    assert log.event_at(0) is not None


def test_the_title_is_the_last_title_event() -> None:
    b = LogBuilder()
    b.title("first")
    b.title("second", [0])
    log = PreparedLog(HEADER, 0, tuple(b.events), live=True)
    title = log.title()
    assert title is not None and title.title == "second" and log.title() is title
