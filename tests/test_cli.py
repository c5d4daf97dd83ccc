"""Tests for the ``sessionquery`` command line, run as a real subprocess.

Every subprocess gets its own HOME and SESSIONQUERY_HOME under ``tmp_path``, so no test reads
or writes the developer's data. One sample store (built by ``quickstart``) is shared by the
read-only tests of this module.
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from sessionquery.cli import COMMANDS, main
from sessionquery.cli import _render as render
from sessionquery.cli._parser import build_parser
from sessionquery.cli._services import ProgressBar
from sessionquery.examples import BILLING_WORKSPACE, DASHBOARD_WORKSPACE, EXAMPLE_SESSION_IDS

DOCS = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
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
    starts = {line.index("persisted") for line in listing if "persisted" in line}
    assert len(starts) == 1  # the availability column is aligned


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
        (["read", "billing-rounding", "1", "--after", "51"], "SESSION_QUERY_INVALID_WINDOW"),
        (["search", "   "], "SESSION_QUERY_INVALID_QUERY"),
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
    assert "importer problem" in result.stderr
    assert "claude-1.jsonl:2" in result.stderr


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


def test_highlight_marks_the_phrase_only_when_styling_is_enabled() -> None:
    snippet = "…summed as floats; Float Round() is still used…"
    assert render.Style(False).highlight(snippet, "float round") == snippet
    marked = render.Style(True).highlight(snippet, "float round")
    assert "\x1b[1;33mFloat Round\x1b[0m" in marked
    assert marked.count("\x1b[1;33m") == 1


def test_highlight_falls_back_to_single_words_when_the_phrase_is_cut() -> None:
    marked = render.Style(True).highlight("…round() here", "float round")
    assert "\x1b[1;33mround\x1b[0m" in marked


def test_table_pads_every_column_but_the_last() -> None:
    lines = render.table(
        [["a", "bb", "c"], ["ddd", "e", "ffff"]], ["X", "Y", "Z"], render.Style(False)
    )
    assert lines == ["X    Y   Z", "a    bb  c", "ddd  e   ffff"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_draws_on_a_terminal_and_stays_silent_otherwise() -> None:
    terminal, pipe = _Terminal(), io.StringIO()
    for stream in (terminal, pipe):
        bar = ProgressBar(stream, "Indexing", width=10)
        bar(0, 4)
        bar(2, 4)
        bar(4, 4)
        bar.finish()
    assert "\rIndexing [#####.....] 2/4 sessions" in terminal.getvalue()
    assert terminal.getvalue().endswith("[##########] 4/4 sessions\n")
    assert pipe.getvalue() == ""


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
