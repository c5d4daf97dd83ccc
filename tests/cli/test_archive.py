"""``sessionquery archive`` and the archive in the other commands: run, status, prune, the
``archive = true`` setting, and archived sessions marked in ``list`` and ``show``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from cli_support import CLAUDE_ID, CODEX_ID, clean_env, make_agent_home

TIMEOUT = 120


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sessionquery.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=TIMEOUT,
        check=False,
    )


def run_json(args: list[str], env: dict[str, str]) -> dict[str, object]:
    result = run([*args, "--json"], env)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert isinstance(document, dict)
    return document


def _agent_env(tmp_path: Path) -> dict[str, str]:
    env = clean_env(tmp_path)
    make_agent_home(Path(env["HOME"]))
    env["SESSIONQUERY_CONFIG"] = str(tmp_path / "config.toml")
    return env


def _sessions(env: dict[str, str]) -> dict[str, bool]:
    document = run_json(["list"], env)
    sessions = document["sessions"]
    assert isinstance(sessions, list)
    return {item["id"]: item["archived"] for item in sessions}


def _purge(env: dict[str, str]) -> None:
    home = Path(env["HOME"])
    shutil.rmtree(home / ".claude" / "projects")
    for path in (home / ".codex" / "sessions").rglob("*.jsonl"):
        path.unlink()


def test_archived_sessions_stay_listed_searched_and_shown_after_the_agents_purge(
    tmp_path: Path,
) -> None:
    env = _agent_env(tmp_path)
    assert _sessions(env) == {CLAUDE_ID: False, CODEX_ID: False}
    report = run_json(["archive"], env)
    assert report["stored"] == 2 and report["problems"] == []
    _purge(env)
    assert _sessions(env) == {CLAUDE_ID: True, CODEX_ID: True}
    listing = run(["list"], env)
    assert listing.returncode == 0, listing.stderr
    assert listing.stdout.count("[archived]") == 2
    shown = run_json(["show", CLAUDE_ID], env)
    assert shown["archived"] is True
    text = run(["show", CLAUDE_ID], env).stdout
    assert "archived" in text
    hits = run_json(["search", "flaky", "test"], env)
    items = hits["items"]
    assert isinstance(items, list) and [hit["session"]["id"] for hit in items] == [CLAUDE_ID]
    trace = run(["trace", CODEX_ID], env)
    assert trace.returncode == 0, trace.stderr
    read = run(["read", CLAUDE_ID, "1"], env)
    assert read.returncode == 0 and "flaky" in read.stdout


def test_archive_status_counts_files_bytes_and_what_was_rescued(tmp_path: Path) -> None:
    env = _agent_env(tmp_path)
    missing = run_json(["archive", "--status"], env)
    assert missing["exists"] is False
    assert "archive = true" in run(["archive", "--status"], env).stdout
    run_json(["archive"], env)
    status = run_json(["archive", "--status"], env)
    assert status["files"] == 2 and status["rescued"] == [] and status["rescued_sessions"] == 0
    assert 0 < status["stored_bytes"] <= status["source_bytes"]  # type: ignore[operator]
    _purge(env)
    status = run_json(["archive", "--status"], env)
    rescued = status["rescued"]
    assert isinstance(rescued, list) and {item["source"] for item in rescued} == {"claude", "codex"}
    assert status["rescued_sessions"] == 2
    text = run(["archive", "--status"], env).stdout
    assert "rescued   2 file(s) whose source is gone (2 session(s))" in text


def test_prune_older_than_removes_old_copies(tmp_path: Path) -> None:
    env = _agent_env(tmp_path)
    home = Path(env["HOME"])
    old = 1_000_000_000  # 2001
    for path in (home / ".claude").rglob("*.jsonl"):
        os.utime(path, (old, old))
    run_json(["archive"], env)
    assert run_json(["archive", "--prune-older-than", "30"], env) == {"pruned": 1}
    assert run_json(["archive", "--status"], env)["files"] == 1
    bad = run(["archive", "--prune-older-than", "0"], env)
    assert bad.returncode == 2 and bad.stderr.startswith("SESSION_QUERY_USAGE: ")


def test_with_archive_true_every_search_archives_first(tmp_path: Path) -> None:
    env = _agent_env(tmp_path)
    Path(env["SESSIONQUERY_CONFIG"]).write_text("archive = true\n", encoding="utf-8")
    result = run(["search", "flaky"], env)
    assert result.returncode == 0, result.stderr
    assert run_json(["archive", "--status"], env)["files"] == 2
    _purge(env)
    assert _sessions(env) == {CLAUDE_ID: True, CODEX_ID: True}
    indexed = run_json(["index"], env)
    assert indexed["persisted_removed"] == 0  # the index keeps archived sessions


def test_archiving_is_off_by_default_and_sources_says_how_to_turn_it_on(tmp_path: Path) -> None:
    env = _agent_env(tmp_path)
    assert run(["search", "flaky"], env).returncode == 0
    assert not (Path(env["SESSIONQUERY_HOME"]) / "archive").exists()
    text = run(["sources"], env).stdout
    assert "archive = true" in text and "sessionquery archive" in text
    document = run_json(["sources"], env)
    assert document["archive"] == {
        "path": str(Path(env["SESSIONQUERY_HOME"]) / "archive"),
        "on": False,
        "files": None,
    }


def test_quickstart_says_how_to_keep_the_agents_history(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    result = run(["quickstart"], env)
    assert result.returncode == 0, result.stderr
    assert "sessionquery archive" in result.stdout and "archive = true" in result.stdout


def test_archive_without_an_importer_source_is_a_config_error(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    store = tmp_path / "store"
    store.mkdir()
    result = run(["archive", "--root", str(store)], env)
    assert result.returncode == 1
    assert result.stderr.startswith("SESSION_QUERY_INVALID_CONFIG: ")


def test_a_broken_archive_setting_is_a_config_error(tmp_path: Path) -> None:
    env = _agent_env(tmp_path)
    Path(env["SESSIONQUERY_CONFIG"]).write_text('archive = "yes"\n', encoding="utf-8")
    result = run(["list"], env)
    assert result.returncode == 1
    assert result.stderr.startswith("SESSION_QUERY_INVALID_CONFIG: ")
