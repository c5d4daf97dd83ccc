"""The tool definitions the model sees (reference contract §6.2, §6.3), and their OpenAI
strict-mode form checked against that mode's schema rules.

The schemas are compared with ``tests/golden/tools/schemas.json``; regenerate it with
``SQ_UPDATE_GOLDEN=1 .venv/bin/pytest tests/tools/test_schemas.py`` after a deliberate change.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from locations import GOLDEN
from sessionquery.match_modes import TOOL_MATCHES
from sessionquery.tools.schemas import strict_schema
from sessionquery.tools.specs import (
    PROMPT_SECTION,
    TOOL_NAMES,
    TOOLS,
    ToolSettings,
    build_definitions,
    input_schema,
)

GOLDEN = GOLDEN / "tools" / "schemas.json"

EXPECTED_PROPERTIES = {
    "session_search": [
        ("query", "string"),
        ("match", "string"),
        ("session_ids", "array"),
        ("created_at_from", "string"),
        ("created_at_to", "string"),
        ("parent_session_ids", "array"),
        ("include_root_sessions", "boolean"),
        ("availability", "array"),
        ("event_seq_from", "integer"),
        ("event_seq_to", "integer"),
        ("event_time_from", "string"),
        ("event_time_to", "string"),
        ("event_types", "array"),
        ("event_surfaces", "array"),
    ],
    "session_event_search": [
        ("session_id", "string"),
        ("query", "string"),
        ("match", "string"),
        ("seq_from", "integer"),
        ("seq_to", "integer"),
        ("time_from", "string"),
        ("time_to", "string"),
        ("event_types", "array"),
        ("surfaces", "array"),
    ],
    "session_trace": [("session_id", "string")],
    "session_event_trace": [("session_id", "string"), ("seq", "integer")],
    "session_event_read": [
        ("session_id", "string"),
        ("seq", "integer"),
        ("before", "integer"),
        ("after", "integer"),
    ],
}
EXPECTED_REQUIRED = {
    "session_search": ["query"],
    "session_event_search": ["query"],
    "session_trace": None,
    "session_event_trace": ["seq"],
    "session_event_read": ["seq"],
}
FORBIDDEN_WORDS = ("cursor", "offset", "page", "limit", "cwd", "workspace_path", "path")


def _all_schemas() -> dict[str, Any]:
    return {name: input_schema(name) for name in TOOL_NAMES}


def test_schemas_match_the_golden_file() -> None:
    text = json.dumps(_all_schemas(), indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("SQ_UPDATE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_schema_properties_types_and_order_follow_the_reference(name: str) -> None:
    schema = input_schema(name)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    properties = [(key, value["type"]) for key, value in schema["properties"].items()]
    assert properties == EXPECTED_PROPERTIES[name]
    assert schema.get("required") == EXPECTED_REQUIRED[name]
    assert ("required" in schema) == (EXPECTED_REQUIRED[name] is not None)


def test_enum_arrays_list_exactly_the_allowed_values() -> None:
    search = input_schema("session_search")["properties"]
    assert search["availability"]["items"] == {"type": "string", "enum": ["live", "persisted"]}
    surfaces = {"type": "string", "enum": ["current", "shadowed", "log-only"]}
    assert search["event_surfaces"]["items"] == surfaces
    assert input_schema("session_event_search")["properties"]["surfaces"]["items"] == surfaces
    assert search["event_types"]["items"] == {"type": "string"}


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_no_schema_exposes_paging_limits_or_workspace_paths(name: str) -> None:
    for key in input_schema(name)["properties"]:
        assert not any(word in key for word in FORBIDDEN_WORDS), key


def test_every_property_and_tool_has_a_description_for_the_model() -> None:
    for definition in build_definitions():
        assert len(definition.description) > 40
        for key, value in definition.input_schema["properties"].items():
            assert value.get("description"), key


def test_search_tools_are_exclusive_with_the_search_timeout_and_others_parallel() -> None:
    definitions = {d.name: d for d in build_definitions(ToolSettings(search_timeout_ms=1234))}
    assert list(definitions) == list(TOOL_NAMES)
    for name in ("session_search", "session_event_search"):
        assert (definitions[name].parallel_safe, definitions[name].timeout_ms) == (False, 1234)
    for name in ("session_trace", "session_event_trace", "session_event_read"):
        assert (definitions[name].parallel_safe, definitions[name].timeout_ms) == (True, None)


def test_input_schema_returns_a_copy_that_callers_cannot_corrupt() -> None:
    schema = input_schema("session_trace")
    schema["properties"]["session_id"]["type"] = "integer"
    assert input_schema("session_trace")["properties"]["session_id"]["type"] == "string"


def test_prompt_section_names_every_tool_and_says_cursor_free_and_workspace_scoped() -> None:
    for name in TOOL_NAMES:
        assert name in PROMPT_SECTION
    assert "cursor-free" in PROMPT_SECTION
    assert "workspace-scoped" in PROMPT_SECTION
    assert PROMPT_SECTION.count(". ") + PROMPT_SECTION.endswith(".") == 3


SEQ_LIKE = {
    "session_search": ["event_seq_from", "event_seq_to"],
    "session_event_search": ["seq_from", "seq_to"],
    "session_trace": [],
    "session_event_trace": ["seq"],
    "session_event_read": ["seq", "before", "after"],
}


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_every_integer_is_a_non_negative_seq_and_only_the_read_window_has_a_maximum(
    name: str,
) -> None:
    properties = input_schema(name, ToolSettings(read_window_max=7))["properties"]
    integers = [key for key, value in properties.items() if value["type"] == "integer"]
    assert integers == SEQ_LIKE[name]
    for key in integers:
        assert properties[key]["minimum"] == 0
        assert ("maximum" in properties[key]) == (key in ("before", "after"))
    if name == "session_event_read":
        assert properties["before"]["maximum"] == properties["after"]["maximum"] == 7


def test_the_read_window_maximum_follows_the_service_setting() -> None:
    definitions = build_definitions(ToolSettings(read_window_max=12))
    (read,) = [d for d in definitions if d.name == "session_event_read"]
    assert read.input_schema["properties"]["after"]["maximum"] == 12


@pytest.mark.parametrize("name", ["session_search", "session_event_search"])
@pytest.mark.parametrize("default", TOOL_MATCHES)
def test_the_search_tools_take_a_match_mode_and_say_which_one_is_the_default(
    name: str, default: Any
) -> None:
    match = input_schema(name, ToolSettings(match=default))["properties"]["match"]
    assert match["enum"] == list(TOOL_MATCHES)
    assert match["description"].endswith(f"Omit for {default}.")
    assert "match" not in input_schema(name).get("required", [])


# OpenAI strict mode (Structured Outputs for function calling): the JSON Schema subset it
# accepts, written out as checks. https://platform.openai.com/docs/guides/structured-outputs
STRICT_KEYWORDS = {
    "type", "description", "properties", "required", "additionalProperties", "items", "enum",
    "const", "anyOf", "$ref", "$defs", "pattern", "format", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
}  # fmt: skip
JSON_TYPES = {"string", "number", "integer", "boolean", "object", "array", "null"}


def _strict_violations(schema: dict[str, Any], path: str = "$") -> list[str]:
    """Every way ``schema`` breaks a rule of OpenAI's strict mode (empty when it follows them)."""
    found = [f"{path}: keyword {key}" for key in schema if key not in STRICT_KEYWORDS]
    types = schema.get("type")
    listed = types if isinstance(types, list) else [types]
    if types is not None and not set(listed) <= JSON_TYPES:
        found.append(f"{path}: type {types!r}")
    if "enum" in schema:
        if "null" in listed and None not in schema["enum"]:
            found.append(f"{path}: nullable enum without null")
        for value in schema["enum"]:
            if value is not None and not isinstance(value, str):
                found.append(f"{path}: enum value {value!r}")
    if "object" in listed:
        properties: dict[str, Any] = schema.get("properties", {})
        if schema.get("additionalProperties") is not False:
            found.append(f"{path}: additionalProperties is not false")
        if schema.get("required") != list(properties):
            found.append(f"{path}: required is not every property in order")
        for key, value in properties.items():
            found += _strict_violations(value, f"{path}.{key}")
    if "items" in schema:
        found += _strict_violations(schema["items"], f"{path}[]")
    return found


