"""Lossless, deep-frozen JSON values (SPEC §3.2: lossless data, immutable stored history)."""

from __future__ import annotations

import copy
import json
import math
import pickle
from collections.abc import Callable
from enum import IntEnum
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionquery.model import (
    FrozenDict,
    FrozenList,
    canonical_json,
    freeze_json,
    loads_json,
    thaw,
)
from sessionquery.model.jsonvalue import as_dict, as_list, compact_json
from strategies import json_values

DICT_MUTATIONS: list[tuple[str, Callable[[Any], object]]] = [
    ("setitem", lambda d: d.__setitem__("k", 1)),
    ("delitem", lambda d: d.__delitem__("a")),
    ("ior", lambda d: d.__ior__({"k": 1})),
    ("clear", lambda d: d.clear()),
    ("pop", lambda d: d.pop("a")),
    ("popitem", lambda d: d.popitem()),
    ("setdefault", lambda d: d.setdefault("k", 1)),
    ("update", lambda d: d.update(k=1)),
]

LIST_MUTATIONS: list[tuple[str, Callable[[Any], object]]] = [
    ("setitem", lambda v: v.__setitem__(0, 9)),
    ("setitem-slice", lambda v: v.__setitem__(slice(0, 1), [9])),
    ("delitem", lambda v: v.__delitem__(0)),
    ("iadd", lambda v: v.__iadd__([9])),
    ("imul", lambda v: v.__imul__(2)),
    ("append", lambda v: v.append(9)),
    ("clear", lambda v: v.clear()),
    ("extend", lambda v: v.extend([9])),
    ("insert", lambda v: v.insert(0, 9)),
    ("pop", lambda v: v.pop()),
    ("remove", lambda v: v.remove(1)),
    ("reverse", lambda v: v.reverse()),
    ("sort", lambda v: v.sort()),
]


@pytest.mark.parametrize(("name", "mutate"), DICT_MUTATIONS, ids=[n for n, _ in DICT_MUTATIONS])
def test_every_mutating_method_of_frozen_dict_raises_type_error(
    name: str, mutate: Callable[[Any], object]
) -> None:
    frozen = freeze_json({"a": 1, "b": [2]})
    with pytest.raises(TypeError):
        mutate(frozen)
    assert frozen == {"a": 1, "b": [2]}


@pytest.mark.parametrize(("name", "mutate"), LIST_MUTATIONS, ids=[n for n, _ in LIST_MUTATIONS])
def test_every_mutating_method_of_frozen_list_raises_type_error(
    name: str, mutate: Callable[[Any], object]
) -> None:
    frozen = freeze_json([3, 1, 2])
    with pytest.raises(TypeError):
        mutate(frozen)
    assert frozen == [3, 1, 2]


def test_augmented_assignment_on_a_frozen_value_raises_and_keeps_the_original() -> None:
    frozen = freeze_json({"items": [1]})
    items = frozen["items"]
    with pytest.raises(TypeError):
        items += [2]
    with pytest.raises(TypeError):
        frozen |= {"x": 1}
    assert frozen == {"items": [1]}


def test_freeze_json_freezes_nested_containers_deeply() -> None:
    frozen = freeze_json({"a": [{"b": [1, {"c": "d"}]}], "t": (1, 2)})
    assert type(frozen) is FrozenDict
    assert type(frozen["a"]) is FrozenList
    assert type(frozen["a"][0]["b"][1]) is FrozenDict
    assert type(frozen["t"]) is FrozenList
    with pytest.raises(TypeError):
        frozen["a"][0]["b"].append(2)


def test_freeze_json_copies_so_later_changes_to_the_input_do_not_leak_in() -> None:
    source: dict[str, Any] = {"a": [1]}
    frozen = freeze_json(source)
    source["a"].append(2)
    source["b"] = 3
    assert frozen == {"a": [1]}


