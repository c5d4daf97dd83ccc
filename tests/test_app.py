"""Tests for the composition root: selection, opening, the id resolver and the problems helper."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import raises_code
from sessionquery.app import (
    SOURCE_ORDER,
    App,
    ListedOnce,
    SourceOptions,
    open_index,
    problems_of,
    select_sources,
)
from sessionquery.config import Config
from sessionquery.errors import ErrorCode
from sessionquery.examples import EXAMPLE_SESSION_IDS, build_examples
from sessionquery.model import SessionHeader
from sessionquery.persistence import JsonlPersistence, ProblemSource
from sessionquery.redact import RedactingPersistence
from sessionquery.search.sqlite import SqliteSearch
from sessionquery.sources import MultiSource


def _config(tmp_path: Path) -> Config:
    return Config.for_home(tmp_path / "sq", user_home=tmp_path / "user")


def _header(session_id: str, parent: str | None = None, created_at: int = 0) -> SessionHeader:
    return SessionHeader(id=session_id, created_at=created_at, parent_session=parent)


def test_options_replace_the_config_files_and_the_default_sources(tmp_path: Path) -> None:
    config = _config(tmp_path)
    config.config_file.parent.mkdir(parents=True)
    config.config_file.write_text(f'codex = "{tmp_path}"\n', encoding="utf-8")
    options = SourceOptions(sources=(("claude", tmp_path / "b"), ("root", tmp_path / "a")))
    selection = select_sources(config, options)
    assert [(e.kind, e.label, e.origin) for e in selection.sources] == [
        ("root", "store", "option"),
        ("claude", "claude", "option"),
    ]
    assert (selection.index, selection.index_origin) == (config.index_path, "default")


def test_without_options_the_defaults_that_exist_are_used(tmp_path: Path) -> None:
    config = _config(tmp_path)
    config.claude_projects.mkdir(parents=True)
    selection = select_sources(config)
    assert [e.kind for e in selection.sources] == ["claude"]
    absent = [e.kind for e in selection.absent_defaults]
    assert absent[:2] == ["root", "codex"]  # then every other kind's default locations
    assert set(absent) == set(SOURCE_ORDER) - {"claude"}
    assert App(config).persistence().list() == []


def test_nothing_selected_is_invalid_config_naming_where_it_looked(tmp_path: Path) -> None:
    config = _config(tmp_path)
    with raises_code(ErrorCode.INVALID_CONFIG) as caught:
        App(config).persistence()
    assert str(config.store_root) in caught.value.message


def test_two_sources_combine_and_one_source_is_opened_as_itself(tmp_path: Path) -> None:
    build_examples(tmp_path / "a")
    build_examples(tmp_path / "b")
    config = _config(tmp_path)
    one = App(config, SourceOptions(sources=(("root", tmp_path / "a"),))).sources()
    assert isinstance(one, JsonlPersistence)
    both = SourceOptions(sources=(("root", tmp_path / "a"), ("root", tmp_path / "b")))
    combined = App(config, both).sources()
    assert isinstance(combined, MultiSource)
    assert "store2:billing-rounding" in {entry.header.id for entry in combined.list()}


def test_everything_read_through_the_app_is_redacted_once(tmp_path: Path) -> None:
    build_examples(tmp_path / "a")
    app = App(_config(tmp_path), SourceOptions(sources=(("root", tmp_path / "a"),)))
    persistence = app.persistence()
    assert isinstance(persistence, RedactingPersistence)
    assert persistence.inner is app.sources() and persistence.redactor is app.redactor
    with app.service() as query:
        assert query.redactor is app.redactor
        assert query.corpus.persistence is persistence
    with app.service(snapshot=True) as query:
        assert getattr(query.corpus.persistence, "redactor", None) is app.redactor
        assert not isinstance(query.corpus.persistence, RedactingPersistence)


def test_an_app_that_does_not_redact_refuses_a_search_index(tmp_path: Path) -> None:
    build_examples(tmp_path / "a")
    options = SourceOptions(sources=(("root", tmp_path / "a"),), index=tmp_path / "i.sqlite3")
    app = App(_config(tmp_path), options, redact=False)
    assert app.persistence() is app.sources()
    with app.service() as query:
        assert query.redactor is None
    with app.open_index() as index, raises_code(ErrorCode.INVALID_CONFIG):
        app.service(index)


def test_the_app_opens_its_sources_once_and_serves_them(tmp_path: Path) -> None:
    build_examples(tmp_path / "store")
    options = SourceOptions(sources=(("root", tmp_path / "store"),), index=tmp_path / "i.sqlite3")
    app = App(_config(tmp_path), options)
    assert not app.opened
    assert app.persistence() is app.persistence()
    assert app.opened
    with app.query(search=True) as query:
        assert query.search_sessions("float round").items
    with app.query() as query:
        assert {r.id for r in query.list_sessions()} == set(EXAMPLE_SESSION_IDS)
    assert app.resolve("dashboard-w") == "dashboard-websocket"


def test_a_missing_psycopg_is_invalid_config_with_the_install_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(sys.modules):
        if name == "psycopg" or name.startswith(("psycopg.", "sessionquery.search.postgres")):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg raises ImportError
    selection = select_sources(_config(tmp_path), SourceOptions(postgres="postgresql://x/y"))
    with raises_code(ErrorCode.INVALID_CONFIG) as caught:
        open_index(selection)
    assert "sessionquery[postgres]" in caught.value.message


def test_the_sqlite_index_is_opened_at_the_selected_path(tmp_path: Path) -> None:
    selection = select_sources(_config(tmp_path), SourceOptions(index=tmp_path / "x.sqlite3"))
    with open_index(selection) as index:
        assert isinstance(index, SqliteSearch)


def test_problems_of_asks_the_declared_protocol(tmp_path: Path) -> None:
    build_examples(tmp_path / "store")
    (tmp_path / "store" / "damaged.jsonl").write_bytes(b"not a header\n")
    store = JsonlPersistence(tmp_path / "store")
    snapshot = ListedOnce(store)
    assert isinstance(snapshot, ProblemSource)
    assert [Path(p.path).name for p in problems_of(snapshot)] == ["damaged.jsonl"]
    assert problems_of(object()) == []


def test_listed_once_lists_once_and_lacks_what_the_wrapped_persistence_lacks(
    tmp_path: Path,
) -> None:
    build_examples(tmp_path / "store")
    store = JsonlPersistence(tmp_path / "store")
    snapshot = ListedOnce(store)
    first = snapshot.list()
    (tmp_path / "store" / "billing-rounding.jsonl").unlink()  # a change after the listing
    assert [e.header.id for e in snapshot.list()] == [e.header.id for e in first]
    assert len(store.list()) == len(first) - 1  # the store itself sees the change
    assert hasattr(snapshot, "change_token") == hasattr(store, "change_token")
    assert not hasattr(snapshot, "no_such_capability")


def test_listed_once_reports_the_problems_of_the_wrapped_persistence(tmp_path: Path) -> None:
    build_examples(tmp_path / "store")
    (tmp_path / "store" / "damaged.jsonl").write_bytes(b"not a header\n")
    store = JsonlPersistence(tmp_path / "store")
    snapshot = ListedOnce(store)
    assert isinstance(snapshot, ProblemSource)
    reported = [(p.path, p.line, p.message) for p in problems_of(snapshot)]
    assert reported == [(p.path, p.line, p.message) for p in store.problems()]
    assert [Path(path).name for path, _line, _message in reported] == ["damaged.jsonl"]
    assert problems_of(object()) == []


def test_a_default_cursor_source_holds_its_user_folder_and_exists_with_either(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path)
    user = tmp_path / "user" / ".config" / "Cursor" / "User"
    (user / "globalStorage").mkdir(parents=True)
    selection = select_sources(config)
    (entry,) = [e for e in selection.sources if e.kind == "cursor"]
    assert entry.path == tmp_path / "user" / ".cursor" / "projects" and not entry.path.exists()
    assert entry.companions == (user,) and entry.exists  # the database's folder is there
    options = SourceOptions(sources=(("cursor", user),))
    (named,) = select_sources(config, options).sources
    assert named.companions == ()  # a named location is read as it is
