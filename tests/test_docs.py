"""The docs check: every complete code block of README.md and docs/*.md runs as shown.

Rules (also stated in README.md, "Development"):

* ``python`` blocks run in document order in one fresh interpreter per document, sharing one
  namespace (a later block may use what an earlier one defined, as a reader would), with a
  fresh temporary directory as the working directory.
* Shell blocks (``sh``, ``console``, ``shell``, ``bash``) run their ``sessionquery …``
  commands (and ``echo``, ``printf``, ``mkdir``, ``touch``, to make files they use), in order,
  with ``bash``; other commands (``pip install``, ``pytest``…) are not run. In ``console``
  blocks a command is a line starting with ``$ `` and the lines up to the next ``$ `` are its
  expected output (stdout and stderr together); an ``sh`` command, or a ``console`` command
  shown without output, must exit 0.
* The set-up of every document: a fresh ``HOME`` and ``SESSIONQUERY_HOME`` (shown in the docs
  as ``/tmp/sq-demo``) holding the sample sessions where ``sessionquery quickstart`` puts them
  (``<home>/quickstart/sessions``, a default source), and a one-line
  Claude Code and Codex history in ``~/.claude/projects`` and ``~/.codex/sessions``; every
  ``/tmp/`` path in a block is sandboxed into a fresh directory and mapped back in the output,
  and the sandbox's home directory is shown as ``/home/me``.
* A ``text`` or untagged block right after a ``python`` block, introduced by a paragraph that
  starts with "prints" or "Output", is that block's expected standard output.
* In expected output, a line holding only ``...`` stands for any number of lines and ``...``
  inside a line for any text (times, generated ids). Trailing spaces and surrounding blank
  lines are ignored.
* ``json`` blocks must parse. Other ``text`` and untagged blocks are illustrations.
* A block preceded by the line ``<!-- docs-check: skip -->`` is an illustration that is not
  run: a signature, or an excerpt of a program shown elsewhere. Keep these rare.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from locations import ROOT

DOCUMENTS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")], key=str)
SKIP_MARKER = "<!-- docs-check: skip -->"
DOCUMENTED_HOME = "/tmp/sq-demo"
DOCUMENTED_USER = "/home/me"
SHELL_LANGUAGES = frozenset({"sh", "console", "shell", "bash"})
OUTPUT_LANGUAGES = frozenset({"text", ""})
_OUTPUT_INTRO = re.compile(r"^(prints|output)\b", re.IGNORECASE)
_FENCE = re.compile(r"^(`{3,})\s*([\w+-]*)\s*$")
_RUN_COMMANDS = frozenset({"sessionquery", "echo", "printf", "mkdir", "touch"})
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_BLOCK_END = "\x00--docs-check-block-end--\x00"
_PYTHON_TIMEOUT_S = 300
_COMMAND_TIMEOUT_S = 120

_DRIVER = r"""
import json, sys, traceback
blocks = json.loads(sys.stdin.read())
namespace = {"__name__": "__main__"}
for name, source in blocks:
    try:
        exec(compile(source, name, "exec"), namespace)
    except BaseException:
        traceback.print_exc()
        sys.stdout.flush()
        sys.exit(3)
    sys.stdout.write(SENTINEL)
    sys.stdout.flush()
"""


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced code block of a document."""

    document: str
    line: int
    language: str
    text: str
    intro: str
    skipped: bool

    @property
    def name(self) -> str:
        return f"{self.document}:{self.line}"


def parse_blocks(document: str, markdown: str) -> list[Block]:
    """The fenced blocks of ``markdown`` with the paragraph of prose just before each."""
    blocks: list[Block] = []
    lines = markdown.splitlines()
    prose: list[str] = []
    paragraph_ended = False
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            text = lines[index].strip()
            if text:
                prose = [text] if paragraph_ended else [*prose, text]
            paragraph_ended = not text
            index += 1
            continue
        fence, language = opening.groups()
        start = index
        index += 1
        body: list[str] = []
        while index < len(lines) and not re.fullmatch(f"{fence}`*\\s*", lines[index]):
            body.append(lines[index])
            index += 1
        previous = next((line for line in reversed(lines[:start]) if line.strip()), "")
        blocks.append(
            Block(
                document=document,
                line=start + 1,
                language=language.lower(),
                text="\n".join(body) + "\n",
                intro=" ".join(prose),
                skipped=previous.strip() == SKIP_MARKER,
            )
        )
        prose = []
        paragraph_ended = False
        index += 1
    return blocks


def expected_output_pattern(expected: str) -> re.Pattern[str]:
    """A regex for ``expected`` where ``...`` lines match any lines and ``...`` any text."""
    parts: list[str] = []
    for line in _normalise(expected).splitlines():
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(piece) for piece in line.split("...")) + r"\n")
    return re.compile("".join(parts), re.DOTALL)


def _normalise(text: str) -> str:
    lines = [line.rstrip() for line in text.splitlines()]
    return "\n".join(lines).strip("\n") + "\n"


