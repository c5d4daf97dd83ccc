"""The error tree (``sessionquery.errors``): its docstring is true and its codes behave."""

from __future__ import annotations

import builtins
import re

import pytest

import sessionquery
from sessionquery import errors, live, model
from sessionquery.errors import RETRYABLE_CODES, ErrorCode, SessionQueryError, ToolErrorCode

_TREE_LINE = re.compile(r"^\s*[│ ]*[├└]── (\w+)", re.MULTILINE)


def _documented() -> dict[str, int]:
    """Each class named in the docstring tree with its depth (builtins at depth 0)."""
    tree = (errors.__doc__ or "").split("::", 1)[1]
    return {
        match.group(1): match.start(1) - tree.rfind("\n", 0, match.start(1))
        for match in _TREE_LINE.finditer(tree)
    }


def _our_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for module in (errors, live, model, sessionquery):
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if isinstance(value, type) and issubclass(value, BaseException):
                found[name] = value
    return found


def test_the_docstring_tree_names_every_public_exception_and_nothing_else() -> None:
    documented = _documented()
    ours = _our_exceptions()
    builtins = {name for name in documented if name not in ours}
    assert set(ours) <= set(documented)
    assert builtins <= {"ValueError", "KeyError", "RuntimeError", "OSError"}


def test_the_docstring_tree_draws_each_class_under_its_real_base() -> None:
    tree = (errors.__doc__ or "").split("::", 1)[1]
    ours = _our_exceptions()
    parents: list[tuple[int, str]] = []
    for match in _TREE_LINE.finditer(tree):
        depth = match.start(1) - tree.rfind("\n", 0, match.start(1))
        while parents and parents[-1][0] >= depth:
            parents.pop()
        name = match.group(1)
        if parents and name in ours:
            parent = parents[-1][1]
            base = ours.get(parent) or getattr(builtins, parent)
            assert issubclass(ours[name], base), f"{name} is drawn under {parent}"
        parents.append((depth, name))
    assert "ToolError" not in re.findall(r"\w+", tree)


def test_only_busy_and_index_building_are_retryable() -> None:
    assert RETRYABLE_CODES == {ErrorCode.BUSY, ErrorCode.INDEX_BUILDING}
    assert SessionQueryError(ErrorCode.BUSY, "x").retryable
    assert not SessionQueryError(ToolErrorCode.FAILED, "x").retryable


def test_context_is_a_read_only_copy() -> None:
    details = {"sessions_indexed": 3, "sessions_total": 10}
    error = SessionQueryError(ErrorCode.INDEX_BUILDING, "building", context=details)
    details["sessions_indexed"] = 4
    assert error.context == {"sessions_indexed": 3, "sessions_total": 10}
    with pytest.raises(TypeError):
        error.context["sessions_total"] = 0  # type: ignore[index]
    assert str(error) == "SESSION_QUERY_INDEX_BUILDING: building"
