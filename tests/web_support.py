"""Shared test data and machinery for the web viewer: a fixture history, a real
``sessionquery serve`` subprocess, and Debian's Chromium driven by Playwright.

``make_history(root)`` writes a JSONL store holding the bundled example sessions (a fork, a
subagent, a compaction), a *hostile* session whose every text tries to run script
(``<script>``, ``onerror=``, ``javascript:`` links, a 300 KB line) and a *long* session of
several windows of events, with an id that needs URL quoting. ``Served`` starts the real
command line on it and reads the URL from its first line of stdout. ``chromium_path()``
finds the browser or fails loudly (``.ci/run`` installs it; tests never skip).
"""

from __future__ import annotations

import html.parser
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from locations import ROOT
from sessionquery import JsonlPersistence, Replace, SessionStore
from sessionquery.examples import build_examples
from sessionquery.model import messages as m

__all__ = [
    "CHROMIUM_ARGS",
    "HOSTILE_ID",
    "HOSTILE_TEXT",
    "LONG_EVENTS",
    "LONG_ID",
    "ORPHAN_ID",
    "PWNED",
    "Served",
    "chromium_path",
    "make_history",
    "parse_tags",
    "run_cli",
    "screenshot_dir",
    "served",
]

HOSTILE_ID = "hostile/\"<x>&'id"
"""A session id with every character that must be quoted in a URL or escaped in HTML."""

LONG_ID = "long session #1?"
LONG_EVENTS = 1_200
"""Events of the long session: several windows (the page shows 150 positions at once)."""

PWNED = "window.__pwned"
"""What every hostile payload tries to set; a page where it is defined ran session data."""

HOSTILE_TEXT = (
    '<script>window.__pwned = 1</script> <img src=x onerror="window.__pwned = 2"> '
    '<a href="javascript:window.__pwned = 3">click</a> </pre></div><svg onload=window.__pwned=4>'
)

CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
)
"""Flags Debian's Chromium needs here (as root, with no network beyond loopback)."""


def chromium_path() -> str:
    """Debian's Chromium, or an assertion error saying how to install it."""
    for candidate in (os.environ.get("SESSIONQUERY_TEST_CHROMIUM"), "/usr/bin/chromium"):
        if candidate and Path(candidate).exists():
            return candidate
    found = shutil.which("chromium")
    assert found, "the browser tests need Chromium: apt-get install -y chromium (.ci/run does)"
    return found


def screenshot_dir() -> Path:
    """Where the browser tests write screenshots (git-ignored; not committed)."""
    chosen = os.environ.get("SESSIONQUERY_SCREENSHOTS")
    path = Path(chosen) if chosen else ROOT / ".screenshots"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _clock(start: int) -> Iterator[int]:
    now = start
    while True:
        yield now
        now += 2_000


def _hostile(store: SessionStore) -> None:
    s = store.create(HOSTILE_ID, cwd='/home/dev/<b>bold</b>"quoted"')
    s.append("turn/start", m.turn_start(0))
    s.append("user/message", m.user_message(HOSTILE_TEXT, id="h0"), surface_op="append")
    s.append("step/start", m.step_start(0, 0))
    markdown = (
        "## Findings <script>window.__pwned = 5</script>\n\n"
        "See [the docs](javascript:window.__pwned=6) and [ok](https://example.org/x) "
        "and ![img](x onerror=window.__pwned=7) **bold <img src=x onerror=window.__pwned=8>**\n\n"
        "```html\n</code></pre><script>window.__pwned = 9</script>\n```\n"
        "- item `<iframe src=javascript:window.__pwned=10>`\n"
    )
    call = m.tool_call_block("c1", "bash<script>", {"command": "echo '<script>x</script>'"})
    s.append(
        "assistant/message",
        m.assistant_message(
            markdown,
            turn=0,
            step=0,
            tool_calls=[call],
            reasoning="<script>window.__pwned = 11</script>",
        ),
        surface_op="append",
    )
    s.append("tool/call", m.tool_call(call, turn=0, step=0))
    huge = "A" * 300_000 + "<script>window.__pwned=12</script>"
    s.append(
        "tool/result",
        m.tool_result(huge, call_id="c1", turn=0, step=0),
        surface_op="append",
    )
    s.append("step/end", m.step_end(0, 0))
    s.append("turn/end", m.turn_end(0))
    s.append(
        "session/title",
        m.session_title("Hostile <script>window.__pwned=13</script> title", [1]),
    )
    s.append("x/unknown", {"html": "<script>window.__pwned=14</script>"}, ignorable=True)
    store.close(HOSTILE_ID)


