"""Session titles (SPEC §3.5; reference-contract §1.8): the last title event wins."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given

from sessionquery.model import SessionEvent, TitleSnapshot, fold_title
from strategies import LogBuilder, valid_logs


def test_a_log_without_title_events_has_no_title() -> None:
    log = LogBuilder()
    log.turn_start()
    log.user("hi")
    assert fold_title(log.events) is None
    assert fold_title([]) is None


def test_the_snapshot_carries_title_message_seqs_source_seq_and_time() -> None:
    log = LogBuilder(start=5_000)
    log.turn_start()
    user = log.user("fix the parser")
    title = log.title("Fix the parser", [user.seq], kind="fallback")
    assert fold_title(log.events) == TitleSnapshot(
        title="Fix the parser",
        message_seqs=(user.seq,),
        source={"kind": "fallback"},
        event_seq=title.seq,
        updated_at=5_000 + title.seq,
    )


def test_the_last_title_event_wins() -> None:
    log = LogBuilder()
    log.title("first", kind="fallback")
    log.user("x")
    log.title("renamed", [], kind="user")
    last = log.title("final", [1], kind="fallback")
    log.turn_start()
    snapshot = fold_title(log.events)
    assert snapshot is not None
    assert snapshot.title == "final"
    assert snapshot.event_seq == last.seq
    assert snapshot.message_seqs == (1,)


def test_a_provider_source_is_kept_whole() -> None:
    source = {"kind": "provider", "provider": "p", "model": {"provider": "p", "model": "m"}}
    event = SessionEvent("session/title", 0, 7, {"title": "T", "messageSeqs": [], "source": source})
    snapshot = fold_title([event])
    assert snapshot is not None
    assert snapshot.source == source


def test_the_snapshot_is_immutable() -> None:
    log = LogBuilder()
    log.title("T", [0])
    snapshot = fold_title(log.events)
    assert snapshot is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        snapshot.title = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        snapshot.source["kind"] = "user"
    assert isinstance(snapshot.message_seqs, tuple)


@pytest.mark.parametrize(
    "data",
    [{"messageSeqs": []}, {"title": 5}, {"title": None}, None, ["t"]],
    ids=["missing", "not-text", "null-title", "null-data", "list-data"],
)
def test_a_last_title_event_without_title_text_leaves_the_previous_title(data: object) -> None:
    # Decision: an event without a title string carries no title at all; the previous stands.
    log = LogBuilder()
    earlier = log.title("Good title")
    log.add("session/title", data)
    snapshot = fold_title(log.events)
    assert snapshot is not None
    assert snapshot.title == "Good title"
    assert snapshot.event_seq == earlier.seq


@pytest.mark.parametrize("blank", ["", "   ", "\t\n"])
def test_the_last_title_event_wins_even_when_its_title_is_blank(blank: str) -> None:
    log = LogBuilder()
    log.title("Good title")
    last = log.add("session/title", {"title": blank, "messageSeqs": [], "source": {"kind": "user"}})
    snapshot = fold_title(log.events)
    assert snapshot == TitleSnapshot(
        title=blank,
        message_seqs=(),
        source={"kind": "user"},
        event_seq=last.seq,
        updated_at=last.time,
    )


def test_the_folded_source_keeps_only_the_known_source_fields() -> None:
    source = {
        "kind": "provider",
        "provider": "p",
        "model": {"provider": "p", "model": "m", "temperature": 0.2},
        "prompt": "secret prompt",
        "tokens": 12,
    }
    event = SessionEvent("session/title", 0, 7, {"title": "T", "messageSeqs": [], "source": source})
    snapshot = fold_title([event])
    assert snapshot is not None
    assert snapshot.source == {
        "kind": "provider",
        "provider": "p",
        "model": {"provider": "p", "model": "m"},
    }


@pytest.mark.parametrize(
    ("source", "folded"),
    [
        ({"kind": "user", "by": "someone"}, {"kind": "user"}),
        ({"kind": "claude-summary", "leafUuid": "u"}, {"kind": "claude-summary"}),
        (
            {"kind": "provider", "provider": "p", "model": "m"},
            {"kind": "provider", "provider": "p", "model": "m"},
        ),
        ({"note": "no kind"}, {}),
        (None, None),
        ("fallback", "fallback"),
    ],
)
def test_a_source_of_any_shape_folds_to_its_known_fields(source: object, folded: object) -> None:
    event = SessionEvent("session/title", 0, 7, {"title": "T", "messageSeqs": [], "source": source})
    snapshot = fold_title([event])
    assert snapshot is not None
    assert snapshot.source == folded


def test_non_integer_message_seqs_are_dropped() -> None:
    event = SessionEvent("session/title", 0, 0, {"title": "T", "messageSeqs": [1, "2", True, 3]})
    snapshot = fold_title([event])
    assert snapshot is not None
    assert snapshot.message_seqs == (1, 3)


def test_other_event_types_with_a_title_field_are_ignored() -> None:
    event = SessionEvent("x-plugin/title", 0, 0, {"title": "not a session title"})
    assert fold_title([event]) is None


@given(valid_logs())
def test_fold_title_picks_the_last_session_title_event_of_a_realistic_log(
    events: list[SessionEvent],
) -> None:
    titles = [event for event in events if event.type == "session/title"]
    snapshot = fold_title(events)
    if not titles:
        assert snapshot is None
    else:
        assert snapshot is not None
        assert snapshot.event_seq == titles[-1].seq
        assert snapshot.title == titles[-1].data["title"]
        assert snapshot.updated_at == titles[-1].time
