"""Exports of a conversation: complete, and inert however hostile the session data is."""

from __future__ import annotations

import html.parser
import re
from pathlib import Path

import pytest

from cli_support import Cli
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
