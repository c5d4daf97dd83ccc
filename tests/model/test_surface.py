"""The surface fold (SPEC §3.4; reference-contract §1.4-1.7): each rule on its own."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from sessionquery.model import (
    KNOWN_EVENT_TYPES,
    SURFACE_CLASSES,
    SURFACE_ELIGIBLE_TYPES,
    Replace,
    SessionEvent,
    SurfaceError,
    SurfaceFold,
    SurfaceFolder,
    SurfaceOp,
    fold_surface,
)
from sessionquery.model.surface import surface_class_of
from strategies import LogBuilder, tool_result_data, valid_logs

NON_ELIGIBLE_KNOWN = sorted(KNOWN_EVENT_TYPES - SURFACE_ELIGIBLE_TYPES)


def ev(
    type: str,
    seq: int,
    op: SurfaceOp | None = None,
    sources: Sequence[int] | None = None,
    data: Any = None,
    *,
    ignorable: bool = False,
) -> SessionEvent:
    """A bare event for rule tests (data rarely matters to the fold)."""
    return SessionEvent(
        type,
        seq,
        1000 + seq,
        data if data is not None else {},
        surface_op=op,
        source_event_seqs=tuple(sources) if sources is not None else None,
        ignorable=ignorable,
    )


def users(count: int) -> list[SessionEvent]:
    """``count`` appended user messages, seqs 0..count-1."""
    return [ev("user/message", seq, "append") for seq in range(count)]


def refused(events: Sequence[SessionEvent]) -> SurfaceError:
    with pytest.raises(SurfaceError) as info:
        fold_surface(events)
    return info.value


# --- eligibility ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(SURFACE_ELIGIBLE_TYPES))
def test_an_eligible_event_without_a_surface_op_is_refused(kind: str) -> None:
    refused([ev(kind, 0)])


@pytest.mark.parametrize("kind", sorted(SURFACE_ELIGIBLE_TYPES))
def test_an_eligible_event_with_append_is_accepted(kind: str) -> None:
    assert fold_surface([ev(kind, 0, "append")]).nodes == (0,)


@pytest.mark.parametrize("kind", [*NON_ELIGIBLE_KNOWN, "x-plugin/unknown"])
def test_a_non_eligible_event_carrying_a_surface_op_is_refused(kind: str) -> None:
    refused([ev("user/message", 0, "append"), ev(kind, 1, "append")])
    refused([ev("user/message", 0, "append"), ev(kind, 1, Replace(0, 0))])


@pytest.mark.parametrize("kind", [*NON_ELIGIBLE_KNOWN, "x-plugin/unknown"])
def test_a_non_eligible_event_carrying_source_seqs_is_refused(kind: str) -> None:
    refused([ev("user/message", 0, "append"), ev(kind, 1, sources=[0])])


@pytest.mark.parametrize("kind", [*NON_ELIGIBLE_KNOWN, "x-plugin/unknown"])
def test_a_non_eligible_event_carrying_nothing_is_log_only(kind: str) -> None:
    fold = fold_surface([ev("user/message", 0, "append"), ev(kind, 1)])
    assert fold.nodes == (0,)
    assert fold.surface_of[1] == "log-only"


@pytest.mark.parametrize(
    ("op", "sources"),
    [("append", None), (Replace(0, 0), None), (None, [0]), (Replace(7, 3), [9, 9]), (None, [])],
    ids=["append", "replace", "sources", "nonsense-replace", "empty-sources"],
)
def test_an_ignorable_event_of_an_unknown_type_is_skipped_whatever_it_carries(
    op: SurfaceOp | None, sources: list[int] | None
) -> None:
    events = [
        ev("user/message", 0, "append"),
        ev("x-plugin/telemetry", 1, op, sources, ignorable=True),
        ev("user/message", 2, "append"),
    ]
    fold = fold_surface(events)
    assert fold.nodes == (0, 2)
    assert fold.surface_of == {0: "current", 1: "log-only", 2: "current"}
    assert fold.replaced == {}


@pytest.mark.parametrize("kind", NON_ELIGIBLE_KNOWN)
def test_a_known_non_eligible_type_marked_ignorable_still_may_not_carry_surface_ops(
    kind: str,
) -> None:
    refused([ev("user/message", 0, "append"), ev(kind, 1, "append", ignorable=True)])
    refused([ev("user/message", 0, "append"), ev(kind, 1, sources=[0], ignorable=True)])


def test_an_ignorable_eligible_event_still_follows_the_surface_rules() -> None:
    refused([ev("user/message", 0, ignorable=True)])
    assert fold_surface([ev("user/message", 0, "append", ignorable=True)]).nodes == (0,)


# --- append and replace --------------------------------------------------------------------


def test_append_puts_the_seq_at_the_tail() -> None:
    events = [*users(2), ev("turn/start", 2), ev("assistant/message", 3, "append")]
    assert fold_surface(events).nodes == (0, 1, 3)


def test_a_replace_with_equal_endpoints_replaces_one_node() -> None:
    events = [*users(3), ev("user/message", 3, Replace(1, 1), [1])]
    fold = fold_surface(events)
    assert fold.nodes == (0, 3, 2)
    assert fold.replaced == {3: (1,)}


def test_a_replace_removes_the_inclusive_run_between_its_endpoints() -> None:
    events = [*users(5), ev("user/message", 5, Replace(1, 3), [1, 2, 3])]
    fold = fold_surface(events)
    assert fold.nodes == (0, 5, 4)
    assert fold.replaced == {5: (1, 2, 3)}


def test_surface_order_after_a_replace_is_not_seq_ascending() -> None:
    events = [*users(3), ev("user/message", 3, Replace(0, 1), [0, 1])]
    assert fold_surface(events).nodes == (3, 2)


def test_a_replace_whose_start_seq_is_larger_than_its_end_seq_follows_surface_order() -> None:
    # Surface (3, 2): seq 3 comes first, so Replace(3, 2) is a valid run of both nodes.
    events = [
        *users(3),
        ev("user/message", 3, Replace(0, 1), [0, 1]),
        ev("user/message", 4, Replace(3, 2), [3, 2]),
    ]
    fold = fold_surface(events)
    assert fold.nodes == (4,)
    assert fold.replaced[4] == (3, 2)


def test_a_replace_can_cover_the_whole_surface() -> None:
    events = [*users(3), ev("user/message", 3, Replace(0, 2), [0, 1, 2])]
    assert fold_surface(events).nodes == (3,)


def test_a_replace_endpoint_that_was_shadowed_is_refused() -> None:
    base = [*users(3), ev("user/message", 3, Replace(1, 1), [1])]
    refused([*base, ev("user/message", 4, Replace(1, 2), [1, 2])])
    refused([*base, ev("user/message", 4, Replace(0, 1), [0, 1])])


def test_a_replace_endpoint_that_is_log_only_is_refused() -> None:
    base = [*users(2), ev("turn/start", 2), ev("user/message", 3, "append")]
    refused([*base, ev("user/message", 4, Replace(2, 3), [2, 3])])
    refused([*base, ev("user/message", 4, Replace(0, 2), [0, 1, 2])])


def test_a_replace_endpoint_skipped_as_ignorable_is_refused() -> None:
    base = [*users(1), ev("x/y", 1, "append", ignorable=True)]
    refused([*base, ev("user/message", 2, Replace(1, 1), [1])])


@pytest.mark.parametrize("endpoint", [2, 3, 50])
def test_a_replace_endpoint_not_smaller_than_the_events_own_seq_is_refused(endpoint: int) -> None:
    refused([*users(2), ev("user/message", 2, Replace(0, endpoint), [0, 1])])
    refused([*users(2), ev("user/message", 2, Replace(endpoint, endpoint), [0])])


def test_a_replace_whose_start_comes_after_its_end_on_the_surface_is_refused() -> None:
    refused([*users(3), ev("user/message", 3, Replace(2, 0), [0, 1, 2])])


# --- tool/result rewrites ------------------------------------------------------------------


def _tool_log() -> LogBuilder:
    log = LogBuilder()
    log.turn_start()
    log.user("go")
    log.step_start()
    log.assistant(None, calls=[("c1", "read", "{}"), ("c2", "read", "{}")])
    log.tool_call("c1", "read", "{}")
    log.tool_result("c1", "first output")  # seq 5
    log.tool_call("c2", "read", "{}")
    log.tool_result("c2", "second output")  # seq 7
    return log


def test_a_tool_result_may_replace_one_tool_result_changing_only_its_output() -> None:
    log = _tool_log()
    log.rewrite_tool_result(5, "[pruned]")
    fold = fold_surface(log.events)
    assert fold.nodes == (1, 3, 8, 7)
    assert fold.replaced == {8: (5,)}


def test_a_tool_result_rewrite_without_sources_is_accepted() -> None:
    log = _tool_log()
    data = tool_result_data(1, 1, "c1", "[pruned]")
    log.add("tool/result", data, surface_op=Replace(5, 5))
    assert fold_surface(log.events).replaced == {8: (5,)}


def test_a_tool_result_replacing_a_non_tool_result_is_refused() -> None:
    log = _tool_log()
    log.add("tool/result", tool_result_data(1, 1, "c1", "x"), surface_op=Replace(3, 3))
    refused(log.events)


def test_a_tool_result_replacing_two_tool_results_is_refused() -> None:
    log = _tool_log()
    data = tool_result_data(1, 1, "c1", "x")
    log.add("tool/result", data, surface_op=Replace(5, 7), sources=[5, 7])
    refused(log.events)


@pytest.mark.parametrize(
    "path",
    [
        ("turn",),
        ("message", "source", "callId"),
        ("message", "content", 0, "toolCallId"),
        ("message", "content", 0, "isError"),
        ("message", "role"),
    ],
)
def test_a_tool_result_rewrite_changing_anything_but_the_output_is_refused(
    path: tuple[str | int, ...],
) -> None:
    log = _tool_log()
    data = json.loads(json.dumps(log.events[5].data))
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = "changed"
    data["message"]["content"][0]["content"] = [{"type": "text", "text": "[pruned]"}]
    log.add("tool/result", data, surface_op=Replace(5, 5), sources=[5])
    refused(log.events)


def test_a_tool_result_rewrite_adding_an_error_is_refused() -> None:
    log = _tool_log()
    data = tool_result_data(1, 1, "c1", "[pruned]", is_error=True)
    data["message"]["content"][0]["isError"] = False
    log.add("tool/result", data, surface_op=Replace(5, 5), sources=[5])
    refused(log.events)


def test_a_tool_result_rewrite_changing_the_second_content_block_is_refused() -> None:
    data = tool_result_data(0, 0, "c1", "out")
    data["message"]["content"].append({"type": "text", "text": "note"})
    changed = json.loads(json.dumps(data))
    changed["message"]["content"][0]["content"] = []
    first = ev("tool/result", 0, "append", data=data)
    assert fold_surface([first, ev("tool/result", 1, Replace(0, 0), [0], changed)]).nodes == (1,)
    changed["message"]["content"][1]["text"] = "other note"
    refused([first, ev("tool/result", 1, Replace(0, 0), [0], changed)])


def test_other_eligible_types_may_replace_tool_results() -> None:
    log = _tool_log()
    log.compact(1, 3)
    assert fold_surface(log.events).nodes == (1, 8)


# --- system head ---------------------------------------------------------------------------


def _system_log() -> LogBuilder:
    log = LogBuilder()
    log.system("prompt")  # seq 0
    log.user("hi")  # seq 1
    log.user("again")  # seq 2
    return log


def test_a_system_message_may_replace_exactly_the_system_head() -> None:
    log = _system_log()
    log.replace_system_head("new prompt")
    assert fold_surface(log.events).nodes == (3, 1, 2)


def test_a_system_head_replaced_by_a_non_system_event_is_refused() -> None:
    log = _system_log()
    log.add("user/message", {}, surface_op=Replace(0, 0), sources=[0])
    refused(log.events)


def test_a_replace_starting_at_the_system_head_and_covering_more_is_refused() -> None:
    data = {"message": {"role": "system", "content": []}}
    log = _system_log()
    log.add("system/message", data, surface_op=Replace(0, 1), sources=[0, 1])
    refused(log.events)
    log = _system_log()
    log.add("user/message", {}, surface_op=Replace(0, 2), sources=[0, 1, 2])
    refused(log.events)


def test_the_system_head_rule_applies_to_a_replaced_head_too() -> None:
    log = _system_log()
    log.replace_system_head("new prompt")  # seq 3 is the new head
    log.add("user/message", {}, surface_op=Replace(3, 1), sources=[3, 1])
    refused(log.events)


def test_a_replace_after_the_system_head_is_unrestricted() -> None:
    log = _system_log()
    log.compact(1, 2)
    assert fold_surface(log.events).nodes == (0, 3)


def test_a_system_message_not_at_the_head_may_be_replaced_by_anything() -> None:
    log = LogBuilder()
    log.user("first")
    log.system("mid-session note")
    log.add("user/message", {}, surface_op=Replace(1, 1), sources=[1])
    assert fold_surface(log.events).nodes == (0, 2)


def test_a_non_system_head_may_be_replaced_by_anything() -> None:
    log = LogBuilder()
    log.user("first")
    log.user("second")
    log.compact(0, 1)
    assert fold_surface(log.events).nodes == (2,)


# --- source seqs ---------------------------------------------------------------------------


def test_source_seqs_on_an_eligible_event_are_accepted_when_valid() -> None:
    events = [*users(2), ev("tool/result", 2, "append", [0, 1])]
    assert fold_surface(events).nodes == (0, 1, 2)


def test_empty_source_seqs_are_refused() -> None:
    refused([*users(1), ev("user/message", 1, "append", [])])


def test_duplicate_source_seqs_are_refused() -> None:
    refused([*users(2), ev("user/message", 2, "append", [0, 0])])


@pytest.mark.parametrize("source", [2, 3, 100])
def test_a_source_seq_not_smaller_than_the_events_own_seq_is_refused(source: int) -> None:
    refused([*users(2), ev("user/message", 2, "append", [0, source])])


def test_source_seqs_on_an_assistant_message_are_refused() -> None:
    refused([*users(1), ev("assistant/message", 1, "append", [0])])


def test_source_seqs_may_cite_log_only_and_shadowed_events() -> None:
    events = [
        ev("turn/start", 0),
        *[ev("user/message", seq, "append") for seq in (1, 2)],
        ev("user/message", 3, Replace(1, 1), [1]),
        ev("tool/result", 4, "append", [0, 1]),
    ]
    assert fold_surface(events).nodes == (3, 2, 4)


def test_a_replaces_sources_must_include_every_removed_node() -> None:
    refused([*users(4), ev("user/message", 4, Replace(0, 2), [0, 2])])


def test_a_replaces_sources_may_include_extra_seqs() -> None:
    events = [*users(4), ev("turn/start", 4), ev("user/message", 5, Replace(1, 2), [1, 2, 3, 4])]
    assert fold_surface(events).replaced == {5: (1, 2)}


def test_a_replace_without_sources_is_accepted() -> None:
    # SPEC §3.4: the sources rules apply "when present".
    assert fold_surface([*users(2), ev("user/message", 2, Replace(0, 1))]).nodes == (2,)


# --- seq contiguity ------------------------------------------------------------------------


@pytest.mark.parametrize("seqs", [[1], [0, 2], [0, 1, 1], [0, 1, 0], [0, 3, 2]], ids=str)
def test_seqs_must_be_contiguous_from_zero(seqs: list[int]) -> None:
    refused([ev("turn/start", seq) for seq in seqs])


def test_an_empty_log_folds_to_an_empty_surface() -> None:
    assert fold_surface([]) == SurfaceFold(nodes=(), surface_of={}, replaced_by={}, replaced={})


def test_surface_error_is_a_value_error() -> None:
    assert issubclass(SurfaceError, ValueError)


# --- results -------------------------------------------------------------------------------


def test_fold_results_classify_current_shadowed_and_log_only_and_map_replacements() -> None:
    events = [
        ev("turn/start", 0),
        *[ev("user/message", seq, "append") for seq in (1, 2, 3)],
        ev("user/message", 4, Replace(2, 3), [2, 3]),  # surface 1, 4
        ev("user/message", 5, Replace(1, 4), [1, 4]),  # 4 is a replacement, now replaced
        ev("turn/end", 6),
    ]
    fold = fold_surface(events)
    assert fold.nodes == (5,)
    assert fold.surface_of == {
        0: "log-only",
        1: "shadowed",
        2: "shadowed",
        3: "shadowed",
        4: "shadowed",
        5: "current",
        6: "log-only",
    }
    assert fold.replaced_by == {1: 5, 2: 4, 3: 4, 4: 5}
    assert fold.replaced == {4: (2, 3), 5: (1, 4)}


def test_replaced_lists_removed_seqs_in_surface_order_not_seq_order() -> None:
    events = [
        *users(3),
        ev("user/message", 3, Replace(0, 0), [0]),  # surface 3, 1, 2
        ev("user/message", 4, Replace(3, 1), [3, 1]),
    ]
    assert fold_surface(events).replaced[4] == (3, 1)


def test_a_current_replacement_is_current_and_not_in_replaced_by() -> None:
    fold = fold_surface([*users(2), ev("user/message", 2, Replace(0, 0), [0])])
    assert fold.surface_of[2] == "current"
    assert 2 not in fold.replaced_by
    assert fold.replaced_by == {0: 2}


# --- incremental folder --------------------------------------------------------------------

_BAD_NEXT_EVENTS = [
    ev("user/message", 4),
    ev("user/message", 5, "append"),
    ev("turn/start", 4, "append"),
    ev("user/message", 4, Replace(2, 2), [2]),
    ev("user/message", 4, Replace(1, 0), [0, 1]),
    ev("user/message", 4, Replace(0, 1), [0]),
    ev("user/message", 4, "append", []),
    ev("assistant/message", 4, "append", [0]),
    ev("tool/result", 4, Replace(0, 0), [0]),
]


@pytest.mark.parametrize("bad", _BAD_NEXT_EVENTS, ids=range(len(_BAD_NEXT_EVENTS)))
def test_a_failing_apply_leaves_the_folder_unchanged(bad: SessionEvent) -> None:
    prefix = [*users(2), ev("turn/start", 2), ev("user/message", 3, Replace(1, 1), [1])]
    folder = SurfaceFolder()
    for event in prefix:
        folder.apply(event)
    before = folder.snapshot()
    with pytest.raises(SurfaceError):
        folder.apply(bad)
    assert folder.snapshot() == before
    assert folder.length == 4
    follow = [ev("user/message", 4, Replace(0, 3), [0, 3]), ev("user/message", 5, "append")]
    for event in follow:
        folder.apply(event)
    assert folder.snapshot() == fold_surface([*prefix, *follow])


def test_the_folder_answers_per_seq_questions_as_it_goes() -> None:
    folder = SurfaceFolder()
    for event in users(2):
        folder.apply(event)
    assert folder.is_current(0)
    assert folder.surface_class(1) == "current"
    folder.apply(ev("user/message", 2, Replace(0, 0), [0]))
    assert not folder.is_current(0)
    assert folder.surface_class(0) == "shadowed"
    assert folder.surface_class(99) == "log-only"
    assert folder.nodes() == (2, 1)


def test_a_snapshot_is_detached_from_later_folding() -> None:
    folder = SurfaceFolder()
    folder.apply(ev("user/message", 0, "append"))
    snapshot = folder.snapshot()
    folder.apply(ev("user/message", 1, Replace(0, 0), [0]))
    assert snapshot.nodes == (0,)
    assert snapshot.surface_of == {0: "current"}
    assert snapshot.replaced == {}


# --- properties over realistic logs ----------------------------------------------------------


def _reference_fold(events: Sequence[SessionEvent]) -> tuple[list[int], dict[int, int]]:
    """A deliberately naive list-based fold of a known-valid log."""
    surface: list[int] = []
    removed_by: dict[int, int] = {}
    for event in events:
        skip = event.ignorable and event.type not in KNOWN_EVENT_TYPES
        if skip or event.type not in SURFACE_ELIGIBLE_TYPES:
            continue
        op = event.surface_op
        if op == "append":
            surface.append(event.seq)
        elif isinstance(op, Replace):
            lo, hi = surface.index(op.start_seq), surface.index(op.end_seq)
            for seq in surface[lo : hi + 1]:
                removed_by[seq] = event.seq
            surface[lo : hi + 1] = [event.seq]
    return surface, removed_by


@given(valid_logs())
def test_folding_a_realistic_log_matches_a_naive_list_fold(events: list[SessionEvent]) -> None:
    fold = fold_surface(events)
    surface, removed_by = _reference_fold(events)
    assert list(fold.nodes) == surface
    assert dict(fold.replaced_by) == removed_by


@given(valid_logs())
def test_fold_results_are_mutually_consistent(events: list[SessionEvent]) -> None:
    fold = fold_surface(events)
    assert set(fold.surface_of) == set(range(len(events)))
    current = {seq for seq, cls in fold.surface_of.items() if cls == "current"}
    shadowed = {seq for seq, cls in fold.surface_of.items() if cls == "shadowed"}
    assert current == set(fold.nodes)
    assert len(fold.nodes) == len(current)
    assert shadowed == set(fold.replaced_by)
    flattened = [seq for removed in fold.replaced.values() for seq in removed]
    assert sorted(flattened) == sorted(fold.replaced_by)
    for replacer, removed in fold.replaced.items():
        assert all(fold.replaced_by[seq] == replacer for seq in removed)
        assert all(seq < replacer for seq in removed)


@given(valid_logs(), st.data())
def test_every_prefix_of_a_valid_log_folds_and_matches_the_incremental_folder(
    events: list[SessionEvent], data: st.DataObject
) -> None:
    cut = data.draw(st.integers(0, len(events)))
    folder = SurfaceFolder()
    for event in events[:cut]:
        folder.apply(event)
    assert folder.snapshot() == fold_surface(events[:cut])


_LOG_FEATURES: dict[str, Callable[[list[SessionEvent]], bool]] = {
    "compaction": lambda events: any(
        e.type == "user/message" and isinstance(e.surface_op, Replace) for e in events
    ),
    "tool-result-rewrite": lambda events: any(
        e.type == "tool/result" and isinstance(e.surface_op, Replace) for e in events
    ),
    "system-head-replace": lambda events: any(
        e.type == "system/message" and isinstance(e.surface_op, Replace) for e in events
    ),
    "replacement-replaced": lambda events: any(
        cls == "shadowed" and seq in fold_surface(events).replaced
        for seq, cls in fold_surface(events).surface_of.items()
    ),
    "non-ascending-surface": lambda events: (
        list(fold_surface(events).nodes) != sorted(fold_surface(events).nodes)
    ),
    "cited-tool-call": lambda events: any(
        e.type == "tool/result" and e.source_event_seqs and e.surface_op == "append" for e in events
    ),
    "ignorable-unknown-with-op": lambda events: any(
        e.ignorable and e.surface_op is not None for e in events
    ),
    "title": lambda events: any(e.type == "session/title" for e in events),
    "todo": lambda events: any(e.type == "todo/write" for e in events),
}


def test_the_shared_valid_logs_strategy_produces_every_realistic_feature() -> None:
    # Other test modules rely on valid_logs() covering these shapes; keep it honest.
    seen: set[str] = set()

    @settings(max_examples=150, phases=[Phase.generate], database=None, derandomize=True)
    @given(valid_logs())
    def collect(events: list[SessionEvent]) -> None:
        seen.update(name for name, has in _LOG_FEATURES.items() if has(events))

    collect()
    assert seen == set(_LOG_FEATURES)


def test_the_surface_classes_are_one_closed_list_shared_by_filters_schemas_and_cli() -> None:
    from sessionquery.cli._parser import SURFACES
    from sessionquery.query.filters import SURFACE_VALUES
    from sessionquery.tools.specs import input_schema

    assert SURFACE_CLASSES == ("current", "shadowed", "log-only")
    assert SURFACE_VALUES == SURFACES == SURFACE_CLASSES
    schema = input_schema("session_event_search")["properties"]["surfaces"]
    assert tuple(schema["items"]["enum"]) == SURFACE_CLASSES


def test_a_seq_is_current_on_the_surface_shadowed_when_replaced_and_else_log_only() -> None:
    assert surface_class_of(1, {1: None}, {1}) == "current"  # the surface wins
    assert surface_class_of(2, {1: None}, {2}) == "shadowed"
    assert surface_class_of(3, {1: None}, {2}) == "log-only"


_ANY_TYPES = [*sorted(KNOWN_EVENT_TYPES), "custom/thing"]


@st.composite
def _doubtful_logs(draw: st.DrawFn) -> list[SessionEvent]:
    """Events that mostly follow the rules, and sometimes break one (a seq out of order, an
    operation or sources where they may not be, a replace of what is not there)."""
    events: list[SessionEvent] = []
    for seq in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(_ANY_TYPES))
        op: SurfaceOp | None = draw(
            st.one_of(
                st.just("append"),
                st.none(),
                st.builds(Replace, st.integers(0, max(seq, 1)), st.integers(0, max(seq, 1))),
            )
        )
        sources = draw(st.none() | st.lists(st.integers(0, seq + 1), max_size=3))
        at = seq + draw(st.sampled_from([0, 0, 0, 0, 0, 0, 1, -1]))
        ignorable = draw(st.booleans())
        events.append(ev(kind, max(at, 0), op, sources, ignorable=ignorable))
    return events


@given(_doubtful_logs())
def test_extending_a_folder_folds_as_applying_each_event_does(events: list[SessionEvent]) -> None:
    one, many = SurfaceFolder(), SurfaceFolder()
    error: str | None = None
    try:
        for event in events:
            one.apply(event)
    except SurfaceError as refusal:
        error = str(refusal)
    if error is None:
        many.extend(events)
    else:
        with pytest.raises(SurfaceError) as info:
            many.extend(events)
        assert str(info.value) == error
    assert many.length == one.length
    assert many.snapshot() == one.snapshot()
    assert many.nodes() == one.nodes()
