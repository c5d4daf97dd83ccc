"""What every command shares: the progress line or bar, and a problems summary that can never
replace the result."""

from __future__ import annotations

import io
import sys

import pytest

from cli_support import Cli, make_agent_home
from sessionquery.cli import COMMANDS
from sessionquery.cli._parser import build_parser
from sessionquery.cli._services import Invocation, Progress
from sessionquery.config import Config


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


def test_index_off_a_terminal_prints_plain_progress_lines_then_its_summary(cli: Cli) -> None:
    make_agent_home(cli.home)
    ran = cli("index")
    assert ran.status == 0, ran.err
    progress = ran.err.splitlines()
    assert progress[0] == "Indexing: reading the sources…"  # at once, before any count
    assert all(line.startswith("Indexing: ") for line in progress), progress
    assert progress[-1] == "Indexing: 2 of 2 sessions (100%)"
    assert "\r" not in ran.err
    assert "2 session(s) indexed" in ran.out


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
