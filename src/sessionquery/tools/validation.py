"""Checking a model's raw tool arguments against the tools' JSON Schemas, without coercion.

Invariants:

* raw arguments are a mapping or a JSON text; a text is parsed only after a linear-time
  check that bounds its nesting (:data:`MAX_JSON_DEPTH`) and the digits of its integers
  (:data:`MAX_INTEGER_DIGITS`), so no input can exhaust the interpreter's recursion or hit
  Python's limit on long digit strings: every failure is a typed argument error;
* arguments are checked against the tool's schema **without coercion**: a string is never an
  integer, a boolean is never an integer, ``1.5`` and ``1.0`` are not integers; ``null`` is
  not a value: an optional property sent as ``null`` counts as omitted (what OpenAI's strict
  mode sends for an argument the model leaves out) and a required one is refused; unknown
  properties are rejected and required ones must be present; a value outside a property's
  ``enum`` (or an array item outside its items' ``enum``) is refused;
* every violation raises ``SessionQueryError(SESSION_QUERY_TOOL_INVALID_ARGUMENTS)`` with a
  message that names the argument and says what is wrong; it is never sanitised, and it never
  quotes more than a short, bounded piece of the input.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from itertools import accumulate
from typing import Any

from sessionquery.errors import SessionQueryError, ToolErrorCode

__all__ = [
    "MAX_INTEGER_DIGITS",
    "MAX_JSON_DEPTH",
    "args_error",
    "check_arguments",
    "describe_value",
    "parse_arguments",
]

MAX_JSON_DEPTH = 64
"""The deepest nesting of arrays and objects a JSON-text argument may have (the schemas
need two levels)."""

MAX_INTEGER_DIGITS = 32
"""The most digits an integer in a JSON-text argument may have (safe integers have 16)."""

# A JSON string literal, or an unterminated one running to the end of the text. It always
# matches from a quote (the closing quote is optional), so no quote is ever scanned twice.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.?[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_BRACKET_STEPS = {"[": 1, "{": 1, "]": -1, "}": -1}
_JSON_TYPE_NAMES = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
    type(None): "null",
}


class _LongInteger(ValueError):
    """An integer literal with more than :data:`MAX_INTEGER_DIGITS` digits."""


def args_error(message: str) -> SessionQueryError:
    """The typed error for a schema violation."""
    return SessionQueryError(ToolErrorCode.INVALID_ARGUMENTS, message)


def _json_type(value: object) -> str:
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def parse_arguments(raw: object) -> dict[str, Any]:
    """Turn a tool call's raw arguments (a mapping or a JSON text) into a plain dict.

    Raises:
        SessionQueryError: ``SESSION_QUERY_TOOL_INVALID_ARGUMENTS`` when the text is not JSON,
            is nested too deeply, holds an over-long integer, or the value is not an object.
    """
    if isinstance(raw, str):
        raw = _loads(raw.strip() or "{}")
    if not isinstance(raw, Mapping):
        raise args_error(f"arguments must be a JSON object, not {_json_type(raw)}")
    arguments: dict[str, Any] = {}
    for key, value in raw.items():
        if not isinstance(key, str):
            raise args_error(f"argument names must be strings, not {_json_type(key)}")
        arguments[key] = value
    return arguments


def _loads(text: str) -> object:
    if _nesting_depth(text) > MAX_JSON_DEPTH:
        raise args_error(
            f"arguments must be a JSON object nested at most {MAX_JSON_DEPTH} levels deep"
        )
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_int=_bounded_int)
    except _LongInteger:
        raise args_error(
            f"argument numbers must have at most {MAX_INTEGER_DIGITS} digits"
        ) from None
    except (ValueError, RecursionError):
        raise args_error("arguments must be a JSON object; the text is not valid JSON") from None


def _nesting_depth(text: str) -> int:
    """The deepest bracket nesting of a JSON text, outside string literals (linear time)."""
    brackets = _NOT_BRACKETS.sub("", _JSON_STRING.sub("", text))
    return max(accumulate(map(_BRACKET_STEPS.__getitem__, brackets)), default=0)


def _bounded_int(literal: str) -> int:
    if len(literal.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise _LongInteger(literal[:8])
    return int(literal)


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def check_arguments(
    tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]
) -> dict[str, Any]:
    """Check ``arguments`` against the JSON Schema of ``tool`` without coercing anything.

    Returns:
        The arguments without the optional ones sent as ``null`` (which mean "omitted").

    Raises:
        SessionQueryError: ``SESSION_QUERY_TOOL_INVALID_ARGUMENTS`` naming the first unknown,
            missing or wrongly typed argument.
    """
    properties: Mapping[str, Any] = schema["properties"]
    for name in arguments:
        if name not in properties:
            accepted = ", ".join(properties) or "no arguments"
            raise args_error(f"unknown argument {_short(name)!r}; {tool} accepts: {accepted}")
    required: Sequence[str] = schema.get("required", ())
    for name in required:
        if name not in arguments:
            raise args_error(f"{name} is required")
    checked: dict[str, Any] = {}
    for name, value in arguments.items():
        if value is None and name not in required:
            continue
        _check_value(name, value, properties[name])
        checked[name] = value
    return checked


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _check_value(name: str, value: object, schema: Mapping[str, Any]) -> None:
    expected = schema["type"]
    if not _has_type(value, expected):
        raise args_error(f"{name} must be {_article(expected)}, not {describe_value(value)}")
    _check_enum(name, value, schema)
    if expected == "array":
        assert isinstance(value, list)
        items: Mapping[str, Any] = schema["items"]
        for index, item in enumerate(value):
            if not _has_type(item, items["type"]):
                raise args_error(
                    f"{name}[{index}] must be {_article(items['type'])}, not {describe_value(item)}"
                )
            _check_enum(f"{name}[{index}]", item, items)


def _check_enum(name: str, value: object, schema: Mapping[str, Any]) -> None:
    allowed = schema.get("enum")
    if allowed is not None and value not in allowed:
        assert isinstance(value, str)
        raise args_error(f"{name} must be one of {', '.join(allowed)}, not {_short(value)!r}")


def _has_type(value: object, expected: str) -> bool:
    if expected == "integer":
        return type(value) is int
    if expected == "boolean":
        return type(value) is bool
    if expected == "string":
        return isinstance(value, str)
    if expected == "array":
        return isinstance(value, list)
    return False  # pragma: no cover - the schemas use only the four types above


def _article(json_type: str) -> str:
    return f"an {json_type}" if json_type[0] in "aeiou" else f"a {json_type}"


def describe_value(value: object) -> str:
    """A short description of a JSON value for an error message: its JSON type, and the
    value itself for a boolean or a number of reasonable size."""
    kind = _json_type(value)
    if isinstance(value, bool | float):
        return f"{kind} {json.dumps(value)}"
    if isinstance(value, int):
        if abs(value) >= 10**MAX_INTEGER_DIGITS:
            return f"{kind} of more than {MAX_INTEGER_DIGITS} digits"
        return f"{kind} {value}"
    return kind
