"""The search modes' registry: the records are the one place a mode is declared.

Every table that offers a mode (the CLI's flags, its summaries, the viewer's labels, the tools'
``match`` enum and descriptions) is checked against the records, and the kernel, the two
backends and those tables are scanned for a mode's name written anywhere but a default: a
backend that compares a mode's name, or a table that lists modes by hand, fails here.
"""

from __future__ import annotations

import ast
from typing import get_args

import pytest

from conftest import raises_code
from locations import ROOT
from sessionquery.cli import COMMANDS
from sessionquery.cli._hits import mode_text
from sessionquery.cli._parser import build_parser
from sessionquery.errors import ErrorCode
from sessionquery.match_modes import (
    EXECUTED_PLANS,
    PEOPLE_MATCH,
    SEARCH_MATCHES,
    SEARCH_MODES,
    SERVICE_MATCH,
    TOOL_MATCHES,
    TOOLS_MATCH,
    Order,
    SearchMatch,
    SearchPlan,
    ToolMatch,
    Words,
    search_mode,
    validate_match,
)
from sessionquery.query import backend
from sessionquery.search.request import session_request
from sessionquery.tools import specs
from sessionquery.tools.specs import DEFAULT_SETTINGS, build_definitions
from sessionquery.web.pages import search_page
from sessionquery.web.routes import MATCHES

SRC = ROOT / "src" / "sessionquery"
NAMES = frozenset(mode.name for mode in SEARCH_MODES)


def test_the_literals_spell_the_records_in_their_order() -> None:
    assert get_args(SearchMatch) == SEARCH_MATCHES == tuple(m.name for m in SEARCH_MODES)
    offered = {m.name for m in SEARCH_MODES if m.model is not None}
    assert get_args(ToolMatch) == TOOL_MATCHES
    assert set(TOOL_MATCHES) == offered and TOOL_MATCHES[0] == TOOLS_MATCH
    assert {SERVICE_MATCH, PEOPLE_MATCH} <= NAMES


def test_the_seam_and_the_tools_re_export_the_registry_names() -> None:
    assert backend.SEARCH_MATCHES is SEARCH_MATCHES
    assert backend.validate_match is validate_match
    assert specs.TOOL_MATCHES is TOOL_MATCHES
    assert DEFAULT_SETTINGS.match == TOOLS_MATCH


def test_every_plan_is_one_both_backends_execute() -> None:
    assert {(m.plan.words, m.plan.order) for m in SEARCH_MODES} <= EXECUTED_PLANS
    assert [m.plan.ranked for m in SEARCH_MODES] == [
        m.plan.order is Order.RELEVANCE for m in SEARCH_MODES
    ]


def test_a_plan_no_backend_executes_is_refused_where_it_is_declared() -> None:
    with pytest.raises(ValueError):
        SearchPlan(Words.ANY, Order.SPANS)


def test_every_fallback_is_another_registered_mode() -> None:
    for mode in SEARCH_MODES:
        if mode.fallback is not None:
            assert mode.fallback in NAMES and mode.fallback != mode.name
            assert search_mode(mode.fallback).fallback is None  # no chain of retries


@pytest.mark.parametrize("name", sorted(NAMES))
def test_a_request_carries_the_plan_of_its_modes_record(name: str) -> None:
    request = session_request("x", name, (), (), None, default_limit=5, max_limit=10)
    assert request.mode == name and request.plan is search_mode(name).plan


@pytest.mark.parametrize("match", ["regex", "Phrase", "", None, 1, ["phrase"]])
def test_an_unknown_mode_is_invalid_query_naming_every_accepted_one(match: object) -> None:
    with raises_code(ErrorCode.INVALID_QUERY) as caught:
        search_mode(match)
    listed = ", ".join(f"'{name}'" for name in SEARCH_MATCHES[:-1])
    assert f"must be {listed} or '{SEARCH_MATCHES[-1]}', not {match!r}" in caught.value.message


