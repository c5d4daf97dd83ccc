"""The conversation (``show --conversation``) and its exports: complete, and inert however
hostile the session data is."""

from __future__ import annotations

import html
import html.parser
import json
import re
from pathlib import Path

import pytest

from cli_support import Cli, Sample
from sessionquery.cli import _conversation as conversation
from sessionquery.live import SessionStore
from sessionquery.model.messages import session_title, user_message
from sessionquery.persistence import JsonlPersistence

HOSTILE_TITLE = "Fix \x1b]0;pwned\x07 the \x1b[2J login\u202e test"
HOSTILE_ID = "evil`id``x"
HOSTILE_CHILD = "sub`agent"


def _hostile_store(root: Path) -> None:
    store = SessionStore(JsonlPersistence(root))
    session = store.create(HOSTILE_ID, cwd="/w\x1b[31m/app")
    session.append("user/message", user_message("hello", id="m0"), surface_op="append")
    session.append("session/title", session_title(HOSTILE_TITLE, [1]))
    store.close(HOSTILE_ID)
    child = store.create(HOSTILE_CHILD, cwd="/w", parent_session=HOSTILE_ID, origin="subagent")
    child.append("user/message", user_message("sub task", id="m1"), surface_op="append")
    store.close(HOSTILE_CHILD)


def _export(cli: Cli, tmp_path: Path, fmt: str) -> str:
    _hostile_store(tmp_path / "store")
    flags = ["--root", str(tmp_path / "store"), "--index", str(tmp_path / "i.sqlite3")]
    ran = cli("export", HOSTILE_ID, "--format", fmt, *flags)
    assert ran.status == 0, ran.err
    return ran.out


_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_an_export_writes_no_control_character_of_the_title_id_or_workspace(
    cli: Cli, tmp_path: Path, fmt: str
) -> None:
    text = _export(cli, tmp_path, fmt)
    assert _CONTROLS.search(text) is None, _CONTROLS.findall(text)
    lines = text.splitlines()
    title = lines[0] if fmt == "markdown" else next(line for line in lines if "<title>" in line)
    assert "x1b" in title and "pwned" in title  # shown, as a visible escape


def _code_spans(line: str) -> list[str]:
    """The code spans of one Markdown line, by CommonMark's rule (equal backtick runs)."""
    spans, position = [], 0
    while (opening := re.compile(r"`+").search(line, position)) is not None:
        ticks = opening.group(0)
        closing = re.compile(rf"(?<!`){ticks}(?!`)").search(line, opening.end())
        if closing is None:
            break
        content = line[opening.end() : closing.start()]
        spans.append(
            content[1:-1] if content.startswith(" ") and content.endswith(" ") else content
        )
        position = closing.end()
    return spans


def test_markdown_keeps_ids_with_backticks_inside_one_code_span(cli: Cli, tmp_path: Path) -> None:
    text = _export(cli, tmp_path, "markdown")
    session_line = next(line for line in text.splitlines() if line.startswith("- Session: "))
    assert _code_spans(session_line) == [HOSTILE_ID]
    subagent_line = next(line for line in text.splitlines() if "**Subagent**" in line)
    assert _code_spans(subagent_line) == [HOSTILE_CHILD]


def test_the_html_export_shows_the_title_as_text(cli: Cli, tmp_path: Path) -> None:
    page = _export(cli, tmp_path, "html")

    class Titles(html.parser.HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.inside = False
            self.found: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.inside = tag == "h1"

        def handle_endtag(self, tag: str) -> None:
            self.inside = False

        def handle_data(self, data: str) -> None:
            if self.inside:
                self.found.append(data)

    parser = Titles()
    parser.feed(page)
    assert parser.found == ["Fix \\x1b]0;pwned\\x07 the \\x1b[2J login\\u202e test"]


# -- the conversation and the export of the quickstart's sample ------------------------------


def test_show_conversation_marks_turns_tool_calls_results_compactions_and_subagents(
    cli: Cli, sample: Sample
) -> None:
    ran = cli("show", "billing-rounding", "--conversation", *sample.flags)
    assert ran.status == 0, ran.err
    out = ran.out
    assert "── user · seq 1" in out and "── assistant · seq 3" in out
    assert "  → bash {" in out  # one line per tool call
    assert "  ← " in out
    assert "── compaction · seq " in out
    assert "subagent: Find float rounding in billing/ · session billing-rounding-scan" in out
    fork = cli("show", "billing-rounding-b", "--conversation", *sample.flags)
    assert "inherited from billing-rounding" in fork.out
    assert "this session starts here" in fork.out


def test_long_tool_results_are_cut_with_a_visible_marker() -> None:
    lines = conversation._cut_result("x\n" * 50, "abc", 7)
    assert len(lines) == conversation.RESULT_LINES + 1
    assert lines[-1].startswith("[… ") and "sessionquery read abc 7" in lines[-1]


@pytest.mark.parametrize("fmt", ["markdown", "html", "json"])
def test_export_writes_the_complete_session(
    cli: Cli, sample: Sample, tmp_path: Path, fmt: str
) -> None:
    target = tmp_path / f"out.{fmt}"
    ran = cli("export", "billing-rounding-s", "--format", fmt, "-o", str(target), *sample.flags)
    assert ran.status == 0, ran.err
    text = target.read_text(encoding="utf-8")
    events = cli("events", "billing-rounding-scan", *sample.flags, "--json").json()
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


def test_html_export_is_self_contained_and_escapes_session_data(cli: Cli) -> None:
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
    project = cli.home / ".claude" / "projects" / "-app"
    project.mkdir(parents=True)
    (project / "hostile.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    ran = cli("export", "hostile", "--format", "html")
    assert ran.status == 0, ran.err
    page = _Page()
    page.feed(ran.out)
    assert page.tags.count("script") == 1  # the viewer's own, allowed by its hash alone
    assert "img" not in page.tags and "b" not in page.tags
    assert hostile in "".join(page.text)  # shown as text, exactly
    assert "link" not in page.tags  # self-contained: only in-page anchors
    assert all(source and source.startswith("#seq-") for source in page.sources)
    policy = html.unescape(ran.out)
    assert "script-src 'sha256-" in policy and "unsafe-inline" not in policy
