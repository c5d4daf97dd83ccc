"""Session events and their wire form (SPEC §3.2)."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import pickle
from typing import Any

import pytest
from hypothesis import given

from sessionquery.model import FrozenDict, FrozenList, Replace, SessionEvent, thaw
from strategies import valid_events


def wire(**overrides: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"type": "turn/start", "seq": 0, "time": 10, "data": {"turn": 1}}
    record.update(overrides)
    return record


@given(valid_events())
def test_event_round_trips_through_its_json_text(event: SessionEvent) -> None:
    text = json.dumps(event.to_json(), ensure_ascii=False)
    assert SessionEvent.from_json(json.loads(text)) == event


@given(valid_events())
@pytest.mark.slow
def test_event_round_trips_through_its_wire_object(event: SessionEvent) -> None:
    assert SessionEvent.from_json(event.to_json()) == event


def test_to_json_writes_the_documented_envelope() -> None:
    event = SessionEvent(
        "user/message",
        4,
        99,
        {"content": []},
        surface_op=Replace(1, 2),
        source_event_seqs=(1, 2),
        ignorable=True,
    )
    assert event.to_json() == {
        "type": "user/message",
        "seq": 4,
        "time": 99,
        "data": {"content": []},
        "surfaceOp": {"op": "replace", "startSeq": 1, "endSeq": 2},
        "sourceEventSeqs": [1, 2],
        "ignorable": True,
    }


def test_to_json_omits_optional_keys_that_are_unset() -> None:
    event = SessionEvent("turn/start", 0, 10, {"turn": 1})
    assert event.to_json() == wire()
    append = SessionEvent("user/message", 0, 10, {}, surface_op="append")
    assert append.to_json()["surfaceOp"] == "append"


@pytest.mark.parametrize("extra", ["surface_op", "kind", "version", "meta"])
def test_unknown_envelope_keys_are_rejected(extra: str) -> None:
    with pytest.raises(ValueError, match=extra):
        SessionEvent.from_json(wire(**{extra: 1}))


@pytest.mark.parametrize("missing", ["type", "seq", "time", "data"])
def test_missing_envelope_keys_are_rejected(missing: str) -> None:
    record = wire()
    del record[missing]
    with pytest.raises(ValueError, match=missing):
        SessionEvent.from_json(record)


@pytest.mark.parametrize("record", [[], "event", None, 1])
def test_a_non_object_event_is_rejected(record: object) -> None:
    with pytest.raises(ValueError, match="object"):
        SessionEvent.from_json(record)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("seq", True),
        ("seq", False),
        ("seq", -1),
        ("seq", 1.0),
        ("seq", "1"),
        ("time", True),
        ("time", -5),
        ("time", 1.5),
        ("type", ""),
        ("type", 3),
        ("ignorable", 1),
        ("ignorable", "true"),
    ],
)
def test_invalid_envelope_values_are_rejected(key: str, value: object) -> None:
    with pytest.raises(ValueError, match=key):
        SessionEvent.from_json(wire(**{key: value}))


def test_bool_is_not_accepted_as_an_integer_seq() -> None:
    with pytest.raises(ValueError, match="seq"):
        SessionEvent("turn/start", True, 0)
    with pytest.raises(ValueError, match="seq"):
        SessionEvent.from_json(wire(sourceEventSeqs=[True], type="user/message", seq=3))


@pytest.mark.parametrize(
    "op",
    [
        "prepend",
        {"op": "replace", "start": 0, "end": 1},
        {"op": "replace", "startSeq": 0},
        {"op": "replace", "startSeq": 0, "endSeq": 1, "extra": 1},
        {"op": "splice", "startSeq": 0, "endSeq": 1},
        {"op": "replace", "startSeq": -1, "endSeq": 1},
        {"op": "replace", "startSeq": True, "endSeq": 1},
        {"op": "replace", "startSeq": 0, "endSeq": 1.0},
        ["append"],
        5,
    ],
)
def test_malformed_surface_ops_are_rejected(op: object) -> None:
    with pytest.raises(ValueError, match=r"surfaceOp|start_seq|end_seq"):
        SessionEvent.from_json(wire(type="user/message", seq=5, surfaceOp=op))


@pytest.mark.parametrize("sources", [3, "1,2", {"a": 1}, [-1], [1.0], [None]])
def test_malformed_source_seqs_are_rejected(sources: object) -> None:
    with pytest.raises(ValueError, match=r"sourceEventSeqs|source_event_seqs"):
        SessionEvent.from_json(wire(type="user/message", seq=5, sourceEventSeqs=sources))


def test_a_replace_is_parsed_into_a_replace_value() -> None:
    record = wire(
        type="user/message", seq=5, surfaceOp={"op": "replace", "startSeq": 2, "endSeq": 1}
    )
    event = SessionEvent.from_json(record)
    assert event.surface_op == Replace(2, 1)


@pytest.mark.parametrize(
    "data",
    [
        math.nan,
        {"x": math.inf},
        {"x": [-math.inf]},
        {1: "a"},
        {"x": {2: "b"}},
        {"x": {1, 2}},
        {"x": b"bytes"},
        {"x": "\ud800"},
        {"\udc00": 1},
    ],
    ids=[
        "nan",
        "inf",
        "nested-neg-inf",
        "int-key",
        "nested-int-key",
        "set",
        "bytes",
        "lone-surrogate-value",
        "lone-surrogate-key",
    ],
)
def test_event_data_must_be_lossless_json(data: object) -> None:
    with pytest.raises(ValueError, match="data"):
        SessionEvent("x/y", 0, 0, data)


def test_a_lone_surrogate_escape_in_wire_data_is_rejected() -> None:
    # json.loads accepts "\\ud800" escapes; such text cannot be stored as UTF-8.
    record = json.loads('{"type": "t", "seq": 0, "time": 0, "data": {"text": "\\ud800"}}')
    with pytest.raises(ValueError, match="surrogate"):
        SessionEvent.from_json(record)


def test_a_lone_surrogate_in_the_event_type_is_rejected() -> None:
    # The type is written to the JSONL line too; it must be encodable as UTF-8.
    with pytest.raises(ValueError, match="type"):
        SessionEvent("tool/\ud800", 0, 0)


def test_event_data_is_deep_frozen_and_detached_from_the_input() -> None:
    source: dict[str, Any] = {"message": {"content": [{"type": "text", "text": "hi"}]}}
    event = SessionEvent("user/message", 0, 0, source, surface_op="append")
    source["message"]["content"].append("later")
    assert event.data == {"message": {"content": [{"type": "text", "text": "hi"}]}}
    assert isinstance(event.data, FrozenDict)
    assert isinstance(event.data["message"]["content"], FrozenList)
    with pytest.raises(TypeError):
        event.data["message"]["content"][0]["text"] = "changed"
    with pytest.raises(TypeError):
        event.data["message"]["content"].append({})


def test_mutating_the_wire_form_never_changes_the_event() -> None:
    event = SessionEvent("x", 0, 0, {"a": [1]}, source_event_seqs=None)
    record = event.to_json()
    record["data"] = {"b": 2}
    record["seq"] = 9
    assert event.to_json() == {"type": "x", "seq": 0, "time": 0, "data": {"a": [1]}}


def test_thawed_event_data_is_a_mutable_copy() -> None:
    event = SessionEvent("x", 0, 0, {"a": [1]})
    plain = thaw(event.data)
    plain["a"].append(2)
    assert event.data == {"a": [1]}


def test_an_event_is_frozen() -> None:
    event = SessionEvent("x", 0, 0, {"a": 1})
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.seq = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.data = {}  # type: ignore[misc]


def test_source_event_seqs_are_stored_as_a_tuple() -> None:
    sources = [1, 2]
    event = SessionEvent("user/message", 5, 0, {}, surface_op="append", source_event_seqs=sources)  # type: ignore[arg-type]
    sources.append(3)
    assert event.source_event_seqs == (1, 2)


@given(valid_events())
def test_events_survive_pickle_and_deepcopy(event: SessionEvent) -> None:
    for duplicate in (pickle.loads(pickle.dumps(event)), copy.deepcopy(event)):
        assert duplicate == event
        assert hash(duplicate) == hash(event)


@given(valid_events())
def test_equal_events_have_equal_hashes(event: SessionEvent) -> None:
    twin = SessionEvent.from_json(json.loads(json.dumps(event.to_json())))
    assert twin == event
    assert hash(twin) == hash(event)


def test_events_with_different_data_are_not_equal() -> None:
    assert SessionEvent("x", 0, 0, {"a": 1}) != SessionEvent("x", 0, 0, {"a": 2})


def test_an_event_can_be_rebuilt_from_another_events_frozen_data() -> None:
    event = SessionEvent("x", 0, 0, {"a": [1, {"b": 2}]})
    moved = dataclasses.replace(event, seq=7)
    assert moved.data == event.data
    assert moved.seq == 7


@given(valid_events())
def test_an_event_read_back_from_its_jsonl_line_is_equal_and_frozen(event: SessionEvent) -> None:
    line = json.dumps(event.to_json(), ensure_ascii=False, separators=(",", ":"))
    parsed = SessionEvent.from_json_line(line)
    assert parsed == event
    if isinstance(parsed.data, dict):
        assert type(parsed.data) is FrozenDict


@pytest.mark.parametrize(
    "line",
    [
        "{not json",
        '{"type":"x","seq":0,"time":0,"data":NaN}',
        '{"type":"x","seq":0,"time":0,"data":null,"extra":1}',
    ],
)
def test_a_bad_jsonl_line_raises_value_error(line: str) -> None:
    with pytest.raises(ValueError):
        SessionEvent.from_json_line(line)
