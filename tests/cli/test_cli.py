"""The command line's contract (``sessionquery.cli.main``), in process: an error is one
``CODE: message`` line with exit status 1, the sources' problems are one summary line, and
no input makes a traceback. Through a real process: ``test_main.py``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cli_support import CLAUDE_ID, CODEX_ID, Cli, Sample, make_agent_home


def test_missing_store_exits_1_naming_the_directory(cli: Cli) -> None:
    ran = cli("list")
    assert ran.status == 1
    line = ran.error_line("SESSION_QUERY_INVALID_CONFIG")
    assert str(cli.data / "sessions") in line
    assert list(cli.data.iterdir()) == []  # a read never creates the store


def test_foreign_index_database_exits_1_and_is_left_untouched(
    cli: Cli, sample: Sample, tmp_path: Path
) -> None:
    foreign = tmp_path / "notes.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('keep me')")
    conn.close()
    before = foreign.read_bytes()
    ran = cli("search", "rounding", "--root", str(sample.root), "--index", str(foreign))
    assert ran.status == 1
    ran.error_line("SESSION_QUERY_INDEX_FAILED")
    assert foreign.read_bytes() == before


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["show", "no-such-session"], "SESSION_QUERY_SESSION_NOT_FOUND"),
        (["trace", "no-such-session"], "SESSION_QUERY_SESSION_NOT_FOUND"),
        (["read", "billing-rounding", "9999"], "SESSION_QUERY_EVENT_NOT_FOUND"),
        (["search-events", "no-such-session", "x"], "SESSION_QUERY_SESSION_NOT_FOUND"),
    ],
)
def test_library_errors_exit_1_with_their_code_on_one_line(
    cli: Cli, sample: Sample, args: list[str], code: str
) -> None:
    ran = cli(*args, *sample.flags)
    assert ran.status == 1
    assert ran.out == ""
    ran.error_line(code)


def test_importer_problems_are_summarised_on_stderr(cli: Cli, tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-home-dev-app"
    project.mkdir(parents=True)
    good = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": "claude-1",
        "timestamp": "2025-03-07T10:00:00.000Z",
        "cwd": "/home/dev/app",
        "message": {"role": "user", "content": "why is the build slow"},
    }
    lines = [json.dumps(good), "{not json", ""]
    (project / "claude-1.jsonl").write_text("\n".join(lines), encoding="utf-8")
    ran = cli("list", "--json", "--claude", str(tmp_path / "projects"))
    assert ran.status == 0, ran.err
    assert [s["id"] for s in json.loads(ran.out)["sessions"]] == ["claude-1"]
    (summary,) = ran.err.splitlines()  # one line, once per command
    assert summary.startswith("warning: 1 problem reading the session sources")
    assert "sessionquery sources" in summary
    shown = cli("sources", "--claude", str(tmp_path / "projects"))
    assert shown.status == 0, shown.err
    assert "claude-1.jsonl:2" in shown.out


@pytest.mark.slow
def test_bad_transcripts_give_results_and_one_problem_line_never_a_traceback(cli: Cli) -> None:
    make_agent_home(cli.home)
    projects = cli.home / ".claude" / "projects"
    (projects / "-deep").mkdir(parents=True)
    (projects / "-deep" / "deep.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n")
    (projects / "-bad\x1bname").mkdir()
    (projects / "-bad\x1bname" / "x\x07.jsonl").write_text('{"type": "user"}\n{oops\n')
    for number, args in enumerate(
        (["list", "--json"], ["search", "flaky", "--json"], ["read", "c0ffee", "1"])
    ):
        ran = cli(*args)
        assert ran.status == 0, (args, ran.err)
        assert "Traceback" not in ran.err
        if number == 0:  # the warning is shown once, until the problems change
            (line,) = ran.err.splitlines()
            assert line.startswith("warning: ") and "sessionquery sources" in line, line
        else:
            assert ran.err == ""
    listed = cli("list", "--json").json()
    assert {CLAUDE_ID, CODEX_ID} <= {s["id"] for s in listed["sessions"]}
    shown = cli("sources")
    assert shown.status == 0 and "deep.jsonl" in shown.out
    assert "\x1b" not in shown.out  # a hostile file name is shown escaped
