"""Crash-tail repair (SPEC §3.6; reference-contract §1.9): ``interrupted_turn_closers``."""

from __future__ import annotations

from hypothesis import given

from sessionquery.model import SessionEvent, fold_surface, interrupted_turn_closers
from sessionquery.model.repair import NOT_STARTED_TEXT, OUTCOME_UNKNOWN_TEXT
from strategies import LogBuilder, valid_logs


def _open_step_with_calls(*, log_call: tuple[bool, ...]) -> tuple[LogBuilder, dict[str, int]]:
    """A turn and step left open after an assistant message with one call per flag.

    Returns the builder and the seq of each logged ``tool/call`` by call id.
    """
    log = LogBuilder()
    log.turn_start()
    log.user("do it")
    log.step_start()
    calls = [(f"c{index}", "shell", f'{{"n":{index}}}') for index in range(len(log_call))]
    log.assistant("working", calls=calls)
    call_seqs: dict[str, int] = {}
    for (call_id, name, arguments), logged in zip(calls, log_call, strict=True):
        if logged:
            call_seqs[call_id] = log.tool_call(call_id, name, arguments).seq
    return log, call_seqs


def kinds(events: list[SessionEvent]) -> list[str]:
    return [event.type for event in events]


def test_a_closed_log_needs_no_closers() -> None:
    log = LogBuilder()
    log.turn_start()
    log.user("hi")
    log.step_start()
    log.assistant("hello")
    log.step_end()
    log.turn_end()
    assert interrupted_turn_closers(log.events) == []


def test_an_empty_log_needs_no_closers() -> None:
    assert interrupted_turn_closers([]) == []


def test_a_log_that_never_opened_a_turn_needs_no_closers() -> None:
    log = LogBuilder()
    log.system()
    log.title("t")
    assert interrupted_turn_closers(log.events) == []


def test_an_open_turn_without_a_step_gets_only_an_interrupted_turn_end() -> None:
    log = LogBuilder()
    log.turn_start()
    log.user("hi")
    closers = interrupted_turn_closers(log.events)
    assert kinds(closers) == ["turn/end"]
    assert closers[0].data == {"turn": 1, "reason": {"kind": "interrupted"}}
    assert closers[0].surface_op is None
    assert closers[0].source_event_seqs is None


def test_an_open_step_gets_a_step_end_then_a_turn_end() -> None:
    log = LogBuilder()
    log.turn_start()
    log.user("hi")
    log.step_start()
    log.step_end()
    log.step_start()
    log.assistant("thinking")
    closers = interrupted_turn_closers(log.events)
    assert kinds(closers) == ["step/end", "turn/end"]
    assert closers[0].data == {"turn": 1, "step": 2}
    assert closers[1].data == {"turn": 1, "reason": {"kind": "interrupted"}}


def test_a_pending_call_whose_tool_call_was_logged_gets_an_outcome_unknown_result() -> None:
    log, call_seqs = _open_step_with_calls(log_call=(True,))
    closers = interrupted_turn_closers(log.events)
    assert kinds(closers) == ["tool/result", "step/end", "turn/end"]
    result = closers[0]
    assert result.surface_op == "append"
    assert result.source_event_seqs == (call_seqs["c0"],)
    assert result.data["error"] == {
        "name": "ToolOutcomeUnknownError",
        "code": "TOOL_OUTCOME_UNKNOWN",
    }
    assert result.data["turn"] == 1
    assert result.data["step"] == 1
    message = result.data["message"]
    assert message["role"] == "user"
    assert message["id"] == f"interrupted-tool-result-c0-{result.seq}"
    assert message["source"] == {"kind": "tool", "callId": "c0"}
    [block] = message["content"]
    assert block["type"] == "tool-result"
    assert block["toolCallId"] == "c0"
    assert block["isError"] is True
    assert block["content"] == [{"type": "text", "text": OUTCOME_UNKNOWN_TEXT}]


def test_a_pending_call_that_was_never_logged_gets_a_not_started_result_without_sources() -> None:
    log, _ = _open_step_with_calls(log_call=(False,))
    result = interrupted_turn_closers(log.events)[0]
    assert result.type == "tool/result"
    assert result.source_event_seqs is None
    assert result.data["error"] == {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}
    assert result.data["message"]["content"][0]["isError"] is True
    assert result.data["message"]["content"][0]["content"] == [
        {"type": "text", "text": NOT_STARTED_TEXT}
    ]


def test_several_pending_calls_get_results_in_call_order() -> None:
    log, call_seqs = _open_step_with_calls(log_call=(True, False, True))
    closers = interrupted_turn_closers(log.events)
    assert kinds(closers) == ["tool/result"] * 3 + ["step/end", "turn/end"]
    assert [c.data["message"]["source"]["callId"] for c in closers[:3]] == ["c0", "c1", "c2"]
    assert [c.source_event_seqs for c in closers[:3]] == [
        (call_seqs["c0"],),
        None,
        (call_seqs["c2"],),
    ]


def test_calls_from_several_assistant_messages_of_one_step_keep_their_order() -> None:
    log = LogBuilder()
    log.turn_start()
    log.step_start()
    log.assistant(None, calls=[("b", "x", "{}")])
    log.assistant(None, calls=[("a", "x", "{}")])
    closers = interrupted_turn_closers(log.events)
    assert [c.data["message"]["source"]["callId"] for c in closers[:2]] == ["b", "a"]