@pytest.mark.parametrize("command", ["search", "search-events"])
def test_every_mode_is_chosen_by_its_cli_flag_or_is_the_cli_default(command: str) -> None:
    parser = build_parser(COMMANDS)
    head = [command, "x"] if command == "search" else [command, "some-id", "x"]
    assert parser.parse_args(head).match == PEOPLE_MATCH
    chosen = {PEOPLE_MATCH}
    for mode in SEARCH_MODES:
        if mode.flag is not None:
            assert parser.parse_args([*head, mode.flag.name]).match == mode.name
            chosen.add(mode.name)
    assert chosen == NAMES


def test_the_cli_summary_of_every_mode_is_its_records() -> None:
    assert [mode_text(m.name) for m in SEARCH_MODES] == [m.summary for m in SEARCH_MODES]


def test_the_viewer_offers_every_mode_by_its_label_default_first() -> None:
    assert set(MATCHES) == NAMES and MATCHES[0] == PEOPLE_MATCH
    html = str(search_page("", PEOPLE_MATCH, MATCHES, [], {}, cwd="", cwds=[], next_url=None))
    for mode in SEARCH_MODES:
        assert f'value="{mode.name}"' in html and f">{mode.label}<" in html


def test_the_search_tools_offer_exactly_the_modes_offered_to_models() -> None:
    searches = [
        d for d in build_definitions(DEFAULT_SETTINGS) if "match" in d.input_schema["properties"]
    ]
    assert [d.name for d in searches] == ["session_search", "session_event_search"]
    for definition in searches:
        schema = definition.input_schema["properties"]
        assert schema["match"]["enum"] == list(TOOL_MATCHES)
        for name in TOOL_MATCHES:
            offer = search_mode(name).model
            assert offer is not None
            assert f"(match {name})" in schema["query"]["description"]
            assert f"{name}: " in schema["match"]["description"]


# -- a mode's name is written in the records only ---------------------------------------------

CHECKED = [
    *sorted((SRC / "search").rglob("*.py")),
    *(
        SRC / name
        for name in (
            "cli/_parser.py",
            "cli/_hits.py",
            "cli/_commands.py",
            "web/pages.py",
            "web/routes.py",
            "tools/specs.py",
            "tools/toolkit.py",
            "tools/operations.py",
            "tools/render.py",
        )
    ),
]
"""The kernel, both backends, and every table where people or models choose a mode."""


def _allowed(tree: ast.Module) -> set[int]:
    """ids of the constants that may be a mode's name: docstrings and defaults."""
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            allowed.add(id(node.value))  # a docstring (of a module, class, function, name)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            allowed.add(id(node.value))  # an annotated default: DEFAULT: SearchMatch = "..."
        elif isinstance(node, ast.arguments):
            allowed.update(id(d) for d in [*node.defaults, *node.kw_defaults] if d is not None)
    return allowed


def mode_names_written(source: str) -> list[tuple[int, str]]:
    """``(line, name)`` of each mode's name the module writes, but as a docstring or a
    default."""
    tree = ast.parse(source)
    allowed = _allowed(tree)
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in NAMES
        and id(node) not in allowed
    )


def test_no_backend_kernel_or_table_writes_a_mode_name_but_as_a_default() -> None:
    assert len(CHECKED) > 30 and all(path.is_file() for path in CHECKED)
    found = [
        f"{path.relative_to(SRC).as_posix()}:{line}: {name!r}"
        for path in CHECKED
        for line, name in mode_names_written(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_scan_finds_a_comparison_and_a_hand_written_table() -> None:
    source = (
        '"""relevance"""\n'
        'DEFAULT: str = "phrase"\n'
        'def page(mode: str = "words", *, other: str = "phrase") -> bool:\n'
        '    """phrase"""\n'
        '    labels = {"words": "All words"}\n'
        '    return mode == "relevance" and bool(labels)\n'
    )
    assert mode_names_written(source) == [(5, "words"), (6, "relevance")]
