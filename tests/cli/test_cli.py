"""Tests for the ``sessionquery`` command line, run as a real subprocess.

Every subprocess gets its own HOME and SESSIONQUERY_HOME under ``tmp_path``, so no test reads
or writes the developer's data. One sample store (built by ``quickstart``) is shared by the
read-only tests of this module.
"""

from __future__ import annotations

import html.parser
import io
import json
import os
import re
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli_support import CLAUDE_ID, CODEX_ID, clean_env, make_agent_home
from locations import DOCS
from sessionquery.app import ListedOnce, problems_of
from sessionquery.cli import COMMANDS, main
from sessionquery.cli import _render as render
from sessionquery.cli import _terminal as term
from sessionquery.cli import _titlecache as titlecache
from sessionquery.cli._parser import build_parser
from sessionquery.cli._services import Invocation, Progress
from sessionquery.config import Config
from sessionquery.examples import (
    BILLING_WORKSPACE,
    DASHBOARD_WORKSPACE,
    EXAMPLE_SESSION_IDS,
    build_examples,
)
from sessionquery.persistence import JsonlPersistence, PersistedSession, ProblemSource
from sessionquery.query.service import SessionQuery

DOCS = DOCS / "cli.md"
TIMEOUT = 120


@dataclass(frozen=True)
class Sample:
    env: dict[str, str]
    home: Path
    root: Path
    index: Path

    @property
    def flags(self) -> list[str]:
        return ["--root", str(self.root), "--index", str(self.index)]


def _env(base: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "NO_COLOR"}
    (base / "home").mkdir(parents=True, exist_ok=True)
    env["HOME"] = str(base / "home")
    env["SESSIONQUERY_HOME"] = str(base / "sq")
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        env[name] = str(base / "home" / name.lower())
    return env


def run(
    args: list[str], env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sessionquery.cli", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=TIMEOUT,
        check=False,
    )


def run_json(args: list[str], env: dict[str, str]) -> object:
    result = run([*args, "--json"], env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _one_error_line(result: subprocess.CompletedProcess[str], code: str) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"{code}: "), lines[0]
    assert "Traceback" not in result.stderr
    return lines[0]


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Sample:
    base = tmp_path_factory.mktemp("cli-sample")
    env = _env(base)
    result = run(["quickstart"], env)
    assert result.returncode == 0, result.stderr
    quick = base / "sq" / "quickstart"
    return Sample(env=env, home=base, root=quick / "sessions", index=quick / "index.sqlite3")


# -- quickstart ---------------------------------------------------------------------------


def test_quickstart_on_an_empty_home_builds_a_store_and_shows_search_trace_and_read(
    tmp_path: Path,
) -> None:
    env = _env(tmp_path)
    result = run(["quickstart"], env)
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


def test_quickstart_rerun_recreates_the_sample_and_leaves_other_data_alone(tmp_path: Path) -> None:
    env = _env(tmp_path)
    store = tmp_path / "sq" / "sessions"
    store.mkdir(parents=True)
    (store / "keep.txt").write_text("user data", encoding="utf-8")
    first = run(["quickstart"], env)
    sessions = tmp_path / "sq" / "quickstart" / "sessions"
    before = {p.name: p.read_bytes() for p in sessions.glob("*.jsonl")}
    second = run(["quickstart"], env)
    assert first.returncode == second.returncode == 0, second.stderr
    assert {p.name: p.read_bytes() for p in sessions.glob("*.jsonl")} == before
    assert [p.name for p in store.iterdir()] == ["keep.txt"]
    assert first.stdout == second.stdout


def test_quickstart_refuses_a_root_that_holds_other_data(tmp_path: Path) -> None:
    env = _env(tmp_path)
    root = tmp_path / "mine"
    root.mkdir()
    (root / "notes.md").write_text("keep", encoding="utf-8")
    result = run(["quickstart", "--root", str(root)], env)
    assert result.returncode == 1
    _one_error_line(result, "SESSION_QUERY_INVALID_CONFIG")
    assert [p.name for p in root.iterdir()] == ["notes.md"]


# -- read commands with --json -------------------------------------------------------------


def test_list_json_returns_every_session_newest_first(sample: Sample) -> None:
    document = run_json(["list", *sample.flags], sample.env)
    assert isinstance(document, dict)
    sessions = document["sessions"]
    assert {s["id"] for s in sessions} == set(EXAMPLE_SESSION_IDS)
    created = [s["created_at"] for s in sessions]
    assert created == sorted(created, reverse=True)
    assert all(s["persisted"] and not s["live"] for s in sessions)


