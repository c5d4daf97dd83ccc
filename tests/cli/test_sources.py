"""Where the sessions come from: options, the config file, the agents' default folders, and
``sessionquery sources`` saying which was used."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cli_support import CODEX_ID, Cli, Sample, make_agent_home
from sessionquery.examples import DASHBOARD_WORKSPACE, EXAMPLE_SESSION_IDS


def test_source_options_are_accepted_before_the_subcommand(cli: Cli, sample: Sample) -> None:
    document = cli(*sample.flags, "show", "dashboard-dark-mode", "--json").json()
    assert document["session"]["cwd"] == DASHBOARD_WORKSPACE


def test_default_store_comes_from_sessionquery_home(cli: Cli, sample: Sample) -> None:
    (cli.data / "sessions").symlink_to(sample.root, target_is_directory=True)
    document = cli("list", "--json").json()
    assert len(document["sessions"]) == len(EXAMPLE_SESSION_IDS)


def test_claude_and_store_sources_combine(cli: Cli, sample: Sample, tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-home-dev-app"
    project.mkdir(parents=True)
    line = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": "claude-2",
        "timestamp": "2025-03-07T10:00:00.000Z",
        "cwd": "/home/dev/app",
        "message": {"role": "user", "content": "hello"},
    }
    (project / "claude-2.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    args = ["list", "--root", str(sample.root), "--claude", str(tmp_path / "projects")]
    document = cli(*args, "--json").json()
    assert {s["id"] for s in document["sessions"]} == {*EXAMPLE_SESSION_IDS, "claude-2"}


def test_claude_config_dir_and_codex_home_move_the_default_sources(
    cli: Cli, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    make_agent_home(elsewhere)
    cli.setenv("CLAUDE_CONFIG_DIR", str(elsewhere / ".claude"))
    cli.setenv("CODEX_HOME", str(elsewhere / ".codex"))
    document = cli("sources", "--json").json()
    used = {item["kind"]: item for item in document["sources"] if item["exists"]}
    assert used["claude"]["path"] == str(elsewhere / ".claude" / "projects")
    assert used["codex"]["path"] == str(elsewhere / ".codex" / "sessions")
    assert used["claude"]["sessions"] == used["codex"]["sessions"] == 1


def test_sources_shows_where_each_source_came_from(cli: Cli, tmp_path: Path) -> None:
    make_agent_home(cli.home)
    document = cli("sources", "--json").json()
    kinds = {item["kind"]: item for item in document["sources"]}
    assert kinds["claude"]["from"] == kinds["codex"]["from"] == "default"
    assert kinds["root"]["exists"] is False
    assert document["index"]["from"] == "default"
    text = cli("sources").out
    assert re.search(r"^Claude Code +default +1 ", text, re.MULTILINE) and "(not found)" in text
    assert {i["kind"] for i in document["sources"]} >= {"gemini", "opencode", "vscode"}

    config = tmp_path / "sq.toml"
    codex = cli.home / ".codex" / "sessions"
    config.write_text(f'codex = "{codex}"\nindex = "idx.sqlite3"\n', encoding="utf-8")
    cli.setenv("SESSIONQUERY_CONFIG", str(config))
    document = cli("sources", "--json").json()
    assert [(i["kind"], i["from"]) for i in document["sources"]] == [("codex", "config")]
    assert document["index"] == {"path": str(tmp_path / "idx.sqlite3"), "from": "config"}
    listed = cli("list", "--json").json()
    assert [s["id"] for s in listed["sessions"]] == [CODEX_ID]

    claude = cli.home / ".claude" / "projects"
    document = cli("sources", "--claude", str(claude), "--json").json()
    assert [(i["kind"], i["from"]) for i in document["sources"]] == [("claude", "option")]
    assert document["index"]["from"] == "config"


def test_a_broken_config_file_is_one_invalid_config_line(cli: Cli, tmp_path: Path) -> None:
    config = tmp_path / "broken.toml"
    config.write_text("claude = [1, 2]\n", encoding="utf-8")
    cli.setenv("SESSIONQUERY_CONFIG", str(config))
    ran = cli("list")
    assert ran.status == 1
    line = ran.error_line("SESSION_QUERY_INVALID_CONFIG")
    assert str(config) in line


@pytest.mark.parametrize(
    ("option", "typo", "advice"),
    [
        ("--claude", "claude-projects", "~/.claude/projects"),
        ("--codex", "codex-sessions", "~/.codex/sessions"),
        ("--root", "store", "recorded"),
    ],
)
def test_a_wrong_source_path_gets_advice_for_its_kind(
    cli: Cli, option: str, typo: str, advice: str
) -> None:
    make_agent_home(cli.home)
    path = cli.home / typo
    ran = cli("list", option, str(path))
    assert ran.status == 1
    line = ran.error_line("SESSION_QUERY_INVALID_CONFIG")
    assert advice in line and str(path) in line
    assert "quickstart" not in line or option == "--root"
