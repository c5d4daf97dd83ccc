"""Lossless JSON values, validated and deep-frozen.

Stored history must never change after it is written, and every API hands out the same
objects it stores. So event data is validated once (only ``dict`` with ``str`` keys, ``list``
or ``tuple``, ``str``, ``int``, finite ``float``, ``bool`` and ``None``; strings must be
encodable as UTF-8) and converted into :class:`FrozenDict` / :class:`FrozenList`.

Both are subclasses of ``dict`` and ``list``: they compare equal to plain values, ``json``
serialises them directly and ``isinstance(data, dict)`` holds, but every mutating method
raises ``TypeError``. Converting back with :func:`thaw` gives ordinary mutable copies.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, NoReturn, TypeVar

__all__ = [
    "FrozenDict",
    "FrozenList",
    "JsonValue",
    "as_dict",
    "as_list",
    "canonical_json",
    "compact_json",
    "freeze_json",
    "loads_json",
    "thaw",
]

JsonValue = Any
"""A lossless JSON value (see the module docstring); ``Any`` because JSON is recursive."""


def _immutable(*_args: object, **_kwargs: object) -> NoReturn:
    raise TypeError("stored session data is immutable; use sessionquery.model.thaw() to copy it")


class FrozenDict(dict[str, Any]):
    """A ``dict`` whose contents cannot be changed after construction."""

    __slots__ = ("_hash", "_validated")
    _hash: int
    _validated: bool

    __setitem__ = _immutable
    __delitem__ = _immutable
    __ior__ = _immutable
    clear = _immutable
    pop = _immutable
    popitem = _immutable
    setdefault = _immutable
    update = _immutable

    def __hash__(self) -> int:  # type: ignore[override]
        try:
            return self._hash
        except AttributeError:
            value = hash(frozenset(self.items()))
            object.__setattr__(self, "_hash", value)
            return value

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> FrozenDict:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_dict, (dict(self),))

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"


class FrozenList(list[Any]):
    """A ``list`` whose contents cannot be changed after construction."""

    __slots__ = ("_hash", "_validated")
    _hash: int
    _validated: bool

    __setitem__ = _immutable
    __delitem__ = _immutable
    __iadd__ = _immutable
    __imul__ = _immutable
    append = _immutable
    clear = _immutable
    extend = _immutable
    insert = _immutable
    pop = _immutable
    remove = _immutable
    reverse = _immutable
    sort = _immutable

    def __hash__(self) -> int:  # type: ignore[override]
        try:
            return self._hash
        except AttributeError:
            value = hash(tuple(self))
            object.__setattr__(self, "_hash", value)
            return value

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> FrozenList:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_list, (list(self),))

    def __repr__(self) -> str:
        return f"FrozenList({list.__repr__(self)})"


def _rebuild_dict(value: dict[str, Any]) -> FrozenDict:
    return FrozenDict(value)


def _rebuild_list(value: Iterable[Any]) -> FrozenList:
    return FrozenList(value)


def _check_str(value: str, where: str) -> None:
    if value.isascii():
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{where}: string is not valid Unicode (lone surrogate)") from None


def freeze_json(value: object, where: str = "data") -> JsonValue:
    """Validate ``value`` as lossless JSON and return a deep-frozen copy.

    Containers that this function built are returned as they are (they were validated when
    built); a ``FrozenDict``/``FrozenList`` constructed directly is validated and rebuilt like
    any other container, since its constructor checks nothing.

    Raises:
        ValueError: naming the path of the first offending value, or for nesting too deep to
            walk (instead of a ``RecursionError``).
    """
    try:
        try:
            return _freeze_plain(value)
        except (_NotPlain, UnicodeEncodeError):
            # Walked again with paths: the error names the offending value, and values
            # that are not plain JSON types (subclasses, other mappings) are normalised.
            return _freeze(value, where)
    except RecursionError:
        raise ValueError(f"{where}: JSON nested too deeply") from None


class _NotPlain(Exception):
    """A value :func:`_freeze_plain` leaves to :func:`_freeze`."""


_PLAIN_DEPTH = 64
"""Nesting past which :func:`_freeze_plain` leaves the value to :func:`_freeze` (which refuses
data nested too deeply for the stack exactly as it always did)."""


def _freeze_plain(value: object, depth: int = 0) -> JsonValue:
    """:func:`_freeze` of a value made only of plain JSON types that are all valid, without
    building the path of every value on the way (raises :class:`_NotPlain` or
    ``UnicodeEncodeError`` at anything else, and past :data:`_PLAIN_DEPTH` levels)."""
    kind = type(value)
    if kind is str:
        if not value.isascii():  # type: ignore[attr-defined]
            value.encode("utf-8")  # type: ignore[attr-defined]
        return value
    if kind is dict:
        if depth > _PLAIN_DEPTH:
            raise _NotPlain
        items: dict[str, Any] = {}
        for key, item in value.items():  # type: ignore[attr-defined]
            if type(key) is not str:
                raise _NotPlain
            if not key.isascii():
                key.encode("utf-8")
            items[key] = _freeze_plain(item, depth + 1)
        frozen_dict = FrozenDict(items)
        _mark_validated(frozen_dict, "_validated", True)
        return frozen_dict
    if kind is list or kind is tuple:
        if depth > _PLAIN_DEPTH:
            raise _NotPlain
        frozen_list = FrozenList([_freeze_plain(item, depth + 1) for item in value])  # type: ignore[attr-defined]
        _mark_validated(frozen_list, "_validated", True)
        return frozen_list
    if value is None or kind is bool:
        return value
    if kind is int:
        if value.bit_length() > _HUGE_INT_BITS:  # type: ignore[attr-defined]
            raise _NotPlain
        return value
    if kind is float:
        if not math.isfinite(value):  # type: ignore[arg-type]
            raise _NotPlain
        return value
    if (kind is FrozenDict or kind is FrozenList) and _is_validated(value):
        return value
    raise _NotPlain


def _freeze(value: object, where: str) -> JsonValue:
    if value is None or value is True or value is False:
        return value
    kind = type(value)
    if kind is str:
        _check_str(value, where)  # type: ignore[arg-type]
        return value
    if kind is int:
        if value.bit_length() > _HUGE_INT_BITS:  # type: ignore[attr-defined]
            _check_int_text(value, where)  # type: ignore[arg-type]
        return value
    if kind is float:
        if not math.isfinite(value):  # type: ignore[arg-type]
            raise ValueError(f"{where}: {value!r} is not a finite JSON number")
        return value
    if (kind is FrozenDict or kind is FrozenList) and _is_validated(value):
        return value
    if isinstance(value, Mapping):
        items: dict[str, Any] = {}
        for key, item in value.items():  # pyright: ignore[reportUnknownVariableType]
            if type(key) is not str:
                raise ValueError(f"{where}: object key {key!r} is not a string")
            _check_str(key, where)
            items[key] = _freeze(item, f"{where}.{key}")
        return _validated(FrozenDict(items))
    if isinstance(value, list | tuple):
        return _validated(
            FrozenList(
                _freeze(item, f"{where}[{index}]")
                for index, item in enumerate(value)  # pyright: ignore[reportUnknownArgumentType]
            )
        )
    if isinstance(value, bool | int | float | str):
        # Subclasses (enums, numpy scalars...) are normalised to the plain JSON type.
        return _freeze(_plain_scalar(value), where)
    raise ValueError(f"{where}: {kind.__name__} is not a JSON value")


# Below this size every int converts to text under any interpreter digit limit (min 640).
_HUGE_INT_BITS = 2000


def _check_int_text(value: int, where: str) -> None:
    # Python refuses int->text conversion past sys.get_int_max_str_digits(); such a value
    # would be accepted in memory and then fail when the event is written.
    try:
        str(value)
    except ValueError:
        raise ValueError(f"{where}: integer has too many digits to write as JSON") from None


def _is_validated(value: object) -> bool:
    return getattr(value, "_validated", False) is True


_Frozen = TypeVar("_Frozen", FrozenDict, FrozenList)


def _validated(value: _Frozen) -> _Frozen:
    object.__setattr__(value, "_validated", True)
    return value


def _plain_scalar(value: bool | int | float | str) -> bool | int | float | str:
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return str(value)


# A lone surrogate can reach parsed text only as a \uD8xx..\uDFxx escape or, in a str that
# was not decoded from UTF-8, as a raw code point; text with neither needs no string checks.
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_RAW_SURROGATE = re.compile("[\ud800-\udfff]")
_mark_validated = object.__setattr__


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a finite JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite JSON number")
    return value


def _parsed_list(items: list[Any]) -> FrozenList:
    frozen = FrozenList([_parsed_list(item) if type(item) is list else item for item in items])
    _mark_validated(frozen, "_validated", True)
    return frozen


def _parsed_object(items: dict[str, Any]) -> FrozenDict:
    # Called by the C decoder bottom-up, so nested objects are already frozen; only lists,
    # which the decoder cannot hook, are converted here.
    for key, item in items.items():
        if type(item) is list:
            items[key] = _parsed_list(item)
    frozen = FrozenDict(items)
    _mark_validated(frozen, "_validated", True)
    return frozen


_DECODER = json.JSONDecoder(
    object_hook=_parsed_object, parse_constant=_reject_constant, parse_float=_finite_float
)


def loads_json(text: str) -> JsonValue:
    """Parse JSON text straight into validated, deep-frozen values.

    The same result as ``freeze_json(json.loads(text))`` at a fraction of the cost: the
    decoder builds frozen containers as it goes, and string checks run only when the text
    could hold a lone surrogate. ``NaN``, ``Infinity`` and numbers that overflow to infinity
    are refused.

    Raises:
        ValueError: (``json.JSONDecodeError`` for malformed text) saying what is wrong.
    """
    try:
        if ("\\u" in text and _ESCAPED_SURROGATE.search(text) is not None) or (
            not text.isascii() and _RAW_SURROGATE.search(text) is not None
        ):
            return freeze_json(json.loads(text, parse_constant=_reject_constant), "data")
        value = _DECODER.decode(text)
        if type(value) is list:
            return _parsed_list(value)  # pyright: ignore[reportUnknownArgumentType]
        return value
    except RecursionError:
        raise ValueError("data: JSON nested too deeply") from None


def thaw(value: JsonValue) -> JsonValue:
    """Return a plain, mutable deep copy of a (possibly frozen) JSON value."""
    if isinstance(value, dict):
        return {key: thaw(item) for key, item in value.items()}  # pyright: ignore
    if isinstance(value, list):
        return [thaw(item) for item in value]  # pyright: ignore
    return value


def canonical_json(value: JsonValue) -> str:
    """The one canonical JSON text used for hashing and comparing values."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def compact_json(value: JsonValue) -> str:
    """Compact JSON text, keys in their given order and non-ASCII kept readable: the one
    spelling of a JSON line or a JSON string a log stores (a stored line, an importer's tool
    arguments)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def as_dict(value: object) -> dict[str, Any]:
    """``value`` if it is a JSON object (a frozen one too), else an empty one: for reading
    optional structure without a check at every step."""
    return value if isinstance(value, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def as_list(value: object) -> list[Any]:
    """``value`` if it is a JSON array (a frozen one too), else an empty one."""
    return value if isinstance(value, list) else []  # pyright: ignore[reportUnknownVariableType]