def assert_output_matches(actual: str, expected: str, where: str) -> None:
    assert expected_output_pattern(expected).fullmatch(_normalise(actual)), (
        f"{where}: the output differs from the documented one.\n"
        f"--- documented\n{expected}\n--- actual\n{actual}"
    )


_CLAUDE: list[dict[str, object]] = [
    {
        "type": "user",
        "sessionId": "c-1",
        "cwd": "/home/me/app",
        "timestamp": "2025-01-01T00:00:00Z",
        "uuid": "u-1",
        "message": {"role": "user", "content": "The database migration failed again."},
    }
]
_CLAUDE_AGENT: list[dict[str, object]] = [
    {
        "type": "user",
        "sessionId": "c-1",
        "agentId": "a1",
        "isSidechain": True,
        "cwd": "/home/me/app",
        "timestamp": "2025-01-01T00:00:05Z",
        "uuid": "u-2",
        "message": {"role": "user", "content": "List the migrations that touch the users table."},
    }
]
_CODEX: list[dict[str, object]] = [
    {
        "timestamp": "2025-01-02T00:00:00Z",
        "type": "session_meta",
        "payload": {"id": "x-1", "timestamp": "2025-01-02T00:00:00Z", "cwd": "/home/me/app"},
    },
    {
        "timestamp": "2025-01-02T00:00:01Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Why has the migration failed?"}],
        },
    },
]
"""A small Claude Code and Codex history in the sandbox's home, for the importer examples."""


