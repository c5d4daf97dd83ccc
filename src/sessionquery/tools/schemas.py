"""JSON Schema building blocks for the tools' arguments, and their OpenAI strict-mode form.

The tools' own records (:mod:`sessionquery.tools.specs`) build their schemas from these
helpers. Invariants:

* a tool schema is a flat ``"type": "object"`` with snake_case properties and
  ``"additionalProperties": false``; property values are one JSON type each (``string``,
  ``integer``, ``boolean``, or an ``array`` of strings), optionally with an ``enum`` and, for
  integers, ``minimum``/``maximum``;
* :func:`strict_schema` turns such a schema into one that OpenAI's strict mode accepts: every
  property listed in ``required``, and every property that was optional made nullable
  (``["<type>", "null"]``, with ``null`` added to its ``enum``); nothing else changes, so a
  model following either schema sends arguments the toolkit accepts (``null`` for an optional
  argument means "omitted");
* the helpers return fresh dicts; nothing here is shared mutable state.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ISO_TIMESTAMP",
    "ToolDefinition",
    "boolean",
    "integer",
    "object_schema",
    "strict_schema",
    "string",
    "strings",
]

ISO_TIMESTAMP = "ISO 8601 timestamp with a T and Z or a numeric offset, e.g. 2025-01-31T09:30:00Z"
"""How a timestamp argument is described to the model."""


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """One model-facing tool as an agent loop registers it.

    Attributes:
        name: the tool name the model calls.
        description: a short text written for the model.
        input_schema: the JSON Schema of the arguments (a fresh copy per definition).
        parallel_safe: whether the tool may run concurrently with sibling tool calls.
        timeout_ms: the deadline the tool applies to itself, or ``None`` for none.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    parallel_safe: bool
    timeout_ms: int | None


def string(description: str, enum: Sequence[str] | None = None) -> dict[str, Any]:
    """A string property, optionally limited to ``enum``."""
    schema: dict[str, Any] = {"type": "string"}
    if enum is not None:
        schema["enum"] = list(enum)
    schema["description"] = description
    return schema


def integer(
    description: str, *, minimum: int | None = None, maximum: int | None = None
) -> dict[str, Any]:
    """An integer property, optionally with a ``minimum`` and a ``maximum``."""
    schema: dict[str, Any] = {"type": "integer", "description": description}
    if minimum is not None:
        schema["minimum"] = minimum
    if maximum is not None:
        schema["maximum"] = maximum
    return schema


def boolean(description: str) -> dict[str, Any]:
    """A boolean property."""
    return {"type": "boolean", "description": description}


def strings(description: str, enum: Sequence[str] | None = None) -> dict[str, Any]:
    """An array of strings, optionally each one of ``enum``."""
    items: dict[str, Any] = {"type": "string"}
    if enum is not None:
        items["enum"] = list(enum)
    return {"type": "array", "items": items, "description": description}


def object_schema(
    properties: Mapping[str, dict[str, Any]], required: Sequence[str] = ()
) -> dict[str, Any]:
    """The schema of a tool's arguments: ``properties`` in order, ``required`` only when some
    are (an empty ``required`` is left out, as the reference schemas do)."""
    schema: dict[str, Any] = {"type": "object", "properties": dict(properties)}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return schema


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` as OpenAI's strict mode wants it (a fresh copy; see the module docstring).

    Args:
        schema: a tool schema built by :func:`object_schema`.
    """
    strict = copy.deepcopy(dict(schema))
    required = set(strict.get("required", ()))
    properties: dict[str, dict[str, Any]] = strict["properties"]
    for name, value in properties.items():
        if name not in required:
            _make_nullable(value)
    strict["required"] = list(properties)
    strict["additionalProperties"] = False
    return _ordered(strict)


def _make_nullable(value: dict[str, Any]) -> None:
    value["type"] = [value["type"], "null"]
    if "enum" in value:
        value["enum"] = [*value["enum"], None]


def _ordered(schema: dict[str, Any]) -> dict[str, Any]:
    """``type``, ``properties``, ``required``, ``additionalProperties``: the order of the
    ordinary schemas, so the two forms read alike."""
    keys = ("type", "properties", "required", "additionalProperties")
    return {key: schema[key] for key in keys if key in schema}