def test_list_with_cwd_and_titles_shows_only_that_workspace(sample: Sample) -> None:
    document = run_json(
        ["list", "--cwd", DASHBOARD_WORKSPACE, "--titles", *sample.flags], sample.env
    )
    assert isinstance(document, dict)
    titles = {s["id"]: s["title"] for s in document["sessions"]}
    assert titles == {
        "dashboard-dark-mode": "Add a dark mode toggle to settings",
        "dashboard-websocket": "Debug websocket reconnect loop",
    }


def test_show_json_returns_header_and_title(sample: Sample) -> None:
    document = run_json(["show", "billing-rounding-scan", *sample.flags], sample.env)
    assert isinstance(document, dict)
    assert document["session"]["parent_session"] == "billing-rounding"
    assert document["session"]["origin"] == "subagent"
    assert document["title"]["title"] == "Find float rounding in billing/"


def test_events_json_lists_every_event_with_surface(sample: Sample) -> None:
    document = run_json(["events", "billing-rounding", *sample.flags], sample.env)
    assert isinstance(document, dict)
    events = document["events"]
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert {"current", "shadowed", "log-only"} == {e["surface"] for e in events}


def test_read_json_returns_the_target_in_wire_form_with_neighbours(sample: Sample) -> None:
    args = ["read", "billing-rounding", "20", "--before", "1", "--after", "2", *sample.flags]
    document = run_json(args, sample.env)
    assert isinstance(document, dict)
    assert document["target"]["seq"] == 20
    assert document["target"]["type"] == "user/message"
    assert [e["seq"] for e in document["events"]] == [19, 20, 21, 22]
    assert (document["start_seq"], document["end_seq"]) == (19, 22)


def test_trace_json_shows_the_fork_and_the_subagent_as_descendants(sample: Sample) -> None:
    document = run_json(["trace", "billing-rounding", *sample.flags], sample.env)
    assert isinstance(document, dict)
    children = [node["session"]["id"] for node in document["descendants"]]
    assert children == ["billing-rounding-bankers", "billing-rounding-scan"]
    assert document["complete"] is True and document["ancestors"] == []


def test_trace_event_json_shows_the_compaction_that_replaced_an_event(sample: Sample) -> None:
    document = run_json(["trace-event", "billing-rounding", "20", *sample.flags], sample.env)
    assert isinstance(document, dict)
    assert document["target"]["surface"] == "shadowed"
    replacer = document["replaced_by"]
    assert isinstance(replacer, int) and replacer > 20
    assert document["replacement_chain"] == [replacer]


def test_search_json_filters_by_workspace_and_carries_titles(sample: Sample) -> None:
    args = ["search", "heartbeat", "--cwd", DASHBOARD_WORKSPACE, *sample.flags]
    document = run_json(args, sample.env)
    assert isinstance(document, dict)
    assert [item["session"]["id"] for item in document["items"]] == ["dashboard-websocket"]
    assert document["items"][0]["title"] == "Debug websocket reconnect loop"
    assert "heartbeat" in document["items"][0]["best_match"]["snippet"].lower()
    other = run_json(["search", "heartbeat", "--cwd", BILLING_WORKSPACE, *sample.flags], sample.env)
    assert isinstance(other, dict) and other["items"] == []


def test_search_limit_is_a_total_that_pages_internally(sample: Sample) -> None:
    document = run_json(["search", "rounding", "--limit", "1", *sample.flags], sample.env)
    assert isinstance(document, dict)
    assert len(document["items"]) == 1
    assert document["more"] is True
    everything = run_json(["search", "rounding", "--limit", "50", *sample.flags], sample.env)
    assert isinstance(everything, dict)
    assert len(everything["items"]) > 1 and everything["more"] is False


def test_search_events_json_returns_hits_of_one_session(sample: Sample) -> None:
    args = ["search-events", "billing-rounding", "ROUND_HALF_UP", "--type", "assistant/message"]
    document = run_json([*args, *sample.flags], sample.env)
    assert isinstance(document, dict)
    assert document["session"]["id"] == "billing-rounding"
    assert document["items"] and all(i["type"] == "assistant/message" for i in document["items"])


def test_index_json_reports_an_up_to_date_index(sample: Sample) -> None:
    document = run_json(["index", *sample.flags], sample.env)
    assert isinstance(document, dict)
    assert document["index"] == str(sample.index)
    assert document["persisted_indexed"] == 0