def test_a_call_with_a_result_is_not_pending() -> None:
    log, call_seqs = _open_step_with_calls(log_call=(True, True))
    log.tool_result("c0", "done", call_seq=call_seqs["c0"])
    closers = interrupted_turn_closers(log.events)
    assert kinds(closers) == ["tool/result", "step/end", "turn/end"]
    assert closers[0].data["message"]["source"]["callId"] == "c1"


def test_step_end_clears_pending_calls() -> None:
    log, _ = _open_step_with_calls(log_call=(True, False))
    log.step_end()
    assert kinds(interrupted_turn_closers(log.events)) == ["turn/end"]


def test_a_new_turn_forgets_the_previous_turns_pending_calls_and_step() -> None:
    log, _ = _open_step_with_calls(log_call=(True,))
    log.turn_end("aborted")
    log.turn_start()
    closers = interrupted_turn_closers(log.events)
    assert kinds(closers) == ["turn/end"]
    assert closers[0].data["turn"] == 2


def test_a_tool_call_logged_for_an_unknown_call_id_is_not_pending() -> None:
    log = LogBuilder()
    log.turn_start()
    log.step_start()
    log.tool_call("ghost", "shell", "{}")
    assert kinds(interrupted_turn_closers(log.events)) == ["step/end", "turn/end"]


def test_closers_continue_seqs_from_the_last_event_and_reuse_its_time() -> None:
    log, _ = _open_step_with_calls(log_call=(True, False))
    log.title("late title")
    last = log.events[-1]
    closers = interrupted_turn_closers(log.events)
    assert [c.seq for c in closers] == list(range(last.seq + 1, last.seq + 1 + len(closers)))
    assert {c.time for c in closers} == {last.time}


def test_the_closers_appended_to_the_log_still_fold() -> None:
    log, _ = _open_step_with_calls(log_call=(True, False, True))
    closers = interrupted_turn_closers(log.events)
    fold = fold_surface([*log.events, *closers])
    assert fold.nodes[-3:] == tuple(c.seq for c in closers[:3])


def test_closing_does_not_change_the_input_log() -> None:
    log, _ = _open_step_with_calls(log_call=(True,))
    before = list(log.events)
    interrupted_turn_closers(log.events)
    assert log.events == before


@given(valid_logs(open_tail=True))
def test_any_cut_log_plus_its_closers_folds_and_is_then_closed(events: list[SessionEvent]) -> None:
    closers = interrupted_turn_closers(events)
    repaired = [*events, *closers]
    fold_surface(repaired)
    assert interrupted_turn_closers(repaired) == []
    if closers:
        assert closers[-1].type == "turn/end"
        assert closers[-1].data["reason"] == {"kind": "interrupted"}


@given(valid_logs())
def test_a_complete_realistic_log_needs_no_closers(events: list[SessionEvent]) -> None:
    assert interrupted_turn_closers(events) == []


def test_the_closer_texts_are_the_original_systems_sentences_byte_for_byte() -> None:
    assert OUTCOME_UNKNOWN_TEXT == (
        "The tool call was interrupted after it was recorded, but no result was durably "
        "recorded. Its outcome is unknown. Decide whether to retry from the tool semantics: "
        "retry only if the operation is read-only or idempotent; if it may have side effects, "
        "first verify external state or ask the user. Do not retry blindly."
    )
    assert NOT_STARTED_TEXT == (
        "The tool call was interrupted before the Harness recorded it as started. "
        "Retry it if it is still needed."
    )


def test_a_call_id_logged_twice_is_closed_citing_the_later_tool_call() -> None:
    log, call_seqs = _open_step_with_calls(log_call=(True,))
    later = log.tool_call("c0", "shell", '{"n":0}')
    [result] = interrupted_turn_closers(log.events)[:1]
    assert later.seq > call_seqs["c0"]
    assert result.source_event_seqs == (later.seq,)
    assert result.data["error"]["code"] == "TOOL_OUTCOME_UNKNOWN"


def test_a_call_id_announced_again_in_the_same_step_starts_over_as_not_started() -> None:
    log, _ = _open_step_with_calls(log_call=(True, True))
    log.assistant("again", calls=[("c0", "shell", '{"n":0}')])
    closers = interrupted_turn_closers(log.events)
    assert kinds(closers) == ["tool/result", "tool/result", "step/end", "turn/end"]
    first, second = closers[:2]
    # The announced-again id keeps its place in call order (a map assignment) but its
    # registration is reset: not started, no source.
    assert first.data["message"]["source"]["callId"] == "c0"
    assert first.source_event_seqs is None
    assert first.data["error"]["code"] == "TOOL_NOT_STARTED"
    assert second.data["error"]["code"] == "TOOL_OUTCOME_UNKNOWN"


def test_a_call_id_announced_again_then_logged_again_cites_the_new_tool_call() -> None:
    log, _ = _open_step_with_calls(log_call=(True,))
    log.assistant("again", calls=[("c0", "shell", '{"n":0}')])
    relogged = log.tool_call("c0", "shell", '{"n":0}')
    [result] = interrupted_turn_closers(log.events)[:1]
    assert result.source_event_seqs == (relogged.seq,)
