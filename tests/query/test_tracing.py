"""Tests for sessionquery.query.tracing: replacement chains and citations of one event."""

from __future__ import annotations

from hypothesis import given

from conftest import raises_code
from sessionquery.errors import ErrorCode
from sessionquery.model import SessionEvent, SessionHeader, fold_surface
from sessionquery.query.prepared import PreparedLog
from sessionquery.query.tracing import trace_event
from strategies import LogBuilder, valid_logs

HEADER = SessionHeader(id="s", created_at=0)


def test_a_rewritten_tool_result_and_a_compaction_form_a_chain() -> None:
    b = LogBuilder()
    b.turn_start()
    b.user("go")  # 1
    b.step_start()
    call = b.new_call_id()
    b.assistant(None, calls=[(call, "read", "{}")])  # 3
    result = b.tool_result(call, "long output").seq  # 4
    b.step_end()
    b.turn_end()
    rewrite = b.rewrite_tool_result(result, "[pruned]").seq  # 7
    compaction = b.compact(0, len(b.surface) - 1, "all of it").seq  # 8
    log = PreparedLog(HEADER, 0, tuple(b.events), live=True)
    trace = trace_event(log, result)
    assert trace.replaced_by == rewrite and trace.replacement_chain == (rewrite, compaction)
    assert trace.derived_event_seqs == (rewrite,)
    assert trace_event(log, rewrite).replaced_event_seqs == (result,)
    assert trace_event(log, compaction).replaced_event_seqs == (1, 3, rewrite)
    assert trace_event(log, compaction).session is HEADER


def test_event_existence_is_checked_before_the_fold() -> None:
    log = PreparedLog(HEADER, 0, (SessionEvent("user/message", 0, 0, {}),), live=True)
    with raises_code(ErrorCode.EVENT_NOT_FOUND):
        trace_event(log, 3)
    with raises_code(ErrorCode.INVALID_SURFACE):
        trace_event(log, 0)


@given(valid_logs())
def test_every_trace_agrees_with_the_fold(events: list[SessionEvent]) -> None:
    log = PreparedLog(HEADER, 0, tuple(events), live=False)
    fold = fold_surface(events)
    for event in events:
        trace = trace_event(log, event.seq)
        assert trace.target.surface == fold.surface_of[event.seq]
        assert trace.replaced_by == fold.replaced_by.get(event.seq)
        assert list(trace.replacement_chain) == sorted(trace.replacement_chain)
        if trace.replacement_chain:
            assert fold.surface_of[trace.replacement_chain[-1]] == "current"
        assert trace.source_event_seqs == (event.source_event_seqs or ())
        assert all(s > event.seq for s in trace.derived_event_seqs)