@pytest.mark.parametrize("spec", TOOLS, ids=lambda spec: spec.name)
def test_strict_schemas_follow_the_strict_mode_rules(spec: Any) -> None:
    ordinary = spec.input_schema()
    strict = strict_schema(ordinary)
    assert strict["type"] == "object"  # the root is an object, not a union
    assert _strict_violations(strict) == []


@pytest.mark.parametrize("spec", TOOLS, ids=lambda spec: spec.name)
def test_strict_schemas_make_exactly_the_optional_properties_nullable(spec: Any) -> None:
    ordinary = spec.input_schema()
    strict = strict_schema(ordinary)
    required = set(ordinary.get("required", ()))
    assert list(strict["properties"]) == list(ordinary["properties"])
    for key, value in strict["properties"].items():
        before = ordinary["properties"][key]
        if key in required:
            assert value == before
            continue
        assert value["type"] == [before["type"], "null"]
        if "enum" in before:
            assert value["enum"] == [*before["enum"], None]
        rest = {k: v for k, v in value.items() if k not in ("type", "enum")}
        assert rest == {k: v for k, v in before.items() if k not in ("type", "enum")}


def test_a_nullable_enum_lists_null_among_its_values() -> None:
    from sessionquery.tools.schemas import object_schema, string

    schema = object_schema({"mode": string("A mode.", ["relevance", "phrase"])})
    strict = strict_schema(schema)
    assert strict["properties"]["mode"]["enum"] == ["relevance", "phrase", None]
    assert _strict_violations(strict) == []


def test_the_rule_checker_catches_what_strict_mode_refuses() -> None:
    ordinary = input_schema("session_event_read")
    assert "$: required is not every property in order" in _strict_violations(ordinary)
    broken = strict_schema(ordinary)
    broken["additionalProperties"] = True
    broken["properties"]["before"]["default"] = 0
    assert _strict_violations(broken) == [
        "$: additionalProperties is not false",
        "$.before: keyword default",
    ]


def test_strict_schemas_are_fresh_copies() -> None:
    ordinary = input_schema("session_search")
    strict = strict_schema(ordinary)
    strict["properties"]["event_types"]["items"]["type"] = "integer"
    assert ordinary["properties"]["event_types"]["items"]["type"] == "string"
