"""Semantic text extraction (SPEC §3.7; reference-contract §3.13)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given

from sessionquery.model import SessionEvent, extract_event_text
from sessionquery.model.textmatch import trim
from strategies import LogBuilder, tool_result_data, valid_events, valid_logs


def ev(type: str, data: Any, op: str | None = None) -> SessionEvent:
    surface_op = "append" if op is None and type.endswith("message") else op
    return SessionEvent(type, 0, 0, data, surface_op=surface_op)  # type: ignore[arg-type]


def test_user_message_text_is_its_text_blocks_trimmed_and_joined_by_newline() -> None:
    data = {
        "id": "m",
        "role": "user",
        "content": [
            {"type": "text", "text": "  first  "},
            {"type": "image", "url": "x.png", "text": "not searchable"},
            {"type": "text", "text": "   "},
            {"type": "text", "text": "second"},
        ],
        "source": {"kind": "user"},
    }
    assert extract_event_text(ev("user/message", data)) == "first\nsecond"


def test_parts_are_trimmed_as_javascript_trims_keeping_separators_and_dropping_the_bom() -> None:
    # String.prototype.trim removes U+FEFF and keeps U+001C..U+001F and U+0085, the opposite
    # of Python's str.strip(); the original system's texts are trimmed the JavaScript way.
    kept = "\x1c\x1d\x1e\x1f\x85"
    data = {
        "id": "m",
        "role": "user",
        "content": [
            {"type": "text", "text": f"\ufeff {kept}word{kept} \ufeff"},
            {"type": "text", "text": "\ufeff\u3000\u2028 \t"},
            {"type": "text", "text": "\x85"},
        ],
        "source": {"kind": "user"},
    }
    assert extract_event_text(ev("user/message", data)) == f"{kept}word{kept}\n\x85"


def test_assistant_message_text_includes_text_and_tool_calls_but_never_reasoning() -> None:
    data = {
        "turn": 1,
        "step": 1,
        "message": {
            "role": "assistant",
            "content": [
                {"type": "reasoning", "text": "secret chain of thought"},
                {"type": "text", "text": "I will look."},
                {"type": "tool-call", "id": "c1", "name": "grep", "arguments": '{"q":"needle"}'},
            ],
        },
    }
    text = extract_event_text(ev("assistant/message", data))
    assert text == 'I will look.\ngrep\n{"q":"needle"}'
    assert "secret" not in text


def test_assistant_message_with_only_reasoning_has_no_text() -> None:
    data = {"message": {"role": "assistant", "content": [{"type": "reasoning", "text": "hm"}]}}
    assert extract_event_text(ev("assistant/message", data)) == ""


def test_tool_call_text_is_its_name_then_arguments() -> None:
    data = {"turn": 1, "step": 1, "callId": "c", "name": "read", "arguments": '{"path":"/a"}'}
    assert extract_event_text(ev("tool/call", data)) == 'read\n{"path":"/a"}'


def test_tool_result_text_is_its_output_then_error_name_and_code() -> None:
    data = tool_result_data(1, 1, "c", "  permission denied ", is_error=True)
    data["error"]["reason"] = "not searchable"
    assert extract_event_text(ev("tool/result", data)) == (
        "permission denied\nToolFailedError\nTOOL_FAILED"
    )


def test_tool_result_without_error_is_only_its_output() -> None:
    assert extract_event_text(ev("tool/result", tool_result_data(1, 1, "c", "ok"))) == "ok"


def test_todo_write_text_is_each_todos_status_then_content() -> None:
    data = {
        "todos": [
            {"content": "write tests", "status": "in_progress"},
            {"content": "ship", "status": "pending"},
        ]
    }
    assert extract_event_text(ev("todo/write", data)) == "in_progress\nwrite tests\npending\nship"


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        (
            {"kind": "error", "error": {"message": "rate limited", "code": "E429"}},
            "error\nrate limited",
        ),
        ({"kind": "aborted", "reason": {"kind": "user"}}, "aborted"),
        ({"kind": "max-tokens"}, "max-tokens"),
        ({"kind": "interrupted"}, "interrupted"),
        ({"kind": "completed"}, ""),
        ({"kind": "blocked"}, ""),
        ({"kind": "something-new"}, ""),
        ({}, ""),
    ],
)
def test_turn_end_text_depends_on_its_reason(reason: dict[str, Any], expected: str) -> None:
    assert extract_event_text(ev("turn/end", {"turn": 1, "reason": reason})) == expected


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("turn/start", {"turn": 1}),
        ("step/start", {"turn": 1, "step": 1}),
        ("step/end", {"turn": 1, "step": 1}),
        ("session/title", {"title": "A title", "messageSeqs": [], "source": {"kind": "user"}}),
        ("session/end-seed", {"inherited": True}),
        (
            "system/message",
            {"message": {"role": "system", "content": [{"type": "text", "text": "x"}]}},
        ),
        ("assistant/attempt", {"stream": [{"type": "text", "text": "partial"}]}),
        ("x-plugin/note", {"text": "plugin text", "content": [{"type": "text", "text": "y"}]}),
    ],
)
def test_structural_and_unknown_events_have_no_text(kind: str, data: Any) -> None:
    assert extract_event_text(ev(kind, data)) == ""


@pytest.mark.parametrize(
    "data",
    [None, "text", [1, 2], {"content": "not a list"}, {"content": [None, 3, "x", {"type": 5}]}],
)
def test_malformed_data_yields_no_text_instead_of_failing(data: Any) -> None:
    assert extract_event_text(ev("user/message", data)) == ""


def test_non_string_parts_are_skipped() -> None:
    data = {"name": 3, "arguments": {"structured": True}}
    assert extract_event_text(ev("tool/call", data)) == ""


def test_a_realistic_turn_has_the_expected_searchable_text() -> None:
    log = LogBuilder()
    log.turn_start()
    log.user("find the needle")
    log.step_start()
    log.assistant("searching", calls=[("c1", "grep", "needle")], reasoning="hidden")
    log.tool_call("c1", "grep", "needle")
    log.tool_result("c1", "haystack.txt:3")
    texts = [extract_event_text(event) for event in log.events]
    assert texts == [
        "",
        "find the needle",
        "",
        "searching\ngrep\nneedle",
        "grep\nneedle",
        "haystack.txt:3",
    ]


@given(valid_events())
def test_extraction_never_fails_and_never_has_outer_whitespace(event: SessionEvent) -> None:
    text = extract_event_text(event)
    assert text == trim(text)


@given(valid_logs())
def test_assistant_text_is_exactly_its_text_and_tool_call_blocks(
    events: list[SessionEvent],
) -> None:
    for event in events:
        if event.type != "assistant/message":
            continue
        parts: list[str] = []
        for block in event.data["message"]["content"]:
            if block["type"] == "text":
                parts.append(block["text"])
            elif block["type"] == "tool-call":
                parts.extend([block["name"], block["arguments"]])
        expected = "\n".join(trim(part) for part in parts if trim(part))
        assert extract_event_text(event) == expected
