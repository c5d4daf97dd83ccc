"""The search package's layering: the kernel owns what both backends share, and the two
backends are leaves that never import each other.

``sessionquery.search`` (cursors, snippets, requests, relevance, the shared backend body) may
be imported by both backends; ``search/sqlite/`` and ``search/postgres/`` import the kernel and
lower layers only. The one deliberate exception is ``search/postgres/unicode61.py``, which
derives the PostgreSQL backend's tokenizer table from the SQLite that APSW bundles
(``search.sqlite.db``), so that both backends tokenize identically.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from locations import ROOT

SEARCH = ROOT / "src" / "sessionquery" / "search"
ALLOWED = {
    ("postgres/unicode61.py", "sessionquery.search.sqlite"),  # from ... import db
    ("postgres/unicode61.py", "sessionquery.search.sqlite.db"),
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _modules(folder: str) -> list[Path]:
    return sorted((SEARCH / folder).glob("*.py")) if folder else sorted(SEARCH.glob("*.py"))


def _violations(folder: str, forbidden: tuple[str, ...]) -> list[str]:
    out = []
    for path in _modules(folder):
        relative = path.relative_to(SEARCH).as_posix()
        for name in sorted(_imports(path)):
            if name.startswith(forbidden) and (relative, name) not in ALLOWED:
                out.append(f"{relative} imports {name}")
    return out


@pytest.mark.parametrize(
    ("folder", "forbidden"),
    [
        ("sqlite", ("sessionquery.search.postgres",)),
        ("postgres", ("sessionquery.search.sqlite",)),
        ("", ("sessionquery.search.sqlite", "sessionquery.search.postgres")),
    ],
    ids=["sqlite", "postgres", "kernel"],
)
def test_the_backends_are_leaves_and_the_kernel_imports_neither(
    folder: str, forbidden: tuple[str, ...]
) -> None:
    assert _modules(folder), f"no modules found under search/{folder}"
    assert _violations(folder, forbidden) == []


def test_the_one_deliberate_cross_import_is_still_the_tokenizer_derivation() -> None:
    assert "sessionquery.search.sqlite" in _imports(SEARCH / "postgres" / "unicode61.py")