def _long(store: SessionStore) -> None:
    s = store.create(LONG_ID, cwd="/home/dev/src/long")
    turn = 0
    while len(s.events) < LONG_EVENTS - 8:
        s.append("turn/start", m.turn_start(turn))
        s.append(
            "user/message",
            m.user_message(f"question number {turn} about the parser", id=f"u{turn}"),
            surface_op="append",
        )
        s.append("step/start", m.step_start(turn, 0))
        s.append(
            "assistant/message",
            m.assistant_message(f"answer number {turn}: the lexer is fine", turn=turn, step=0),
            surface_op="append",
        )
        s.append("step/end", m.step_end(turn, 0))
        s.append("turn/end", m.turn_end(turn))
        turn += 1
    last = len(s.events)
    s.append("turn/start", m.turn_start(turn))
    s.append(
        "user/message",
        m.user_message(
            "Summary: every question was about the parser.", id="sum", source="compaction"
        ),
        surface_op=Replace(1, 3),
        source_event_seqs=[1, 3],
    )
    s.append("turn/end", m.turn_end(turn))
    del last
    store.close(LONG_ID)


ORPHAN_ID = "orphan-subagent"
"""A subagent whose parent session is in no source (its lineage is incomplete)."""


def _orphan(store: SessionStore) -> None:
    s = store.create(
        ORPHAN_ID,
        cwd="/home/dev/src/long",
        parent_session="gone-parent",
        origin="subagent",
        delegation_depth=1,
    )
    s.append("turn/start", m.turn_start(0))
    s.append("user/message", m.user_message("scan the parser", id="o0"), surface_op="append")
    s.append("turn/end", m.turn_end(0))
    store.close(ORPHAN_ID)


def make_history(root: Path) -> Path:
    """Write the fixture store under ``root / "sessions"``; returns that directory."""
    sessions = root / "sessions"
    build_examples(sessions)
    ticks = _clock(1_741_500_000_000)
    store = SessionStore(JsonlPersistence(sessions), clock=lambda: next(ticks))
    _hostile(store)
    _long(store)
    _orphan(store)
    return sessions


def serve_env(home: Path) -> dict[str, str]:
    """An environment with a private data home and no config file."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SESSIONQUERY_", "CLAUDE_", "CODEX_"))
    }
    env["SESSIONQUERY_HOME"] = str(home / "sq")
    env["SESSIONQUERY_CONFIG"] = str(home / "no-config.toml")
    env["HOME"] = str(home)
    return env


@dataclass
class Served:
    """A running ``sessionquery serve``: its URL and process."""

    url: str
    process: subprocess.Popen[str]

    def stop(self) -> None:
        """End the server (bounded wait)."""
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


@contextmanager
def served(root: Path, *extra: str) -> Iterator[Served]:
    """``sessionquery serve --root <root>/sessions --port 0`` until the block ends."""
    home = Path(tempfile.mkdtemp(dir=root))
    command = [
        sys.executable,
        "-m",
        "sessionquery.cli",
        "serve",
        "--port",
        "0",
        "--root",
        str(root / "sessions"),
        "--index",
        str(home / "index.sqlite3"),
        *extra,
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=serve_env(home)
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline().strip()
        assert first.startswith("http://"), (first, process.stderr.read() if process.stderr else "")
        server = Served(first, process)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


class _Tags(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def parse_tags(page: str) -> list[tuple[str, dict[str, str | None]]]:
    """Every start tag of ``page`` with its attributes, in order."""
    parser = _Tags()
    parser.feed(page)
    return parser.tags


def run_cli(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    """``sessionquery ARGS`` in a subprocess with a private home (bounded)."""
    return subprocess.run(
        [sys.executable, "-m", "sessionquery.cli", *args],
        capture_output=True,
        text=True,
        env=serve_env(home),
        timeout=120,
        check=False,
    )
