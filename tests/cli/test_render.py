"""How results look: highlights, aligned columns, lines within 100 columns, no raw escapes."""

from __future__ import annotations

import json

from cli_support import Cli, Sample, make_agent_home
from sessionquery.cli import _render as render
from sessionquery.cli import _terminal as term


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


def test_a_time_past_the_year_9999_renders_as_its_raw_number_instead_of_failing() -> None:
    assert render.time_text(253_402_300_799_999) == "9999-12-31 23:59:59"
    assert render.time_text(2**53 - 1) == f"epoch-ms {2**53 - 1}"


def test_json_output_escapes_c1_controls() -> None:
    assert render.dumps({"t": "a\x9bb\u202e"}) == '{\n  "t": "a\\u009bb\\u202e"\n}'


def test_text_output_is_aligned_and_plain_when_not_a_terminal(cli: Cli, sample: Sample) -> None:
    ran = cli("search", "websocket", *sample.flags)
    assert ran.status == 0, ran.err
    assert "dashboard-websocket — Debug websocket reconnect loop" in ran.out
    assert "\x1b[" not in ran.out
    listing = cli("list", *sample.flags).out.splitlines()
    starts = {line.index("/home/dev") for line in listing if "/home/dev" in line}
    assert len(starts) == 1  # the workspace column is aligned


def test_list_shows_short_ids_and_titles_by_default(cli: Cli, sample: Sample) -> None:
    lines = cli("list", *sample.flags).out.splitlines()
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


def test_escape_sequences_in_session_text_never_reach_stdout_raw(cli: Cli) -> None:
    make_agent_home(cli.home)
    for args in (
        ["show", "c0ffee", "--conversation"],
        ["read", "c0ffee", "2"],
        ["search", "looking"],
        ["search-events", "c0ffee", "looking"],
        ["export", "c0ffee", "--format", "markdown"],
        ["list"],
        ["show", "c0ffee", "--conversation", "--json"],
    ):
        ran = cli(*args)
        assert ran.status == 0, (args, ran.err)
        assert "\x1b" not in ran.out and "\x07" not in ran.out, args
    shown = cli("show", "c0ffee", "--conversation").out
    assert "\\x1b]0;pwned\\x07" in shown  # visible, not acted on


def test_list_and_search_lines_fit_100_columns(cli: Cli) -> None:
    make_agent_home(cli.home)
    project = cli.home / ".claude" / "projects" / "-long"
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
        ran = cli(*args)
        assert ran.status == 0, (args, ran.err)
        widths = [term.display_width(row) for row in ran.out.splitlines()]
        assert max(widths) <= 100, (args, ran.out)
        assert "…" in ran.out