def _write_lines(path: Path, records: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")


@dataclass
class Sandbox:
    """The fresh directories and environment one document runs in."""

    scratch: Path

    @property
    def tmp(self) -> Path:
        return self.scratch / "tmp"

    @property
    def home(self) -> Path:
        return self.scratch / "home"

    @property
    def workdir(self) -> Path:
        return self.scratch / "work"

    @property
    def sessionquery_home(self) -> Path:
        return self.tmp / DOCUMENTED_HOME.removeprefix("/tmp/")

    def prepare(self) -> None:
        for directory in (self.tmp, self.home, self.workdir, self.scratch / "tmpdir"):
            directory.mkdir(parents=True, exist_ok=True)
        from sessionquery.examples import build_examples

        # Where `sessionquery quickstart` puts its sample: a default source while it exists.
        build_examples(self.sessionquery_home / "quickstart" / "sessions")
        claude = self.home / ".claude" / "projects" / "-home-me-app"
        _write_lines(claude / "c-1.jsonl", _CLAUDE)
        _write_lines(claude / "agent-a1.jsonl", _CLAUDE_AGENT)
        _write_lines(self.home / ".codex" / "sessions" / "2025" / "rollout-x-1.jsonl", _CODEX)

    def environment(self) -> dict[str, str]:
        keep = ("PATH", "LANG", "LC_ALL", "SYSTEMROOT", "HYPOTHESIS_PROFILE")
        env = {name: os.environ[name] for name in keep if name in os.environ}
        bin_dir = str(Path(sys.executable).parent)
        env.update(
            PATH=os.pathsep.join([bin_dir, env.get("PATH", "")]),
            HOME=str(self.home),
            SESSIONQUERY_HOME=str(self.sessionquery_home),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            TMPDIR=str(self.scratch / "tmpdir"),
            NO_COLOR="1",
            COLUMNS="100",
            PYTHONIOENCODING="utf-8",
        )
        return env

    def inward(self, text: str) -> str:
        """Point the documented ``/tmp/`` paths of a block into the sandbox."""
        return re.sub(r"(?<![\w./-])/tmp/", f"{self.tmp}/", text)

    def outward(self, text: str) -> str:
        """Show sandboxed paths in output as the documented ``/tmp/`` and home paths."""
        text = text.replace(f"{self.tmp}/", "/tmp/")
        return text.replace(f"{self.home}/", f"{DOCUMENTED_USER}/")


def _python_blocks(blocks: list[Block]) -> list[tuple[Block, Block | None]]:
    """Each runnable python block with the block showing its expected output, if any."""
    runs: list[tuple[Block, Block | None]] = []
    for index, block in enumerate(blocks):
        if block.language != "python" or block.skipped:
            continue
        following = blocks[index + 1] if index + 1 < len(blocks) else None
        shows_output = (
            following is not None
            and following.language in OUTPUT_LANGUAGES
            and not following.skipped
            and _OUTPUT_INTRO.match(following.intro) is not None
        )
        runs.append((block, following if shows_output else None))
    return runs


def _run_python(sandbox: Sandbox, runs: list[tuple[Block, Block | None]]) -> None:
    sources = [[block.name, sandbox.inward(block.text)] for block, _ in runs]
    driver = _DRIVER.replace("SENTINEL", repr(_BLOCK_END))
    completed = subprocess.run(
        [sys.executable, "-c", driver],
        input=json.dumps(sources),
        capture_output=True,
        text=True,
        cwd=sandbox.workdir,
        env=sandbox.environment(),
        timeout=_PYTHON_TIMEOUT_S,
        check=False,
    )
    outputs = sandbox.outward(completed.stdout).split(_BLOCK_END)
    failed_at = len(outputs) - 1
    if completed.returncode != 0:
        block = runs[min(failed_at, len(runs) - 1)][0]
        pytest.fail(
            f"{block.name}: the python block failed\n{outputs[-1]}{completed.stderr}",
            pytrace=False,
        )
    for (block, output), printed in zip(runs, outputs, strict=False):
        if output is not None:
            assert_output_matches(printed, output.text, block.name)


@dataclass(frozen=True, slots=True)
class Command:
    """One shell command of a block and the output the document shows for it, if any."""

    block: Block
    text: str
    expected: str | None

    @property
    def runs(self) -> bool:
        words = shlex.split(self.text, comments=True)
        while words and _ENV_ASSIGNMENT.match(words[0]):
            words = words[1:]
        return bool(words) and words[0] in _RUN_COMMANDS


def shell_commands(block: Block) -> list[Command]:
    """The commands of a shell block; ``console`` blocks carry each command's output."""
    lines = _join_continuations(block.text.splitlines())
    if block.language != "console":
        return [Command(block, line, None) for line in lines if line.strip()]
    commands: list[Command] = []
    current: str | None = None
    output: list[str] = []
    for line in lines:
        if line.startswith("$ "):
            if current is not None:
                commands.append(Command(block, current, "\n".join(output) or None))
            current, output = line[2:], []
        elif current is not None:
            output.append(line)
    if current is not None:
        commands.append(Command(block, current, "\n".join(output) or None))
    return commands


def _join_continuations(lines: list[str]) -> list[str]:
    joined: list[str] = []
    pending = ""
    for line in lines:
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        joined.append(pending + (line.strip() if pending else line))
        pending = ""
    if pending:
        joined.append(pending)
    return joined


def _run_command(sandbox: Sandbox, command: Command) -> None:
    where = f"{command.block.name}: $ {command.text}"
    try:
        completed = subprocess.run(
            ["bash", "-c", sandbox.inward(command.text)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=sandbox.workdir,
            env=sandbox.environment(),
            timeout=_COMMAND_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{where}: did not finish within {_COMMAND_TIMEOUT_S} s", pytrace=False)
    printed = sandbox.outward(completed.stdout)
    if command.expected is None:
        assert completed.returncode == 0, f"{where}: exit {completed.returncode}\n{printed}"
    else:
        assert_output_matches(printed, command.expected, where)


def _document_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", DOCUMENTS, ids=_document_id)
def test_every_code_block_of_the_document_runs_as_shown(path: Path, tmp_path: Path) -> None:
    blocks = parse_blocks(_document_id(path), path.read_text(encoding="utf-8"))
    for block in blocks:
        if block.language == "json" and not block.skipped:
            json.loads(block.text)
    sandbox = Sandbox(tmp_path)
    sandbox.prepare()
    runs = _python_blocks(blocks)
    if runs:
        _run_python(sandbox, runs)
    for block in blocks:
        if block.language in SHELL_LANGUAGES and not block.skipped:
            for command in shell_commands(block):
                if command.runs:
                    _run_command(sandbox, command)


def test_the_checker_reads_fences_intros_and_skip_markers() -> None:
    markdown = (
        "Intro.\n\n```python\nprint(1)\n```\n\nprints\n\n```text\n1\n```\n\n"
        f"{SKIP_MARKER}\n````python\ndef f(x): ...\n````\n"
    )
    blocks = parse_blocks("doc.md", markdown)
    assert [(b.line, b.language, b.intro, b.skipped) for b in blocks] == [
        (3, "python", "Intro.", False),
        (9, "text", "prints", False),
        (14, "python", SKIP_MARKER, True),
    ]
    runs = _python_blocks(blocks)
    assert [(run.line, output.line if output else None) for run, output in runs] == [(3, 9)]


def test_expected_output_ellipses_match_any_lines_and_any_text() -> None:
    pattern = expected_output_pattern("a\n...\nCreated: ...Z\n")
    assert pattern.fullmatch("a\nx\ny\nCreated: 2026-01-01Z\n")
    assert pattern.fullmatch("a\nCreated: Z\n")
    assert not pattern.fullmatch("b\nCreated: 1Z\n")
    assert not pattern.fullmatch("a\nCreated: 1\n")


def test_console_commands_carry_their_output_and_only_sessionquery_runs() -> None:
    block = Block(
        "doc.md",
        1,
        "console",
        "$ pip install x\n$ A=1 sessionquery list \\\n  --json\nout\n",
        "",
        False,
    )
    commands = shell_commands(block)
    assert [(c.text, c.expected, c.runs) for c in commands] == [
        ("pip install x", None, False),
        ("A=1 sessionquery list --json", "out", True),
    ]


def test_sandboxed_tmp_paths_map_back_in_output(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path)
    inside = sandbox.inward("sessionquery list --root /tmp/sq-demo/x ./tmp/y")
    assert inside == f"sessionquery list --root {sandbox.tmp}/sq-demo/x ./tmp/y"
    assert sandbox.outward(f"at {sandbox.tmp}/sq-demo/x") == "at /tmp/sq-demo/x"
