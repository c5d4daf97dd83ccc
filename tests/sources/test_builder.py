"""What every importer writes through ``sources._builder``: the tool-call block."""

from __future__ import annotations

from sessionquery.sources._builder import call_block


def test_a_tool_call_block_takes_the_producers_id_only_when_it_is_a_non_empty_string() -> None:
    for call_id in (None, "", 7):
        assert call_block(call_id, "line-3-0", "Bash", "{}")["id"] == "line-3-0"
    assert call_block("toolu_1", "line-3-0", "Bash", '{"a":1}') == {
        "type": "tool-call",
        "id": "toolu_1",
        "name": "Bash",
        "arguments": '{"a":1}',
    }


def test_a_tool_call_without_a_name_is_unknown() -> None:
    assert call_block("c", "f", None, "{}")["name"] == "unknown"
    assert call_block("c", "f", "", "{}")["name"] == "unknown"
    assert call_block("c", "f", 3, "{}")["name"] == "3"
