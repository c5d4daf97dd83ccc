"""The plain-text formats of the five tools (reference contract §6.7)."""

from __future__ import annotations

import json

from sessionquery.model import Replace, SessionEvent, SessionHeader, TitleSnapshot
from sessionquery.query.types import (
    EventRecord,
    EventSearchHit,
    EventTrace,
    EventWindow,
    SessionRecord,
    SessionSearchHit,
)
from sessionquery.tools.access import VisibleLineage
from sessionquery.tools.render import (
    NO_EVENT_MATCHES,
    NO_SESSION_MATCHES,
    availability_text,
    display_title,
    format_time,
    partial_index_line,
    render_event_read,
    render_event_search,
    render_event_trace,
    render_session_search,
    render_trace,
    session_cap_sentence,
    title_unavailable,
)

T0 = 1_738_315_800_000  # 2025-01-31T09:30:00.000Z


def _record(session_id: str, *, live: bool = False, persisted: bool = True) -> SessionRecord:
    header = SessionHeader(id=session_id, created_at=T0, cwd="/w")
    return SessionRecord(header, live=live, persisted=persisted)


def _hit(session_id: str, seq: int, snippet: str) -> EventSearchHit:
    return EventSearchHit(session_id, seq, "user/message", T0 + seq, "current", snippet)


def test_times_are_utc_iso_8601_with_milliseconds() -> None:
    assert format_time(T0) == "2025-01-31T09:30:00.000Z"
    assert format_time(T0 + 7) == "2025-01-31T09:30:00.007Z"
    assert format_time(0) == "1970-01-01T00:00:00.000Z"


def test_availability_text_names_every_flag_or_unavailable() -> None:
    assert availability_text(_record("a", live=True, persisted=True)) == "live, persisted"
    assert availability_text(_record("a", live=True, persisted=False)) == "live"
    assert availability_text(_record("a", live=False, persisted=False)) == "unavailable"


def test_session_search_without_hits_is_one_fixed_line() -> None:
    assert render_session_search([], capped=False, cap=5) == NO_SESSION_MATCHES


def test_session_search_numbers_hits_at_column_zero_with_indented_details() -> None:
    hit = SessionSearchHit(_record("s1"), _hit("s1", 3, "ran the failing test"))
    text = render_session_search([(hit, "Fix tests", "root")], capped=True, cap=1)
    assert text == "\n".join(
        [
            "Session search results (1):",
            "",
            "1. Session s1 \u2014 Fix tests",
            "   Created: 2025-01-31T09:30:00.000Z",
            "   Parent: root",
            "   Availability: persisted",
            "   Best match: seq 3 | user/message | current | 2025-01-31T09:30:00.003Z",
            "   Snippet: ran the failing test",
            "",
            session_cap_sentence(1),
        ]
    )


def test_titles_and_snippets_cannot_forge_lines() -> None:
    hit = SessionSearchHit(_record("s1"), _hit("s1", 3, "a\n2. Session evil"))
    text = render_session_search([(hit, "t\n\n2. Session x", "root")], capped=False, cap=5)
    assert [line for line in text.split("\n") if line.startswith("2.")] == []


def test_event_search_lists_hits_under_the_session_heading() -> None:
    text = render_event_search(
        "s1", "untitled", [_hit("s1", 2, "x"), _hit("s1", 9, "y")], capped=False, cap=9
    )
    assert text.split("\n") == [
        "Session s1 \u2014 untitled",
        "",
        "Event search results (2):",
        "1. seq 2 | user/message | current | 2025-01-31T09:30:00.002Z",
        "   Snippet: x",
        "2. seq 9 | user/message | current | 2025-01-31T09:30:00.009Z",
        "   Snippet: y",
    ]
    empty = render_event_search(
        "s1", title_unavailable("SESSION_QUERY_CORRUPT_SESSION"), [], capped=False, cap=9
    )
    assert empty.split("\n") == [
        "Session s1 \u2014 untitled (title unavailable: SESSION_QUERY_CORRUPT_SESSION)",
        "",
        NO_EVENT_MATCHES,
    ]


def test_trace_of_a_root_session_without_descendants_says_none() -> None:
    lineage = VisibleLineage(_record("t"), (), False, ())
    assert render_trace(lineage, {}).split("\n") == [
        "Session t \u2014 untitled",
        "Created: 2025-01-31T09:30:00.000Z",
        "Availability: persisted",
        "",
        "Ancestors (nearest first):",
        "- none (target is a root session)",
        "",
        "Descendants:",
        "- none",
    ]


