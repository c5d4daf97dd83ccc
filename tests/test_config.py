"""Tests for sessionquery.config: the one place that reads the environment."""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from sessionquery.config import Config


def test_sessionquery_home_sets_every_default_path(tmp_path: Path) -> None:
    config = Config.from_env({"SESSIONQUERY_HOME": str(tmp_path / "sq")})
    assert config.home == tmp_path / "sq"
    assert config.store_root == tmp_path / "sq" / "sessions"
    assert config.index_path == tmp_path / "sq" / "index.sqlite3"
    assert config.quickstart_dir == tmp_path / "sq" / "quickstart"


def test_missing_or_empty_home_variable_falls_back_to_user_data_dir() -> None:
    expected = Path(platformdirs.user_data_dir("sessionquery", appauthor=False)).absolute()
    assert Config.from_env({}).home == expected
    assert Config.from_env({"SESSIONQUERY_HOME": ""}).home == expected


def test_relative_home_is_made_absolute_against_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = Config.from_env({"SESSIONQUERY_HOME": "relative/home"})
    assert config.home == tmp_path / "relative" / "home"
    assert config.home.is_absolute()


def test_from_env_reads_os_environ_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SESSIONQUERY_HOME", str(tmp_path))
    monkeypatch.delenv("NO_COLOR", raising=False)
    config = Config.from_env()
    assert config.home == tmp_path
    assert config.no_color is False


def test_no_color_is_set_by_any_non_empty_value(tmp_path: Path) -> None:
    assert Config.from_env({"SESSIONQUERY_HOME": str(tmp_path), "NO_COLOR": "1"}).no_color
    assert not Config.from_env({"SESSIONQUERY_HOME": str(tmp_path), "NO_COLOR": ""}).no_color


def test_resolving_a_config_creates_nothing_on_disk(tmp_path: Path) -> None:
    Config.from_env({"SESSIONQUERY_HOME": str(tmp_path / "never")})
    assert not (tmp_path / "never").exists()
