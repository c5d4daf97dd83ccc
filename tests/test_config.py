"""Tests for sessionquery.config: the one place that reads the environment."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import platformdirs
import pytest

from conftest import raises_code
from sessionquery.config import MAX_CONFIG_BYTES, Config, read_settings
from sessionquery.errors import ErrorCode, SessionQueryError


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


# -- default importer directories and the config file -------------------------------------


def test_claude_and_codex_defaults_live_in_the_user_home(tmp_path: Path) -> None:
    config = Config.for_home(tmp_path / "sq", user_home=tmp_path / "me")
    assert config.claude_projects == tmp_path / "me" / ".claude" / "projects"
    assert config.codex_sessions == tmp_path / "me" / ".codex" / "sessions"
    assert config.importer_cache == tmp_path / "sq" / "importer-cache.sqlite3"


def test_claude_config_dir_and_codex_home_move_the_importer_defaults(tmp_path: Path) -> None:
    config = Config.from_env(
        {
            "SESSIONQUERY_HOME": str(tmp_path / "sq"),
            "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
            "CODEX_HOME": str(tmp_path / "codex"),
        }
    )
    assert config.claude_projects == tmp_path / "claude" / "projects"
    assert config.codex_sessions == tmp_path / "codex" / "sessions"


def test_the_config_file_is_in_the_user_config_dir_unless_sessionquery_config_names_one(
    tmp_path: Path,
) -> None:
    expected = Path(platformdirs.user_config_dir("sessionquery", appauthor=False)).absolute()
    assert Config.from_env({}).config_file == expected / "config.toml"
    named = Config.from_env({"SESSIONQUERY_CONFIG": str(tmp_path / "mine.toml")})
    assert named.config_file == tmp_path / "mine.toml"


def test_a_missing_config_file_names_nothing(tmp_path: Path) -> None:
    settings = read_settings(tmp_path / "absent.toml")
    assert settings.sources == {} and settings.index is None
    assert not settings.names_sources


def test_config_file_paths_expand_home_and_are_relative_to_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    path = tmp_path / "conf" / "config.toml"
    path.parent.mkdir()
    path.write_text(
        'root = ["stores/a", "/abs/b"]\nclaude = "~/.claude/projects"\nindex = "i.sqlite3"\n',
        encoding="utf-8",
    )
    settings = read_settings(path)
    assert settings.sources == {
        "root": (tmp_path / "conf" / "stores" / "a", Path("/abs/b")),
        "claude": (tmp_path / "me" / ".claude" / "projects",),
    }
    assert settings.index == tmp_path / "conf" / "i.sqlite3"
    assert settings.names_sources


@pytest.mark.parametrize(
    "text",
    [
        "root = 3\n",
        'claude = ["ok", 1]\n',
        'claude = [""]\n',
        "index = []\n",
        'color = "always"\n',
        'archive = "yes"\n',
        "archive_raw = 1\n",
        "archive_keep_days = 0\n",
        'archive_keep_days = "30"\n',
        "archive_keep_days = true\n",
        "root = [\n",
        "\xff\n",
    ],
)
def test_a_broken_config_file_raises_invalid_config_naming_the_file(
    tmp_path: Path, text: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(text.encode("latin-1"))  # "\xff" is not UTF-8
    with raises_code(ErrorCode.INVALID_CONFIG) as caught:
        read_settings(path)
    assert str(path) in caught.value.message


def test_resolving_never_reads_a_broken_config_file(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("root = 3\n", encoding="utf-8")
    config = Config.from_env({"SESSIONQUERY_CONFIG": str(path)})
    with pytest.raises(SessionQueryError):
        config.settings()


# -- hostile config paths and values (issue 31.5, 31.6) --------------------------------------------


def _within(work: Callable[[], object], seconds: float = 30.0) -> BaseException | None:
    """Run ``work`` in a thread; the error it raised, or ``None`` (a hang fails the test)."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            work()
            outcome.append(None)
        except BaseException as error:  # the test inspects it
            outcome.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert outcome, f"did not finish within {seconds} s"
    return outcome[0]


def _settings_within(path: Path) -> BaseException | None:
    return _within(lambda: read_settings(path))


def test_a_fifo_as_the_config_file_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    error = _settings_within(fifo)
    assert isinstance(error, SessionQueryError) and error.code is ErrorCode.INVALID_CONFIG
    assert "not a regular file" in error.message


def test_dev_zero_as_the_config_file_is_refused_without_reading_it() -> None:
    error = _settings_within(Path("/dev/zero"))
    assert isinstance(error, SessionQueryError) and error.code is ErrorCode.INVALID_CONFIG