def test_thaw_gives_a_mutable_deep_copy() -> None:
    frozen = freeze_json({"a": [{"b": 1}]})
    plain = thaw(frozen)
    assert type(plain) is dict
    assert type(plain["a"]) is list
    assert type(plain["a"][0]) is dict
    plain["a"][0]["b"] = 2
    plain["a"].append(3)
    assert frozen == {"a": [{"b": 1}]}


def test_frozen_values_survive_pickle_with_their_type_and_content() -> None:
    frozen = freeze_json({"a": [1, {"b": "ü"}], "n": None})
    restored = pickle.loads(pickle.dumps(frozen))
    assert restored == frozen
    assert type(restored) is FrozenDict
    assert type(restored["a"]) is FrozenList
    assert type(restored["a"][1]) is FrozenDict
    with pytest.raises(TypeError):
        restored["a"].append(1)


def test_copy_and_deepcopy_of_frozen_values_are_equal_and_still_frozen() -> None:
    frozen = freeze_json({"a": [1, 2]})
    for duplicate in (copy.copy(frozen), copy.deepcopy(frozen)):
        assert duplicate == frozen
        assert type(duplicate) is FrozenDict
        with pytest.raises(TypeError):
            duplicate["a"].append(3)


@given(json_values())
def test_equal_frozen_values_have_equal_hashes(value: Any) -> None:
    first = freeze_json(value)
    second = freeze_json(json.loads(json.dumps(value)))
    assert first == second
    if isinstance(first, dict | list):
        assert hash(first) == hash(second)


def test_frozen_values_compare_equal_to_plain_values_and_serialise_as_json() -> None:
    value = {"a": [1, 2.5, None, True], "b": {"c": "ü"}}
    frozen = freeze_json(value)
    assert frozen == value
    assert json.loads(json.dumps(frozen)) == value
    assert isinstance(frozen, dict)


@given(json_values())
def test_freeze_then_thaw_round_trips_any_json_value(value: Any) -> None:
    assert thaw(freeze_json(value)) == value
    assert json.loads(canonical_json(freeze_json(value))) == value


@pytest.mark.parametrize(
    "bad",
    [math.nan, math.inf, -math.inf, {"a": [math.nan]}],
    ids=["nan", "inf", "-inf", "nested-nan"],
)
def test_non_finite_numbers_are_rejected(bad: object) -> None:
    with pytest.raises(ValueError, match="finite"):
        freeze_json(bad)


@pytest.mark.parametrize(
    "bad",
    [{1: "a"}, {None: "a"}, {("t",): 1}, {"ok": {2: 3}}],
    ids=["int-key", "none-key", "tuple-key", "nested-int-key"],
)
def test_non_string_object_keys_are_rejected(bad: object) -> None:
    with pytest.raises(ValueError, match="key"):
        freeze_json(bad)


@pytest.mark.parametrize(
    "bad",
    [{1, 2}, frozenset(), b"bytes", bytearray(b"x"), object(), {"a": {1}}, [b"x"]],
    ids=["set", "frozenset", "bytes", "bytearray", "object", "nested-set", "nested-bytes"],
)
def test_values_that_are_not_json_are_rejected(bad: object) -> None:
    with pytest.raises(ValueError, match="not a JSON value"):
        freeze_json(bad)


@pytest.mark.parametrize(
    "bad",
    ["\ud800", {"text": "a\udfffb"}, {"\ud83d": 1}],
    ids=["lone-high", "nested-lone-low", "surrogate-key"],
)
def test_lone_surrogates_are_rejected(bad: object) -> None:
    with pytest.raises(ValueError, match="surrogate"):
        freeze_json(bad)


def test_an_integer_too_long_to_write_as_json_text_is_rejected() -> None:
    with pytest.raises(ValueError, match="digits"):
        freeze_json({"n": 10**5000})
    big = 10**1000
    assert json.loads(canonical_json(freeze_json([big, -big]))) == [big, -big]


def test_the_error_message_names_the_path_of_the_offending_value() -> None:
    with pytest.raises(ValueError, match=r"data\.a\[1\]\.b"):
        freeze_json({"a": [0, {"b": math.nan}]})