def test_source_options_are_accepted_before_the_subcommand(sample: Sample) -> None:
    document = run_json([*sample.flags, "show", "dashboard-dark-mode"], sample.env)
    assert isinstance(document, dict)
    assert document["session"]["cwd"] == DASHBOARD_WORKSPACE


def test_default_store_comes_from_sessionquery_home(sample: Sample, tmp_path: Path) -> None:
    env = dict(sample.env, SESSIONQUERY_HOME=str(tmp_path))
    (tmp_path / "sessions").symlink_to(sample.root, target_is_directory=True)
    document = run_json(["list"], env)
    assert isinstance(document, dict)
    assert len(document["sessions"]) == len(EXAMPLE_SESSION_IDS)


def test_text_output_is_aligned_and_plain_when_not_a_terminal(sample: Sample) -> None:
    result = run(["search", "websocket", *sample.flags], sample.env)
    assert result.returncode == 0, result.stderr
    assert "dashboard-websocket — Debug websocket reconnect loop" in result.stdout
    assert "\x1b[" not in result.stdout
    listing = run(["list", *sample.flags], sample.env).stdout.splitlines()
    starts = {line.index("/home/dev") for line in listing if "/home/dev" in line}
    assert len(starts) == 1  # the workspace column is aligned


# -- errors ---------------------------------------------------------------------------------


def test_unknown_subcommand_exits_2_with_one_usage_line(tmp_path: Path) -> None:
    result = run(["frobnicate"], _env(tmp_path))
    assert result.returncode == 2
    _one_error_line(result, "SESSION_QUERY_USAGE")


@pytest.mark.parametrize(
    "args",
    [
        ["list", "--no-such-option"],
        ["search", "x", "--limit", "0"],
        ["read", "some-id", "-1"],
        ["read", "some-id", "three"],
        ["search", "x", "--since", "yesterday"],
        ["search", "x", "--surface", "sideways"],
        ["quickstart", "--claude", "somewhere"],
        [],
    ],
)
def test_bad_options_and_values_exit_2_with_one_usage_line(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # Parsing only, so in process: the subprocess path is covered by the test above.
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("SESSION_QUERY_USAGE: ")


@pytest.mark.parametrize(
    ("text", "epoch_ms"),
    [
        ("2039-08-26T22:57:22.529Z", 2_198_012_242_529),
        ("2038-10-20T14:45:03.594+00:00", 2_171_198_703_594),
        ("1969-12-31T23:59:59.999Z", -1),
        ("2025-03-07", 1_741_305_600_000),
    ],
)
def test_since_and_until_convert_to_the_exact_epoch_millisecond(text: str, epoch_ms: int) -> None:
    parsed = build_parser(COMMANDS).parse_args(["search", "x", "--since", text, "--until", text])
    assert parsed.since == epoch_ms
    assert parsed.until == epoch_ms


def test_since_and_until_keep_an_instant_between_two_milliseconds_inside_the_bounds() -> None:
    text = "2025-03-07T00:00:00.0005Z"
    parsed = build_parser(COMMANDS).parse_args(["search", "x", "--since", text, "--until", text])
    assert (parsed.since, parsed.until) == (1_741_305_600_001, 1_741_305_600_000)


def test_missing_store_exits_1_naming_the_directory(tmp_path: Path) -> None:
    result = run(["list"], _env(tmp_path))
    assert result.returncode == 1
    line = _one_error_line(result, "SESSION_QUERY_INVALID_CONFIG")
    assert str(tmp_path / "sq" / "sessions") in line
    assert not (tmp_path / "sq").exists()  # a read never creates the store


def test_foreign_index_database_exits_1_and_is_left_untouched(
    sample: Sample, tmp_path: Path
) -> None:
    foreign = tmp_path / "notes.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('keep me')")
    conn.close()
    before = foreign.read_bytes()
    result = run(
        ["search", "rounding", "--root", str(sample.root), "--index", str(foreign)], sample.env
    )
    assert result.returncode == 1
    _one_error_line(result, "SESSION_QUERY_INDEX_FAILED")
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
    sample: Sample, args: list[str], code: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*args, *sample.flags]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{code}: "), captured.err


def test_importer_problems_are_summarised_on_stderr(sample: Sample, tmp_path: Path) -> None:
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
    result = run(["list", "--json", "--claude", str(tmp_path / "projects")], sample.env)
    assert result.returncode == 0, result.stderr
    assert [s["id"] for s in json.loads(result.stdout)["sessions"]] == ["claude-1"]
    (summary,) = result.stderr.splitlines()  # one line, once per command
    assert summary.startswith("warning: 1 problem reading the session sources")
    assert "sessionquery sources" in summary
    shown = run(["sources", "--claude", str(tmp_path / "projects")], sample.env)
    assert shown.returncode == 0, shown.stderr
    assert "claude-1.jsonl:2" in shown.stdout


