"""``sessionquery`` as a real process: the few checks that need one.

The entry point and its exit status, a first run on a new user's home, the progress bar on a
real terminal, and what a start-up imports. Everything else about the commands runs in
process (the ``cli`` fixture), which tests the same code without a new interpreter per call.
Every process gets its own HOME and SESSIONQUERY_HOME under ``tmp_path``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cli_support import CLAUDE_ID, CODEX_ID, Sample, clean_env, make_agent_home
from sessionquery.examples import EXAMPLE_SESSION_IDS

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


def test_quickstart_on_an_empty_home_builds_a_store_and_shows_search_trace_and_read(
    tmp_path: Path,
) -> None:
    result = run(["quickstart"], clean_env(tmp_path))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for heading in ("1. Search:", "2. Lineage:", "3. Exact read:"):
        assert heading in out
    assert "billing-rounding-bankers" in out and "billing-rounding-scan" in out
    assert '"seq":' in out  # the exact read prints the full event as JSON
    quick = tmp_path / "sq" / "quickstart"
    assert len(list((quick / "sessions").glob("*.jsonl"))) == len(EXAMPLE_SESSION_IDS)
    assert (quick / "index.sqlite3").is_file()
    assert "\x1b[" not in out  # not a terminal: plain text


def test_list_search_and_read_work_with_no_options_on_a_claude_and_codex_home(
    tmp_path: Path,
) -> None:
    env = clean_env(tmp_path)
    make_agent_home(Path(env["HOME"]))
    listed = run(["list", "--json"], env)
    assert listed.returncode == 0, listed.stderr
    assert {s["id"] for s in json.loads(listed.stdout)["sessions"]} == {CLAUDE_ID, CODEX_ID}
    found = run(["search", "websocket", "--json"], env)
    assert found.returncode == 0, found.stderr
    assert [item["session"]["id"] for item in json.loads(found.stdout)["items"]] == [CODEX_ID]
    read = run(["read", CLAUDE_ID, "1"], env)
    assert read.returncode == 0, read.stderr
    assert "flaky test in checkout" in read.stdout


def test_unknown_subcommand_exits_2_with_one_usage_line(tmp_path: Path) -> None:
    result = run(["frobnicate"], clean_env(tmp_path))
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("SESSION_QUERY_USAGE: "), line


def test_a_library_error_exits_1_with_its_code_on_one_line(tmp_path: Path) -> None:
    result = run(["list"], clean_env(tmp_path))  # no store, no agent history
    assert result.returncode == 1 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("SESSION_QUERY_INVALID_CONFIG: "), line


def test_a_first_search_on_a_terminal_draws_the_indexing_bar(tmp_path: Path) -> None:
    import pty

    env = clean_env(tmp_path)
    make_agent_home(Path(env["HOME"]))
    leader, follower = pty.openpty()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "sessionquery.cli", "search", "flaky"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=follower,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        os.close(follower)
        follower = -1
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal's other end is closed: all was read
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    assert result.returncode == 0
    assert CLAUDE_ID[:8] in result.stdout  # its short id
    assert b"Indexing [" in drawn and b"] 2/2 sessions" in drawn


# -- start-up: import only what a command needs -----------------------------------------------

_IMPORTED_BY = r"""
import contextlib, io, json, sys
from sessionquery.cli import main
command = json.loads(sys.argv[1])
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(command)
    except SystemExit:
        pass
print(json.dumps(sorted(sys.modules)))
"""


def _imported_by(args: list[str], env: dict[str, str]) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTED_BY, json.dumps(args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=True,
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_help_imports_no_command_no_service_and_no_backend(tmp_path: Path) -> None:
    loaded = _imported_by(["--help"], clean_env(tmp_path))
    for name in ("sessionquery.cli._commands", "sessionquery.query", "sessionquery.model"):
        assert name not in loaded
    assert not {name for name in loaded if name.startswith(("apsw", "mcp", "psycopg"))}


def test_list_imports_no_search_index_no_tools_and_no_mcp(sample: Sample, tmp_path: Path) -> None:
    loaded = _imported_by(["list", "--limit", "5", *sample.flags], clean_env(tmp_path))
    assert "sessionquery.cli._commands" in loaded  # it did run
    unwanted = ("apsw", "mcp", "psycopg", "sessionquery.search", "sessionquery.tools", "anyio")
    assert not {name for name in loaded if name.startswith(unwanted)}