def test_scalar_subclasses_are_stored_as_plain_json_scalars() -> None:
    class Level(IntEnum):
        HIGH = 3

    frozen = freeze_json({"level": Level.HIGH})
    assert type(frozen["level"]) is int
    assert canonical_json(frozen) == '{"level":3}'


def test_a_hand_built_frozen_container_cannot_smuggle_mutable_or_invalid_values() -> None:
    # FrozenDict/FrozenList are public; building one directly must not bypass validation.
    smuggled = FrozenDict({"items": [1, 2]})
    frozen = freeze_json(smuggled)
    with pytest.raises(TypeError):
        frozen["items"].append(3)
    with pytest.raises(ValueError, match="finite"):
        freeze_json(FrozenList([math.nan]))
    with pytest.raises(ValueError, match="key"):
        freeze_json(FrozenDict({1: "a"}))  # type: ignore[dict-item]


def test_refreezing_an_already_frozen_value_returns_the_same_object() -> None:
    frozen = freeze_json({"a": [1, {"b": 2}]})
    assert freeze_json(frozen) is frozen


def test_canonical_json_sorts_keys_is_compact_and_keeps_non_ascii() -> None:
    assert canonical_json(freeze_json({"b": 1, "a": ["ü", 2.5]})) == '{"a":["ü",2.5],"b":1}'


def _assert_deeply_frozen(value: Any) -> None:
    if isinstance(value, dict):
        assert type(value) is FrozenDict
        for item in value.values():
            _assert_deeply_frozen(item)
    elif isinstance(value, list):
        assert type(value) is FrozenList
        for item in value:
            _assert_deeply_frozen(item)


@given(json_values(max_leaves=20), st.booleans())
def test_loads_json_gives_the_same_frozen_value_as_freezing_the_parsed_text(
    value: Any, ascii_only: bool
) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    parsed = loads_json(text)
    assert parsed == freeze_json(json.loads(text))
    _assert_deeply_frozen(parsed)
    assert freeze_json(parsed) is parsed  # already validated: not walked again


@pytest.mark.parametrize(
    "text",
    [
        "NaN",
        "[Infinity]",
        '{"x": -Infinity}',
        "1e400",
        '["\\ud800"]',
        '{"k\\udc00": 1}',
        '"\ud800"',
    ],
)
def test_loads_json_refuses_non_finite_numbers_and_lone_surrogates(text: str) -> None:
    with pytest.raises(ValueError):
        loads_json(text)


def test_loads_json_keeps_an_escaped_surrogate_pair_as_one_character() -> None:
    assert loads_json('["\\ud83d\\ude00"]') == ["\U0001f600"]


def test_loads_json_raises_json_decode_error_for_malformed_text() -> None:
    with pytest.raises(json.JSONDecodeError):
        loads_json('{"a": ')


@pytest.mark.parametrize("depth", [600, 5000])
def test_loads_json_refuses_nesting_too_deep_with_value_error(depth: int) -> None:
    with pytest.raises(ValueError, match="nested too deeply"):
        loads_json("[" * depth + "]" * depth)


def test_as_dict_and_as_list_keep_json_structure_and_give_an_empty_one_for_anything_else() -> None:
    frozen = freeze_json({"a": [1]})
    assert as_dict(frozen) is frozen
    assert as_list(frozen["a"]) is frozen["a"]
    for other in (None, "text", 3, [1], {"a": 1}):
        assert as_dict(other) == ({"a": 1} if isinstance(other, dict) else {})
        assert as_list(other) == ([1] if isinstance(other, list) else [])


@given(json_values())
def test_compact_json_is_json_without_spaces_that_keeps_key_order_and_non_ascii_text(
    value: Any,
) -> None:
    text = compact_json(value)
    assert json.loads(text) == value
    assert text == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert compact_json({"b": "é", "a": 1}) == '{"b":"é","a":1}'
