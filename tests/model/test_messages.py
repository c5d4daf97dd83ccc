"""Message builders (``sessionquery.model.messages``): the shapes SPEC §3.3 gives meaning to."""

from __future__ import annotations

import json
from typing import cast

from hypothesis import given
from hypothesis import strategies as st

from sessionquery.model import (
    SessionEvent,
    extract_event_text,
    fold_surface,
    interrupted_turn_closers,
)
from sessionquery.model.messages import (
    assistant_message,
    session_title,
    step_end,
    step_start,
    system_message,
    text_block,
    todo_write,
    tool_call,
    tool_call_block,
    tool_result,
    turn_end,
    turn_start,
    user_message,
)
from sessionquery.model.surface import SURFACE_ELIGIBLE_TYPES
from sessionquery.model.textmatch import trim


def _log(*items: tuple[str, object]) -> list[SessionEvent]:
    return [
        SessionEvent(
            type,
            seq,
            1_700_000_000_000 + seq,
            data,
            surface_op="append" if type in SURFACE_ELIGIBLE_TYPES else None,
        )
        for seq, (type, data) in enumerate(items)
    ]


def test_a_turn_built_from_the_builders_folds_and_every_part_is_searchable() -> None:
    call = tool_call_block("c1", "bash", {"command": "pytest -q"})
    events = _log(
        ("system/message", system_message("You are a coding agent.", turn=0, step=0)),
        ("turn/start", turn_start(0)),
        ("user/message", user_message("Why does the login test fail?", id="m0")),
        ("step/start", step_start(0, 0)),
        ("assistant/message", assistant_message("Running it.", turn=0, step=0, tool_calls=[call])),
        ("tool/call", tool_call(call, turn=0, step=0)),
        ("tool/result", tool_result("1 failed", call_id="c1", turn=0, step=0, is_error=True)),
        ("step/end", step_end(0, 0)),
        ("todo/write", todo_write([("fix the fixture", "pending")])),
        ("turn/end", turn_end(0, "error", error={"message": "provider overloaded"})),
        ("session/title", session_title("Login test", [2])),
    )
    fold = fold_surface(events)
    assert list(fold.nodes) == [0, 2, 4, 6]
    texts = [extract_event_text(event) for event in events]
    assert texts[2] == "Why does the login test fail?"
    assert texts[4] == 'Running it.\nbash\n{"command": "pytest -q"}'
    assert texts[5] == 'bash\n{"command": "pytest -q"}'
    assert texts[6] == "1 failed"
    assert texts[8] == "pending\nfix the fixture"
    assert texts[9] == "error\nprovider overloaded"


def test_tool_call_arguments_are_a_json_string_verbatim_or_with_sorted_keys() -> None:
    assert tool_call_block("c", "t", '{"b":1, "a":2}')["arguments"] == '{"b":1, "a":2}'
    assert tool_call_block("c", "t", {"b": 1, "a": 2})["arguments"] == '{"a": 2, "b": 1}'


def test_an_unanswered_call_from_the_builders_is_closed_by_the_repair() -> None:
    call = tool_call_block("c7", "edit", "{}")
    events = _log(
        ("turn/start", turn_start(3)),
        ("step/start", step_start(3, 1)),
        ("assistant/message", assistant_message(turn=3, step=1, tool_calls=[call])),
        ("tool/call", tool_call(call, turn=3, step=1)),
    )
    closers = interrupted_turn_closers(events)
    assert [event.type for event in closers] == ["tool/result", "step/end", "turn/end"]
    assert closers[0].source_event_seqs == (3,)
    assert closers[0].data["message"]["source"]["callId"] == "c7"


def test_assistant_message_orders_reasoning_text_then_calls_and_keeps_usage() -> None:
    data = assistant_message(
        "answer",
        turn=1,
        step=2,
        tool_calls=[tool_call_block("c", "t", "{}")],
        reasoning="thinking",
        usage={"inputTokens": 3},
    )
    types = [block["type"] for block in data["message"]["content"]]
    assert types == ["reasoning", "text", "tool-call"]
    assert data["usage"] == {"inputTokens": 3}
    assert "usage" not in assistant_message("x", turn=0, step=0)


def test_results_share_no_mutable_value_with_their_inputs_or_each_other() -> None:
    block = tool_call_block("c", "t", "{}")
    first = assistant_message(turn=0, step=0, tool_calls=[block])
    second = assistant_message(turn=0, step=0, tool_calls=[block])
    changed: dict[str, object] = dict(first["message"]["content"][0])
    changed["name"] = "changed"
    first["message"]["content"][0] = changed
    cast(dict[str, object], second["message"]["content"][0])["name"] = "mutated"
    assert block["name"] == "t"
    assert cast(dict[str, object], first["message"]["content"][0])["name"] == "changed"
    usage = {"n": 1}
    data = assistant_message("x", turn=0, step=0, usage=usage)
    usage["n"] = 2
    assert data["usage"] == {"n": 1}


def test_tool_result_carries_an_error_and_message_id_only_when_given() -> None:
    plain = tool_result("ok", call_id="c", turn=0, step=0)
    assert "error" not in plain
    assert "id" not in plain["message"]
    failed = tool_result(
        "no", call_id="c", turn=0, step=0, is_error=True, error=("E", "CODE"), message_id="r1"
    )
    assert failed["error"] == {"name": "E", "code": "CODE"}
    assert failed["message"]["id"] == "r1"
    assert failed["message"]["content"][0]["isError"] is True


@given(st.text())
def test_user_message_text_is_its_searchable_text_trimmed(text: str) -> None:
    event = _log(("user/message", user_message(text, id="m")))[0]
    assert extract_event_text(event) == trim(text)
    assert json.loads(json.dumps(event.data)) == user_message(text, id="m")


def test_text_block_is_a_text_content_block() -> None:
    assert text_block("hi") == {"type": "text", "text": "hi"}
