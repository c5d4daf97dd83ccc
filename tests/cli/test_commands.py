"""The subcommands, run in process (``cli`` fixture): what each prints, short ids and
prefixes, options, messages, hints.

The few checks through a real ``sessionquery`` process are in ``test_main.py``.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tomllib
from pathlib import Path

import pytest

from cli_support import CLAUDE_ID, CODEX_ID, Cli, Sample, make_agent_home, make_subagents
from sessionquery.cli import _titlecache as titlecache
from sessionquery.cli._launcher import launcher
from sessionquery.examples import DASHBOARD_WORKSPACE, EXAMPLE_SESSION_IDS, build_examples
from sessionquery.live import SessionStore
from sessionquery.model.messages import user_message
from sessionquery.persistence import JsonlPersistence


def _claude_family(cli: Cli, children: int = 3) -> list[str]:
    make_agent_home(cli.home)
    agents = make_subagents(cli.home, children)
    return [f"{CLAUDE_ID}/agent-{agent}" for agent in agents]


def test_list_shows_a_short_id_for_every_root_and_child_and_json_the_full_one(cli: Cli) -> None:
    children = _claude_family(cli)
    ran = cli("list")
    assert ran.status == 0, ran.err
    shown = [line.split()[0] for line in ran.out.splitlines()[1:] if line.strip()][:-1]
    assert sorted(shown) == sorted(
        ["c0ffee00", "c0ffee00/1", "c0ffee00/2", "c0ffee00/3", CODEX_ID[:8]]
    )
    document = cli("list", "--json").json()
    by_id = {item["id"]: item["short_id"] for item in document["sessions"]}
    assert by_id[children[0]] == "c0ffee00/1"
    assert by_id[CLAUDE_ID] == "c0ffee00"


def test_every_command_accepts_the_short_ids_list_shows(cli: Cli) -> None:
    children = _claude_family(cli)
    for args in (
        ["show", "c0ffee00/2", "--json"],
        ["events", "c0ffee00/2", "--json"],
        ["read", "c0ffee00/2", "0", "--json"],
        ["trace", "c0ffee00/2", "--json"],
        ["trace-event", "c0ffee00/2", "0", "--json"],
        ["search-events", "c0ffee00/2", "subagent", "--json"],
    ):
        ran = cli(*args)
        assert ran.status == 0, (args, ran.err)
        assert children[1] in ran.out, args
    found = cli("search", "subagent", "--session", "c0ffee00/2", "--json").json()
    assert [item["session"]["id"] for item in found["items"]] == [children[1]]
    assert found["items"][0]["short_id"] == "c0ffee00/2"
    kids = cli("search", "subagent", "--parent", "c0ffee00", "--json").json()
    assert {item["session"]["id"] for item in kids["items"]} == set(children)


def test_the_start_of_a_root_with_subagents_names_the_root(cli: Cli) -> None:
    _claude_family(cli, children=5)
    document = cli("show", "c0ff", "--json").json()
    assert document["session"]["id"] == CLAUDE_ID


def test_a_start_of_two_roots_is_a_usage_error_listing_both(cli: Cli) -> None:
    build_examples(cli.home / "store")
    ran = cli("show", "dashboard", "--root", str(cli.home / "store"))
    assert ran.status == 2
    assert ran.err == (
        "SESSION_QUERY_USAGE: 'dashboard' is the start of 2 session ids: "
        "dashboard-dark-mode, dashboard-websocket\n"
    )


# -- the first hour: quickstart's sample, the printed commands, the MCP registration --------------


def test_quickstarts_sample_is_a_default_source_until_it_is_deleted(cli: Cli) -> None:
    assert cli("quickstart").status == 0
    listed = cli("list", "--json").json()
    assert {item["id"] for item in listed["sessions"]} == set(EXAMPLE_SESSION_IDS)
    sources = cli("sources", "--json").json()["sources"]
    assert [(s["label"], s["name"], s["sessions"]) for s in sources if s["exists"]] == [
        ("sample", "sample", 5)
    ]
    shutil.rmtree(cli.data / "quickstart" / "sessions")
    ran = cli("list")
    assert ran.status == 1 and ran.err.startswith("SESSION_QUERY_INVALID_CONFIG: no session")


def test_quickstarts_closing_commands_use_the_absolute_path_when_not_on_the_path(
    cli: Cli, tmp_path: Path
) -> None:
    cli.setenv("PATH", str(tmp_path))  # no sessionquery there
    ran = cli("quickstart")
    assert ran.status == 0, ran.err
    tail = ran.out[ran.out.index("Try it yourself:") :].splitlines()
    command = shlex.join(launcher())
    assert tail[1:4] == [
        f"  {command} list",
        f"  {command} search websocket",
        f"  {command} trace-event billing-rounding 20",
    ]
    assert any("not on your PATH" in line for line in tail)


def test_quickstarts_closing_commands_are_bare_when_sessionquery_is_on_the_path(
    cli: Cli, tmp_path: Path
) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "sessionquery").symlink_to(launcher()[0])
    cli.setenv("PATH", str(tmp_path / "bin"))
    ran = cli("quickstart", "--root", str(tmp_path / "sample"))
    tail = ran.out[ran.out.index("Try it yourself:") :].splitlines()
    assert tail[1].startswith("  sessionquery list --root ")
    assert "PATH" not in ran.out[ran.out.index("Try it yourself:") :]


def _registration(client: str, text: str) -> tuple[str, list[str]]:
    if client == "claude":
        words = shlex.split(text)
        assert words[:6] == ["claude", "mcp", "add", "--scope", "user", "sessionquery"]
        assert words[6] == "--"
        return words[7], words[8:]
    if client == "codex":
        table = tomllib.loads(text)["mcp_servers"]["sessionquery"]
        return table["command"], table["args"]
    server = json.loads(text)["mcpServers"]["sessionquery"]
    return server["command"], server["args"]


@pytest.mark.parametrize("client", ["claude", "codex", "cursor"])
def test_print_config_registers_the_absolute_command_with_the_given_options(
    cli: Cli, tmp_path: Path, client: str
) -> None:
    ran = cli("mcp", "--print-config", client, "--root", str(tmp_path), "--cwd", ".")
    assert ran.status == 0, ran.err
    command, args = _registration(client, ran.out)
    assert [command, *args] == [
        *launcher(),
        "mcp",
        "--root",
        str(tmp_path),
        "--cwd",
        os.getcwd(),
    ]
    assert Path(command).is_absolute() and Path(command).exists()
    assert ran.err.endswith(":\n") and "\n" not in ran.err[:-1]


# -- workspaces ---------------------------------------------------------------------------------


def _store_in(root: Path, workspace: Path) -> None:
    store = SessionStore(JsonlPersistence(root))
    session = store.create("here", cwd=str(workspace))
    session.append(
        "user/message", user_message("the flaky test again", id="m0"), surface_op="append"
    )
    store.close("here")


@pytest.mark.parametrize("spelling", [".", "./", "../proj", "{abs}/", "{abs}/sub/.."])
def test_cwd_is_made_absolute_before_it_is_compared(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    workspace = tmp_path / "proj"
    (workspace / "sub").mkdir(parents=True)
    _store_in(tmp_path / "store", workspace)
    monkeypatch.chdir(workspace)
    cwd = spelling.format(abs=workspace)
    flags = ["--root", str(tmp_path / "store"), "--index", str(tmp_path / "i.sqlite3")]
    listed = cli("list", "--cwd", cwd, "--json", *flags).json()
    assert [item["id"] for item in listed["sessions"]] == ["here"]
    found = cli("search", "flaky", "--cwd", cwd, "--json", *flags).json()
    assert [item["session"]["id"] for item in found["items"]] == ["here"]


# -- small things that must agree (issue 24.6) -----------------------------------------------------


def _sample(cli: Cli) -> list[str]:
    build_examples(cli.home / "store")
    return ["--root", str(cli.home / "store"), "--index", str(cli.home / "index.sqlite3")]


def test_export_accepts_md_for_markdown(cli: Cli) -> None:
    flags = _sample(cli)
    assert (
        cli("export", "billing-rounding", "--format", "md", *flags).out
        == cli("export", "billing-rounding", *flags).out
    )


@pytest.mark.parametrize(
    "args",
    [
        ["read", "billing-rounding", "1", "--before", "100"],
        ["read", "billing-rounding", "1", "--after", "51"],
        ["search", " "],
        ["search-events", "billing-rounding", "\t"],
        ["list", "--limit", "0"],
        ["list", "--limit", "abc"],
        ["list", "--limit", "-3"],
    ],
)
def test_a_bad_value_is_a_usage_error_with_exit_status_2(cli: Cli, args: list[str]) -> None:
    ran = cli(*args, *_sample(cli))
    assert ran.status == 2, ran.err
    assert ran.err.startswith("SESSION_QUERY_USAGE: ") and ran.err.count("\n") == 1


def test_limit_0_and_limit_abc_are_refused_with_the_same_words(cli: Cli) -> None:
    zero, word = cli("list", "--limit", "0").err, cli("list", "--limit", "abc").err
    assert zero.replace("'0'", "X") == word.replace("'abc'", "X")


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [
        (["lsit"], "did you mean 'list'?"),
        (["list", "--jsno"], "did you mean '--json'?"),
        (["export", "x", "--format", "mdd"], "did you mean 'md'?"),
    ],
)
def test_a_mistyped_command_option_or_choice_gets_a_did_you_mean(
    cli: Cli, args: list[str], suggestion: str
) -> None:
    ran = cli(*args)
    assert ran.status == 2 and suggestion in ran.err


def test_an_unknown_event_type_is_warned_about_with_a_did_you_mean(cli: Cli) -> None:
    flags = _sample(cli)
    ran = cli("search", "round", "--type", "user/mesage", *flags)
    assert ran.status == 0
    assert "warning: --type 'user/mesage' is not an event type" in ran.err
    assert "did you mean 'user/message'?" in ran.err
    assert cli("search", "round", "--type", "user/mesage", "--quiet", *flags).err == ""


def _damaged(cli: Cli) -> list[str]:
    flags = _sample(cli)
    (cli.home / "store" / "damaged.jsonl").write_bytes(b"not a header\n")
    return flags


def test_the_problems_warning_is_shown_again_only_when_the_problems_change(cli: Cli) -> None:
    flags = _damaged(cli)
    first, second = cli("list", *flags), cli("list", *flags)
    assert "warning: 1 problem reading the session sources" in first.err
    assert second.err == ""
    (cli.home / "store" / "damaged2.jsonl").write_bytes(b"also not a header\n")
    assert "warning: 2 problems" in cli("list", *flags).err


@pytest.mark.parametrize("where", ["before", "after"])
def test_quiet_drops_the_problems_warning(cli: Cli, where: str) -> None:
    flags = _damaged(cli)
    args = ["-q", "list", *flags] if where == "before" else ["list", "--quiet", *flags]
    ran = cli(*args)
    assert ran.status == 0 and ran.err == ""


def test_show_prints_what_a_person_looks_for_and_not_internal_fields(cli: Cli) -> None:
    make_agent_home(cli.home)
    ran = cli("show", "c0ffee00")
    labels = [line.split("  ")[0] for line in ran.out.splitlines()]
    assert labels == [
        "Session",
        "Short id",
        "Title",
        "Created",
        "Workspace",
        "Events",
        "Source",
        "Resume",
    ]
    assert f"-home-dev-app/{CLAUDE_ID}.jsonl  (Claude Code)" in ran.out
    for internal in ("Seeded", "Depth", "Agent preset", "Format"):
        assert internal not in ran.out


def test_show_and_its_json_carry_a_resume_command_for_the_agent(cli: Cli) -> None:
    make_agent_home(cli.home)
    claude = cli("show", "c0ffee00", "--json").json()
    assert claude["resume"] == f"cd /home/dev/app && claude --resume {CLAUDE_ID}"
    assert claude["event_count"] > 0 and claude["short_id"] == "c0ffee00"
    codex = cli("show", CODEX_ID[:8], "--json").json()
    assert codex["resume"] == f"cd /home/dev/api && codex resume {CODEX_ID}"
    assert codex["source"]["kind"] == "codex" and codex["source"]["file"].endswith(".jsonl")
    assert (
        f"Resume     cd /home/dev/app && claude --resume {CLAUDE_ID}" in cli("show", "c0ffee00").out
    )


def test_a_subagent_and_a_store_session_have_no_resume_command(cli: Cli) -> None:
    children = _claude_family(cli, children=1)
    assert cli("show", children[0], "--json").json()["resume"] is None
    flags = _sample(cli)
    assert cli("show", "billing-rounding", "--json", *flags).json()["resume"] is None


def test_read_cuts_each_neighbours_text_and_says_how_to_read_it(cli: Cli) -> None:
    flags = _sample(cli)
    out = cli("read", "billing-rounding", "20", "--after", "1", *flags).out
    after = out[out.index("After:") :].splitlines()
    assert len(after) <= 2 + 3 + 1
    assert after[-1].strip() == "[… 24 more characters; sessionquery read billing-rounding 21]"


def test_events_shows_the_start_of_each_events_text(cli: Cli) -> None:
    flags = _sample(cli)
    out = cli("events", "dashboard-websocket", *flags).out.splitlines()
    assert out[0].split() == ["SEQ", "TIME", "(UTC)", "SURFACE", "TYPE", "TEXT"]
    assert "The live revenue chart reconnects" in out[2]
    assert max(len(line) for line in out) <= 100
    document = cli("events", "dashboard-websocket", "--json", *flags).json()
    assert document["events"][1]["preview"].startswith("The live revenue chart reconnects")


# -- titles --------------------------------------------------------------------------------------


def _many_claude_sessions(home: Path, count: int) -> None:
    project = home / ".claude" / "projects" / "-home-dev-many"
    project.mkdir(parents=True)
    for number in range(count):
        line = {
            "type": "user",
            "sessionId": f"many-{number:03d}",
            "cwd": "/home/dev/many",
            "uuid": f"u{number}",
            "parentUuid": None,
            "timestamp": f"2025-03-07T10:{number // 60:02d}:{number % 60:02d}.000Z",
            "message": {"role": "user", "content": f"task number {number} about the parser"},
        }
        (project / f"many-{number:03d}.jsonl").write_text(json.dumps(line) + "\n")


def test_index_remembers_every_sessions_title_so_list_reads_no_transcript(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    _many_claude_sessions(cli.home, 30)
    monkeypatch.setattr(titlecache, "BUDGET_S", 0.0)  # only the first ten would be read
    assert cli("index").status == 0
    ran = cli("list", "--all")
    assert ran.status == 0 and "not read yet" not in ran.out, ran.out
    assert "task number 29 about the parser" in ran.out and "task number 0 " in ran.out


def test_a_search_remembers_the_titles_of_the_sessions_it_indexed(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    _many_claude_sessions(cli.home, 30)
    monkeypatch.setattr(titlecache, "BUDGET_S", 0.0)
    assert cli("search", "parser").status == 0
    assert "not read yet" not in cli("list", "--all").out


def test_a_first_list_without_an_index_marks_the_titles_it_did_not_read(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    _many_claude_sessions(cli.home, 30)
    monkeypatch.setattr(titlecache, "BUDGET_S", 0.0)
    out = cli("list", "--all").out
    assert out.count("[title not read yet]") == 30 - 12  # three batches of four read first
    assert "18 title(s) not read yet" in out and "'sessionquery index' reads them all" in out
    assert cli("list", "--all", "--json").json()["sessions"][0]["title"]  # JSON reads all


# -- search modes ----------------------------------------------------------------------------------


def _claude_transcript(home: Path, session: str, lines: list[tuple[str, object]]) -> None:
    project = home / ".claude" / "projects" / "-home-dev-work"
    project.mkdir(parents=True, exist_ok=True)
    rows = []
    for number, (role, content) in enumerate(lines):
        rows.append(
            {
                "type": role,
                "sessionId": session,
                "cwd": "/home/dev/work",
                "uuid": f"{session}-{number}",
                "parentUuid": None if number == 0 else f"{session}-{number - 1}",
                "timestamp": f"2025-04-01T10:00:{number:02d}.000Z",
                "message": {"role": role, "content": content, "id": f"{session}-m{number}"},
            }
        )
    (project / f"{session}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _tool(name: str, command: str, call: str) -> list[dict[str, object]]:
    return [{"type": "tool_use", "id": call, "name": name, "input": {"command": command}}]


def _mixed_history(home: Path) -> None:
    _claude_transcript(
        home,
        "rust-parser",
        [
            ("user", "the parser crate does not build since the lifetime change"),
            ("assistant", _tool("Bash", "cargo test -p parser", "t1")),
            ("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "12 passed"}]),
        ],
    )
    _claude_transcript(
        home,
        "py-suite",
        [
            ("user", "run the python tests for the billing module with the test session fixture"),
            ("assistant", _tool("Bash", "pytest -q tests/billing", "t2")),
        ],
    )
    _claude_transcript(
        home, "login", [("user", "which login session expires first, the web or the api one?")]
    )
    _claude_transcript(
        home, "store", [("user", "which file holds the session store and its cookie settings?")]
    )


def test_search_ranks_by_relevance_by_default_for_a_question_in_plain_words(cli: Cli) -> None:
    _mixed_history(cli.home)
    found = cli("search", "which", "session", "ran", "cargo", "test", "--json").json()
    assert found["match"] == "relevance" and found["corrections"] == {}
    assert found["items"][0]["session"]["id"] == "rust-parser"
    flags = _sample(cli)
    fixed = cli("search", "where", "did", "we", "fix", "the", "failing", "test", "--json", *flags)
    assert fixed.json()["items"][0]["session"]["id"] == "billing-rounding"


def test_phrase_and_all_words_choose_the_other_modes(cli: Cli) -> None:
    flags = _sample(cli)
    phrase = cli("search", "rounding", "invoice", "--phrase", "--json", *flags).json()
    assert phrase["match"] == "phrase" and phrase["items"] == []
    words = cli("search", "rounding", "invoice", "--all-words", "--json", *flags).json()
    assert words["match"] == "words" and words["items"]
    both = cli("search", "x", "--phrase", "--all-words", *flags)
    assert both.status == 2 and "not allowed with argument" in both.err


def test_a_corrected_word_is_said_on_the_first_line_and_in_json(cli: Cli) -> None:
    flags = _sample(cli)
    ran = cli("search", "websokcet", "reconect", *flags)
    assert ran.out.splitlines()[0] == (
        'Showing results for "websocket reconnect" instead of "websokcet reconect".'
    )
    document = cli("search", "websokcet", "--json", *flags).json()
    assert document["corrections"] == {"websokcet": "websocket"}
    events = cli("search-events", "dashboard-websocket", "reconect", *flags)
    assert events.out.startswith('Showing results for "reconnect" instead of "reconect".')


# -- read commands with --json, on the quickstart's sample -----------------------------------


def test_list_json_returns_every_session_newest_first(cli: Cli, sample: Sample) -> None:
    sessions = cli("list", *sample.flags, "--json").json()["sessions"]
    assert {s["id"] for s in sessions} == set(EXAMPLE_SESSION_IDS)
    created = [s["created_at"] for s in sessions]
    assert created == sorted(created, reverse=True)
    assert all(s["persisted"] and not s["live"] for s in sessions)


def test_list_with_cwd_and_titles_shows_only_that_workspace(cli: Cli, sample: Sample) -> None:
    args = ["list", "--cwd", DASHBOARD_WORKSPACE, "--titles", *sample.flags, "--json"]
    titles = {s["id"]: s["title"] for s in cli(*args).json()["sessions"]}
    assert titles == {
        "dashboard-dark-mode": "Add a dark mode toggle to settings",
        "dashboard-websocket": "Debug websocket reconnect loop",
    }


def test_show_json_returns_header_and_title(cli: Cli, sample: Sample) -> None:
    document = cli("show", "billing-rounding-scan", *sample.flags, "--json").json()
    assert document["session"]["parent_session"] == "billing-rounding"
    assert document["session"]["origin"] == "subagent"
    assert document["title"]["title"] == "Find float rounding in billing/"


def test_events_json_lists_every_event_with_surface(cli: Cli, sample: Sample) -> None:
    events = cli("events", "billing-rounding", *sample.flags, "--json").json()["events"]
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert {"current", "shadowed", "log-only"} == {e["surface"] for e in events}


def test_read_json_returns_the_target_in_wire_form_with_neighbours(
    cli: Cli, sample: Sample
) -> None:
    args = ["read", "billing-rounding", "20", "--before", "1", "--after", "2", *sample.flags]
    document = cli(*args, "--json").json()
    assert document["target"]["seq"] == 20
    assert document["target"]["type"] == "user/message"
    assert [e["seq"] for e in document["events"]] == [19, 20, 21, 22]
    assert (document["start_seq"], document["end_seq"]) == (19, 22)


def test_trace_json_shows_the_fork_and_the_subagent_as_descendants(
    cli: Cli, sample: Sample
) -> None:
    document = cli("trace", "billing-rounding", *sample.flags, "--json").json()
    children = [node["session"]["id"] for node in document["descendants"]]
    assert children == ["billing-rounding-bankers", "billing-rounding-scan"]
    assert document["complete"] is True and document["ancestors"] == []


def test_trace_event_json_shows_the_compaction_that_replaced_an_event(
    cli: Cli, sample: Sample
) -> None:
    document = cli("trace-event", "billing-rounding", "20", *sample.flags, "--json").json()
    assert document["target"]["surface"] == "shadowed"
    replacer = document["replaced_by"]
    assert isinstance(replacer, int) and replacer > 20
    assert document["replacement_chain"] == [replacer]


def test_index_json_reports_an_up_to_date_index(cli: Cli, sample: Sample) -> None:
    document = cli("index", *sample.flags, "--json").json()
    assert document["index"] == str(sample.index)
    assert document["persisted_indexed"] == 0


def test_index_on_a_fresh_index_indexes_every_session(
    cli: Cli, sample: Sample, tmp_path: Path
) -> None:
    flags = ["--root", str(sample.root), "--index", str(tmp_path / "fresh.sqlite3")]
    document = cli("index", *flags, "--json").json()
    assert document["persisted_indexed"] == len(EXAMPLE_SESSION_IDS)
    ran = cli("index", *flags)
    assert ran.status == 0 and "up to date" in ran.out


# -- id prefixes -------------------------------------------------------------------------------


def test_every_id_argument_accepts_a_unique_prefix(cli: Cli, sample: Sample) -> None:
    for args in (
        ["show", "dashboard-w"],
        ["events", "dashboard-w"],
        ["trace", "dashboard-w"],
        ["read", "dashboard-w", "1"],
        ["trace-event", "dashboard-w", "1"],
        ["search-events", "dashboard-w", "websocket"],
        ["search", "websocket", "--session", "dashboard-w"],
    ):
        ran = cli(*args, *sample.flags)
        assert ran.status == 0, (args, ran.err)
        expected = "session/title" if args[0] == "events" else "dashboard-websocket"
        assert expected in ran.out, args


def test_an_ambiguous_prefix_is_a_usage_error_listing_the_candidates(
    cli: Cli, sample: Sample
) -> None:
    ran = cli("show", "billing-rounding-", *sample.flags)
    assert ran.status == 2
    line = ran.error_line("SESSION_QUERY_USAGE")
    for candidate in ("billing-rounding-bankers", "billing-rounding-scan"):
        assert candidate in line


def test_an_exact_id_wins_over_longer_ids_it_is_a_prefix_of(cli: Cli, sample: Sample) -> None:
    document = cli("show", "billing-rounding", *sample.flags, "--json").json()
    assert document["session"]["id"] == "billing-rounding"


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["list", "--formt"], "(see 'sessionquery list --help')"),
        (["show", "x", "--frobnicate"], "(see 'sessionquery show --help')"),
        (["export", "x", "--formt", "md"], "did you mean '--format'? (see 'sessionquery export"),
    ],
)
def test_an_unknown_option_is_matched_against_the_options_of_its_own_command(
    cli: Cli, args: list[str], hint: str
) -> None:
    """``list --formt`` used to suggest ``--format``, which only ``export`` has, and to point
    at the top level's help."""
    ran = cli(*args)
    assert ran.status == 2 and hint in ran.err, ran.err
    if args[0] != "export":
        assert "--format" not in ran.err


def test_export_and_the_mcp_caller_accept_a_childs_short_id(cli: Cli) -> None:
    from sessionquery.mcp import resolve_caller
    from sessionquery.query.service import SessionQuery
    from sessionquery.sources import ClaudeCodeSource

    children = _claude_family(cli)
    exported = cli("export", "c0ffee00/2", "--format", "json")
    assert exported.status == 0, exported.err
    assert exported.json()["session"]["id"] == children[1]
    source = ClaudeCodeSource(cli.home / ".claude" / "projects")
    with SessionQuery(persistence=source) as query:
        assert resolve_caller(query, cwd=None, session_id="c0ffee00/2").session_id == children[1]