def test_a_config_file_over_a_mebibyte_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "config.toml"
    big.write_text("# " + "x" * MAX_CONFIG_BYTES + "\n", encoding="utf-8")
    with raises_code(ErrorCode.INVALID_CONFIG):
        read_settings(big)


@pytest.mark.parametrize(
    "value", ["[" * 100_000 + "]" * 100_000, "{a = " * 100_000 + "1" + "}" * 100_000]
)
def test_a_value_nested_100000_levels_is_invalid_config(tmp_path: Path, value: str) -> None:
    deep = tmp_path / "config.toml"
    deep.write_text(f"root = {value}\n", encoding="utf-8")
    with raises_code(ErrorCode.INVALID_CONFIG):
        read_settings(deep)


def test_every_command_answers_a_fifo_config_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sessionquery.cli import main

    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    monkeypatch.setenv("SESSIONQUERY_CONFIG", str(fifo))
    statuses: list[int] = []
    assert _within(lambda: statuses.append(main(["list"]))) is None
    assert statuses == [1]
    assert capsys.readouterr().err.startswith("SESSION_QUERY_INVALID_CONFIG: config file ")


def test_every_kind_has_a_config_key_and_store_is_root(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('gemini = "g"\nopencode = ["o1", "o2"]\nstore = "s"\n', encoding="utf-8")
    settings = read_settings(path)
    assert settings.sources == {
        "gemini": (tmp_path / "g",),
        "opencode": (tmp_path / "o1", tmp_path / "o2"),
        "root": (tmp_path / "s",),
    }


def test_each_producer_variable_moves_its_default_and_only_that(tmp_path: Path) -> None:
    environ = {
        "HOME": str(tmp_path / "me"),
        "SESSIONQUERY_HOME": str(tmp_path / "sq"),
        "GEMINI_CLI_HOME": str(tmp_path / "g"),
        "QWEN_HOME": str(tmp_path / "q"),
        "COPILOT_HOME": str(tmp_path / "c"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "conf"),
    }
    located = dict(reversed(Config.from_env(environ).default_sources))  # each kind's first
    assert located["gemini"] == tmp_path / "g" / ".gemini"
    assert located["qwen"] == tmp_path / "q"
    assert located["copilot"] == tmp_path / "c"
    assert located["opencode"] == tmp_path / "data" / "opencode"
    assert located["vscode"] == tmp_path / "conf" / "Code" / "User"
    assert located["cursor"] == tmp_path / "me" / ".cursor" / "projects"
    assert located["claude"] == tmp_path / "me" / ".claude" / "projects"
    runtime = dict(
        Config.from_env(environ | {"QWEN_RUNTIME_DIR": str(tmp_path / "r")}).default_sources
    )
    assert runtime["qwen"] == tmp_path / "r"
    mac = Config.for_home(tmp_path / "sq", user_home=tmp_path / "me", platform="darwin")
    macs = [path for kind, path in mac.default_sources if kind == "vscode"]
    assert macs[0] == tmp_path / "me" / "Library" / "Application Support" / "Code" / "User"


def test_the_archive_settings_are_off_and_forever_unless_the_file_says_otherwise(
    tmp_path: Path,
) -> None:
    path = tmp_path / "config.toml"
    empty = read_settings(path)
    assert (empty.archive, empty.archive_keep_days, empty.archive_raw) == (False, None, False)
    path.write_text("archive = true\narchive_keep_days = 90\narchive_raw = true\n")
    settings = read_settings(path)
    assert (settings.archive, settings.archive_keep_days, settings.archive_raw) == (True, 90, True)
    assert not settings.names_sources
    assert Config.for_home(tmp_path / "sq").archive_dir == tmp_path / "sq" / "archive"


def test_the_push_table_reads_every_key(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        '[push]\npostgres = "host=db dbname=team"\nmachine = "alice-laptop"\n'
        "interval = 30\njobs = 3\n",
        encoding="utf-8",
    )
    push = read_settings(path).push
    assert push == {
        "postgres": "host=db dbname=team",
        "machine": "alice-laptop",
        "interval": 30.0,
        "jobs": 3,
    }


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("jobs = 0", "push.jobs"),
        ("jobs = 17", "push.jobs"),
        ('jobs = "4"', "push.jobs"),
        ("jobs = true", "push.jobs"),
        ("interval = -1", "push.interval"),
        ("machine = ''", "push.machine"),
        ("speed = 3", "push.speed"),
    ],
)
def test_a_bad_push_value_is_invalid_config_naming_its_key(
    tmp_path: Path, line: str, named: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(f"[push]\n{line}\n", encoding="utf-8")
    with raises_code(ErrorCode.INVALID_CONFIG) as caught:
        read_settings(path)
    assert named in caught.value.message
