"""The tool definitions the model sees (reference contract §6.2, §6.3).

The schemas are compared with ``tests/golden/tools/schemas.json``; regenerate it with
``SQ_UPDATE_GOLDEN=1 .venv/bin/pytest tests/tools/test_schemas.py`` after a deliberate change.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from locations import GOLDEN
from sessionquery.tools.schemas import (
    PROMPT_SECTION,
    TOOL_NAMES,
    build_definitions,
    input_schema,
)

GOLDEN = GOLDEN / "tools" / "schemas.json"

EXPECTED_PROPERTIES = {
    "session_search": [
        ("query", "string"),
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
    for definition in build_definitions(30_000):
        assert len(definition.description) > 40
        for key, value in definition.input_schema["properties"].items():
            assert value.get("description"), key


def test_search_tools_are_exclusive_with_the_search_timeout_and_others_parallel() -> None:
    definitions = {d.name: d for d in build_definitions(1234)}
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