def test_trace_shows_boundary_and_subtree_markers_without_hidden_ids() -> None:
    lineage = VisibleLineage(
        _record("t"),
        (_record("p"),),
        True,
        ((0, _record("c")), (1, _record("g")), (0, None)),
    )
    lines = render_trace(lineage, {"t": "Target", "p": "Parent"}).split("\n")
    assert lines[4:] == [
        "Ancestors (nearest first):",
        "- p \u2014 Parent | 2025-01-31T09:30:00.000Z | persisted",
        "- [outside workspace boundary]",
        "",
        "Descendants:",
        "- c \u2014 untitled | 2025-01-31T09:30:00.000Z | persisted",
        "  - g \u2014 untitled | 2025-01-31T09:30:00.000Z | persisted",
        "- [outside workspace subtree]",
    ]


def test_event_trace_is_seven_lines_with_seq_references() -> None:
    trace = EventTrace(
        session=SessionHeader(id="s", created_at=T0),
        target=EventRecord("s", 4, "tool/result", T0, "shadowed"),
        replaced_by=7,
        replacement_chain=(7, 12),
        replaced_event_seqs=(),
        source_event_seqs=(2, 3),
        derived_event_seqs=(),
    )
    assert render_event_trace(trace, "T").split("\n") == [
        "Session s \u2014 T",
        "Target: seq 4 | tool/result | shadowed | 2025-01-31T09:30:00.000Z",
        "Replaced by: seq 7",
        "Replacement chain: seq 7, seq 12",
        "Events replaced by target: none",
        "Events cited directly as sources: seq 2, seq 3",
        "Direct derived events: none",
    ]


def test_event_read_prints_the_whole_event_as_json_and_summarises_neighbours() -> None:
    user = SessionEvent(
        type="user/message",
        seq=1,
        time=T0,
        data={"id": "m", "role": "user", "content": [{"type": "text", "text": "héllo\nworld"}]},
        surface_op="append",
    )
    step = SessionEvent(type="step/start", seq=2, time=T0, data={"turn": 0, "step": 0})
    system = SessionEvent(
        type="system/message",
        seq=3,
        time=T0 + 1,
        data={"message": {"role": "system", "content": [{"type": "text", "text": "summary"}]}},
        surface_op=Replace(1, 1),
        source_event_seqs=(1,),
    )
    window = EventWindow(SessionHeader(id="s", created_at=T0), 0, step, (user, step, system), 1, 3)
    text = render_event_read(window, "T")
    assert text.split("\n")[:3] == ["Session s \u2014 T", "Target event seq 2:", "```json"]
    body = text.split("```json\n")[1].split("\n```")[0]
    assert body == json.dumps(step.to_json(), indent=2, ensure_ascii=False)
    assert text.split("```\n")[1].split("\n") == [
        "",
        "Before:",
        "- seq 1 | user/message | 2025-01-31T09:30:00.000Z",
        "  héllo",
        "  world",
        "",
        "After:",
        "- seq 3 | system/message | 2025-01-31T09:30:00.001Z | (no semantic text)",
    ]


def test_event_read_keeps_key_order_and_non_ascii_of_the_stored_event() -> None:
    event = SessionEvent(
        type="x/custom", seq=0, time=T0, data={"z": 1, "a": "日本"}, ignorable=True
    )
    window = EventWindow(SessionHeader(id="s", created_at=T0), 0, event, (event,), 0, 0)
    text = render_event_read(window, "T")
    assert '"z": 1,\n    "a": "日本"' in text
    assert '"ignorable": true' in text
    assert "Before:" not in text and "After:" not in text


def test_a_time_past_the_year_9999_renders_as_its_raw_number_instead_of_failing() -> None:
    assert format_time(253_402_300_799_999) == "9999-12-31T23:59:59.999Z"
    assert format_time(2**53 - 1) == f"epoch-ms {2**53 - 1}"


def test_a_missing_or_blank_title_is_shown_as_untitled() -> None:
    def snapshot(title: str) -> TitleSnapshot:
        return TitleSnapshot(title, (), {"kind": "user"}, 3, T0)

    assert display_title(None) == "untitled"
    assert display_title(snapshot("")) == "untitled"
    assert display_title(snapshot(" \n\ufeff")) == "untitled"
    assert display_title(snapshot("Fix the parser")) == "Fix the parser"


def test_an_answer_from_an_unfinished_index_is_headed_by_how_much_is_indexed() -> None:
    hit = SessionSearchHit(_record("s1"), _hit("s1", 3, "ran the failing test"))
    text = render_session_search([(hit, "Fix tests", "root")], capped=False, cap=5, partial=(7, 9))
    first, second = text.split("\n")[:2]
    assert first == partial_index_line(7, 9)
    assert first.startswith("The history index is still being built (7 of 9 sessions indexed)")
    assert second == "Session search results (1):"
    empty = render_session_search([], capped=False, cap=5, partial=(0, 9))
    assert empty == f"{partial_index_line(0, 9)}\n{NO_SESSION_MATCHES}"
    assert render_session_search([(hit, "t", "root")], capped=False, cap=5).startswith("Session")