def test_claude_and_store_sources_combine(sample: Sample, tmp_path: Path) -> None:
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
    document = run_json(args, sample.env)
    assert isinstance(document, dict)
    assert {s["id"] for s in document["sessions"]} == {*EXAMPLE_SESSION_IDS, "claude-2"}


# -- help and docs (in process: parsing only) -------------------------------------------


@pytest.mark.parametrize("command", [c.name for c in COMMANDS])
def test_every_subcommand_has_help_text_and_is_documented(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    assert f"usage: sessionquery {command}" in text
    assert "--root" in text and "--index" in text
    docs = DOCS.read_text(encoding="utf-8")
    assert f"### `sessionquery {command}" in docs


def test_top_level_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for command in COMMANDS:
        assert command.name in text and command.help in text


# -- rendering helpers --------------------------------------------------------------------


def _shown(line: str, enabled: bool) -> str:
    return render.terminal_line(line, render.Style(enabled))


def test_highlight_marks_the_phrase_only_when_styling_is_enabled() -> None:
    snippet = "…summed as floats; Float Round() is still used…"
    assert render.Style(False).highlight(snippet, "float round") == snippet
    marked = _shown(render.Style(True).highlight(snippet, "float round"), True)
    assert "\x1b[1;33mFloat Round\x1b[0m" in marked
    assert marked.count("\x1b[1;33m") == 1


def test_highlight_falls_back_to_single_words_when_the_phrase_is_cut() -> None:
    marked = _shown(render.Style(True).highlight("…round() here", "float round"), True)
    assert "\x1b[1;33mround\x1b[0m" in marked


def test_table_pads_every_column_but_the_last() -> None:
    lines = render.table(
        [["a", "bb", "c"], ["ddd", "e", "ffff"]], ["X", "Y", "Z"], render.Style(False)
    )
    assert lines == ["X    Y   Z", "a    bb  c", "ddd  e   ffff"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_a_bar_on_a_terminal() -> None:
    terminal = _Terminal()
    progress = Progress(terminal, "Indexing")
    progress(0, 4)
    progress(2, 4)
    progress(4, 4)
    progress.finish()
    assert "\rIndexing [###############...............] 2/4 sessions" in terminal.getvalue()
    assert terminal.getvalue().endswith("] 4/4 sessions\n")


def test_progress_off_a_terminal_prints_a_plain_line_at_once_then_every_few_seconds() -> None:
    pipe = io.StringIO()
    now = [100.0]
    progress = Progress(pipe, "Indexing", interval=3.0, clock=lambda: now[0])
    progress(0, 1000)  # drawn at once
    for done in range(1, 999):
        now[0] += 0.01  # ten seconds in all
        progress(done, 1000)
    progress(1000, 1000)  # the last one always
    progress.finish()
    lines = pipe.getvalue().splitlines()
    assert lines[0] == "Indexing: 0 of 1000 sessions (0%)"
    assert lines[-1] == "Indexing: 1000 of 1000 sessions (100%)"
    assert 4 <= len(lines) <= 6  # every three seconds, not once per session
    assert "\r" not in pipe.getvalue()


def test_index_on_a_fresh_index_indexes_every_session(
    sample: Sample, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = tmp_path / "fresh.sqlite3"
    assert main(["index", "--root", str(sample.root), "--index", str(index), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["persisted_indexed"] == len(EXAMPLE_SESSION_IDS)
    assert main(["index", "--root", str(sample.root), "--index", str(index)]) == 0
    assert "up to date" in capsys.readouterr().out


def test_a_time_past_the_year_9999_renders_as_its_raw_number_instead_of_failing() -> None:
    assert render.time_text(253_402_300_799_999) == "9999-12-31 23:59:59"
    assert render.time_text(2**53 - 1) == f"epoch-ms {2**53 - 1}"


# -- sources found by default, the config file, `sources` ---------------------------------


@pytest.fixture
def agent_home(tmp_path: Path) -> dict[str, str]:
    env = clean_env(tmp_path)
    make_agent_home(Path(env["HOME"]))
    return env


def test_list_search_and_read_work_with_no_options_on_a_claude_and_codex_home(
    agent_home: dict[str, str],
) -> None:
    listed = run_json(["list"], agent_home)
    assert isinstance(listed, dict)
    assert {s["id"] for s in listed["sessions"]} == {CLAUDE_ID, CODEX_ID}
    found = run_json(["search", "websocket"], agent_home)
    assert isinstance(found, dict)
    assert [item["session"]["id"] for item in found["items"]] == [CODEX_ID]
    read = run(["read", CLAUDE_ID, "1"], agent_home)
    assert read.returncode == 0, read.stderr
    assert "flaky test in checkout" in read.stdout


def test_claude_config_dir_and_codex_home_move_the_default_sources(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    make_agent_home(elsewhere)
    env["CLAUDE_CONFIG_DIR"] = str(elsewhere / ".claude")
    env["CODEX_HOME"] = str(elsewhere / ".codex")
    document = run_json(["sources"], env)
    assert isinstance(document, dict)
    used = {item["kind"]: item for item in document["sources"] if item["exists"]}
    assert used["claude"]["path"] == str(elsewhere / ".claude" / "projects")
    assert used["codex"]["path"] == str(elsewhere / ".codex" / "sessions")
    assert used["claude"]["sessions"] == used["codex"]["sessions"] == 1


def test_sources_shows_where_each_source_came_from(
    agent_home: dict[str, str], tmp_path: Path
) -> None:
    document = run_json(["sources"], agent_home)
    assert isinstance(document, dict)
    kinds = {item["kind"]: item for item in document["sources"]}
    assert kinds["claude"]["from"] == kinds["codex"]["from"] == "default"
    assert kinds["root"]["exists"] is False
    assert document["index"]["from"] == "default"
    text = run(["sources"], agent_home).stdout
    assert re.search(r"^Claude Code +default +1 ", text, re.MULTILINE) and "(not found)" in text
    assert {i["kind"] for i in document["sources"]} >= {"gemini", "opencode", "vscode"}

    config = tmp_path / "sq.toml"
    codex = Path(agent_home["HOME"]) / ".codex" / "sessions"
    config.write_text(f'codex = "{codex}"\nindex = "idx.sqlite3"\n', encoding="utf-8")
    env = dict(agent_home, SESSIONQUERY_CONFIG=str(config))
    document = run_json(["sources"], env)
    assert isinstance(document, dict)
    assert [(i["kind"], i["from"]) for i in document["sources"]] == [("codex", "config")]
    assert document["index"] == {"path": str(tmp_path / "idx.sqlite3"), "from": "config"}
    listed = run_json(["list"], env)
    assert isinstance(listed, dict)
    assert [s["id"] for s in listed["sessions"]] == [CODEX_ID]

    claude = Path(agent_home["HOME"]) / ".claude" / "projects"
    document = run_json(["sources", "--claude", str(claude)], env)
    assert isinstance(document, dict)
    assert [(i["kind"], i["from"]) for i in document["sources"]] == [("claude", "option")]
    assert document["index"]["from"] == "config"


def test_a_broken_config_file_is_one_invalid_config_line(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    config = tmp_path / "broken.toml"
    config.write_text("claude = [1, 2]\n", encoding="utf-8")
    result = run(["list"], dict(env, SESSIONQUERY_CONFIG=str(config)))
    assert result.returncode == 1
    line = _one_error_line(result, "SESSION_QUERY_INVALID_CONFIG")
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
    agent_home: dict[str, str], option: str, typo: str, advice: str
) -> None:
    path = Path(agent_home["HOME"]) / typo
    result = run(["list", option, str(path)], agent_home)
    assert result.returncode == 1
    line = _one_error_line(result, "SESSION_QUERY_INVALID_CONFIG")
    assert advice in line and str(path) in line
    assert "quickstart" not in line or option == "--root"


# -- short ids --------------------------------------------------------------------------------


def test_every_id_argument_accepts_a_unique_prefix(sample: Sample) -> None:
    for args in (
        ["show", "dashboard-w"],
        ["events", "dashboard-w"],
        ["trace", "dashboard-w"],
        ["read", "dashboard-w", "1"],
        ["trace-event", "dashboard-w", "1"],
        ["search-events", "dashboard-w", "websocket"],
        ["search", "websocket", "--session", "dashboard-w"],
    ):
        result = run([*args, *sample.flags], sample.env)
        assert result.returncode == 0, (args, result.stderr)
        expected = "session/title" if args[0] == "events" else "dashboard-websocket"
        assert expected in result.stdout, args


def test_an_ambiguous_prefix_is_a_usage_error_listing_the_candidates(sample: Sample) -> None:
    result = run(["show", "billing-rounding-", *sample.flags], sample.env)
    assert result.returncode == 2
    line = _one_error_line(result, "SESSION_QUERY_USAGE")
    for candidate in ("billing-rounding-bankers", "billing-rounding-scan"):
        assert candidate in line


def test_an_exact_id_wins_over_longer_ids_it_is_a_prefix_of(sample: Sample) -> None:
    document = run_json(["show", "billing-rounding", *sample.flags], sample.env)
    assert isinstance(document, dict)
    assert document["session"]["id"] == "billing-rounding"


def test_list_shows_short_ids_and_titles_by_default(sample: Sample) -> None:
    lines = run(["list", *sample.flags], sample.env).stdout.splitlines()
    assert lines[0].split() == ["ID", "CREATED", "(UTC)", "WORKSPACE", "TITLE"]
    rows = {line.split()[0]: line for line in lines[1:] if line.strip() and "/home" in line}
    assert set(rows) == {
        "dashboard-websocket",
        "dashboard-dark",
        "billing-rounding/2",
        "billing-rounding/1",
        "billing-rounding",
    }
    assert "Debug websocket reconnect loop" in rows["dashboard-websocket"]
    assert "[subagent]" in rows["billing-rounding/2"]


# -- safe, narrow output ------------------------------------------------------------------


def test_escape_sequences_in_session_text_never_reach_stdout_raw(
    agent_home: dict[str, str],
) -> None:
    for args in (
        ["show", "c0ffee", "--conversation"],
        ["read", "c0ffee", "2"],
        ["search", "looking"],
        ["search-events", "c0ffee", "looking"],
        ["export", "c0ffee", "--format", "markdown"],
        ["list"],
        ["show", "c0ffee", "--conversation", "--json"],
    ):
        result = run(args, agent_home)
        assert result.returncode == 0, (args, result.stderr)
        assert "\x1b" not in result.stdout and "\x07" not in result.stdout, args
    shown = run(["show", "c0ffee", "--conversation"], agent_home).stdout
    assert "\\x1b]0;pwned\\x07" in shown  # visible, not acted on


def test_safe_escapes_controls_and_bidi_overrides_but_keeps_text() -> None:
    assert term.safe("ok\x1b[31mred\x9b\u202e\ud800") == "ok\\x1b[31mred\\x9b\\u202e\\ud800"
    assert term.safe("tab\there") == "tab here"
    assert term.safe("naïve 日本") == "naïve 日本"


@settings(max_examples=50)
@given(st.text(), st.integers(min_value=2, max_value=120))
def test_cut_never_exceeds_the_width_and_marks_a_cut(text: str, width: int) -> None:
    clean = term.safe(text)
    for cut in (term.cut(clean, width), term.cut_left(clean, width)):
        assert term.display_width(cut) <= width
        assert cut == clean or "…" in cut


def test_list_and_search_lines_fit_100_columns(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    home = Path(env["HOME"])
    make_agent_home(home)
    project = home / ".claude" / "projects" / "-long"
    workspace = "/home/dev/" + "very-long-directory-name/" * 8
    title_words = "an extremely long first prompt about the flaky checkout test " * 6
    line = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": "long-" + "x" * 120,
        "timestamp": "2025-03-09T10:00:00.000Z",
        "cwd": workspace,
        "message": {"role": "user", "content": title_words + "日本語のテキスト" * 20},
    }
    project.mkdir(parents=True)
    (project / "long.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    for args in (["list"], ["search", "flaky checkout"], ["search-events", "long-", "flaky"]):
        result = run(args, env)
        assert result.returncode == 0, (args, result.stderr)
        widths = [term.display_width(row) for row in result.stdout.splitlines()]
        assert max(widths) <= 100, (args, result.stdout)
        assert "…" in result.stdout


def test_json_output_escapes_c1_controls(agent_home: dict[str, str]) -> None:
    assert render.dumps({"t": "a\x9bb\u202e"}) == '{\n  "t": "a\\u009bb\\u202e"\n}'


# -- conversation and export ----------------------------------------------------------------


def test_show_conversation_marks_turns_tool_calls_results_compactions_and_subagents(
    sample: Sample,
) -> None:
    result = run(["show", "billing-rounding", "--conversation", *sample.flags], sample.env)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "── user · seq 1" in out and "── assistant · seq 3" in out
    assert "  → bash {" in out  # one line per tool call
    assert "  ← " in out
    assert "── compaction · seq " in out
    assert "subagent: Find float rounding in billing/ · session billing-rounding-scan" in out
    fork = run(["show", "billing-rounding-b", "--conversation", *sample.flags], sample.env)
    assert "inherited from billing-rounding" in fork.stdout
    assert "this session starts here" in fork.stdout


def test_long_tool_results_are_cut_with_a_visible_marker(sample: Sample, tmp_path: Path) -> None:
    from sessionquery.cli import _conversation as conversation

    lines = conversation._cut_result("x\n" * 50, "abc", 7)
    assert len(lines) == conversation.RESULT_LINES + 1
    assert lines[-1].startswith("[… ") and "sessionquery read abc 7" in lines[-1]


@pytest.mark.parametrize("fmt", ["markdown", "html", "json"])
def test_export_writes_the_complete_session(sample: Sample, tmp_path: Path, fmt: str) -> None:
    target = tmp_path / f"out.{fmt}"
    args = ["export", "billing-rounding-s", "--format", fmt, "-o", str(target)]
    result = run([*args, *sample.flags], sample.env)
    assert result.returncode == 0, result.stderr
    text = target.read_text(encoding="utf-8")
    events = run_json(["events", "billing-rounding-scan", *sample.flags], sample.env)
    assert isinstance(events, dict)
    if fmt == "json":
        document = json.loads(text)
        assert document["session"]["id"] == "billing-rounding-scan"
        assert [e["seq"] for e in document["events"]] == [e["seq"] for e in events["events"]]
    else:
        assert "Find float rounding in billing/" in text
        assert "billing/refunds.py" in text  # tool output in full


class _Page(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.sources: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.sources += [value for name, value in attrs if name in ("src", "href")]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_html_export_is_self_contained_and_escapes_session_data(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    home = Path(env["HOME"])
    hostile = '<script>alert("x")</script> & <img src=x onerror=alert(1)>'
    line = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": "hostile",
        "timestamp": "2025-03-09T10:00:00.000Z",
        "cwd": "/home/dev/<b>app</b>",
        "message": {"role": "user", "content": hostile},
    }
    project = home / ".claude" / "projects" / "-app"
    project.mkdir(parents=True)
    (project / "hostile.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    result = run(["export", "hostile", "--format", "html"], env)
    assert result.returncode == 0, result.stderr
    page = _Page()
    page.feed(result.stdout)
    assert page.tags.count("script") == 1  # the viewer's own, allowed by its hash alone
    assert "img" not in page.tags and "b" not in page.tags
    assert hostile in "".join(page.text)  # shown as text, exactly
    assert "link" not in page.tags  # self-contained: only in-page anchors
    assert all(source and source.startswith("#seq-") for source in page.sources)
    policy = html.unescape(result.stdout)
    assert "script-src 'sha256-" in policy and "unsafe-inline" not in policy


# -- never a traceback --------------------------------------------------------------------


def test_bad_transcripts_give_results_and_one_problem_line_never_a_traceback(
    agent_home: dict[str, str],
) -> None:
    projects = Path(agent_home["HOME"]) / ".claude" / "projects"
    (projects / "-deep").mkdir(parents=True)
    (projects / "-deep" / "deep.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n")
    (projects / "-bad\x1bname").mkdir()
    (projects / "-bad\x1bname" / "x\x07.jsonl").write_text('{"type": "user"}\n{oops\n')
    for number, args in enumerate(
        (["list", "--json"], ["search", "flaky", "--json"], ["read", "c0ffee", "1"])
    ):
        result = run(args, agent_home)
        assert result.returncode == 0, (args, result.stderr)
        assert "Traceback" not in result.stderr
        if number == 0:  # the warning is shown once, until the problems change
            (line,) = result.stderr.splitlines()
            assert line.startswith("warning: ") and "sessionquery sources" in line, line
        else:
            assert result.stderr == ""
    listed = run_json(["list"], agent_home)
    assert isinstance(listed, dict)
    assert {CLAUDE_ID, CODEX_ID} <= {s["id"] for s in listed["sessions"]}
    shown = run(["sources"], agent_home)
    assert shown.returncode == 0 and "deep.jsonl" in shown.stdout
    assert "\x1b" not in shown.stdout  # a hostile file name is shown escaped


def test_a_failure_while_counting_problems_never_replaces_the_result(
    capsys: pytest.CaptureFixture[str],
) -> None:
    class Broken:
        def problems(self) -> list[object]:
            raise RecursionError("maximum recursion depth exceeded")

    invocation = Invocation(build_parser(COMMANDS).parse_args(["list"]), Config.from_env())
    invocation.app._persistence = Broken()  # type: ignore[assignment]
    invocation.report_problems(sys.stderr)
    assert capsys.readouterr().err == ""


# -- the title cache ----------------------------------------------------------------------


def _example_query(root: Path) -> tuple[SessionQuery, JsonlPersistence]:
    build_examples(root)
    persistence = JsonlPersistence(root)
    return SessionQuery(persistence=persistence), persistence


def test_remembered_titles_are_used_only_for_the_revision_they_were_read_from(
    tmp_path: Path,
) -> None:
    query, persistence = _example_query(tmp_path / "store")
    cache = tmp_path / "titles.sqlite3"
    ids = [entry.header.id for entry in persistence.list()]
    with query:
        first = titlecache.read_titles(query, persistence.list(), ids, cache)
        assert first["dashboard-websocket"] == "Debug websocket reconnect loop"
        with sqlite3.connect(cache) as conn:
            conn.execute("UPDATE titles SET title = 'remembered' WHERE id = 'dashboard-websocket'")
        conn.close()
        again = titlecache.read_titles(query, persistence.list(), ids, cache, budget_s=0)
        assert again["dashboard-websocket"] == "remembered"  # read from the file
        moved = [
            PersistedSession(e.header, e.revision + "-changed")
            if e.header.id == "dashboard-websocket"
            else e
            for e in persistence.list()
        ]
        fresh = titlecache.read_titles(query, moved, ids, cache)
        assert fresh["dashboard-websocket"] == "Debug websocket reconnect loop"


def test_titles_beyond_the_first_are_read_only_within_the_budget(tmp_path: Path) -> None:
    query, persistence = _example_query(tmp_path / "store")
    ids = [entry.header.id for entry in persistence.list()]
    ticks = iter(range(0, 1000, 10))
    with query:
        found = titlecache.read_titles(
            query, persistence.list(), ids, None, budget_s=5, always=2, clock=lambda: next(ticks)
        )
    read = [i for i in ids if found[i] is not titlecache.NOT_READ]
    assert len(ids) == 5
    assert read == ids[:4]  # the first batch (of four) always, then the budget was spent
    assert found[ids[4]] is titlecache.NOT_READ


def test_a_foreign_database_at_the_title_cache_path_is_ignored_and_left_untouched(
    tmp_path: Path,
) -> None:
    query, persistence = _example_query(tmp_path / "store")
    foreign = tmp_path / "titles.sqlite3"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    conn.close()
    before = foreign.read_bytes()
    with query:
        found = titlecache.read_titles(query, persistence.list(), ["billing-rounding"], foreign)
    assert found["billing-rounding"] == "Fix flaky invoice rounding test"
    assert foreign.read_bytes() == before


def test_index_off_a_terminal_prints_plain_progress_lines_then_its_summary(
    agent_home: dict[str, str],
) -> None:
    result = run(["index"], agent_home)
    assert result.returncode == 0, result.stderr
    progress = result.stderr.splitlines()
    assert progress[0] == "Indexing: reading the sources…"  # at once, before any count
    assert all(line.startswith("Indexing: ") for line in progress), progress
    assert progress[-1] == "Indexing: 2 of 2 sessions (100%)"
    assert "\r" not in result.stderr
    assert "2 session(s) indexed" in result.stdout


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


def test_a_first_search_on_a_terminal_draws_the_indexing_bar(agent_home: dict[str, str]) -> None:
    import pty

    leader, follower = pty.openpty()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "sessionquery.cli", "search", "flaky"],
            env=agent_home,
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
    loaded = _imported_by(["--help"], _env(tmp_path))
    for name in ("sessionquery.cli._commands", "sessionquery.query", "sessionquery.model"):
        assert name not in loaded
    assert not {name for name in loaded if name.startswith(("apsw", "mcp", "psycopg"))}


def test_list_imports_no_search_index_no_tools_and_no_mcp(sample: Sample) -> None:
    loaded = _imported_by(["list", "--limit", "5", *sample.flags], sample.env)
    assert "sessionquery.cli._commands" in loaded  # it did run
    unwanted = ("apsw", "mcp", "psycopg", "sessionquery.search", "sessionquery.tools", "anyio")
    assert not {name for name in loaded if name.startswith(unwanted)}


def test_the_parsers_surface_classes_are_the_models() -> None:
    from sessionquery.cli._parser import SURFACES
    from sessionquery.model import SURFACE_CLASSES

    assert tuple(SURFACES) == tuple(SURFACE_CLASSES)
