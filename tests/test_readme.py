"""The README's commands, in order, as a new user runs them: one fresh home, nothing prepared.

Unlike the docs check (``test_docs.py``, which gives every page a home where the sample is
already there), this runs the README as a chain: the first line's ``quickstart`` (after its
install), the lines quickstart prints under "Try it yourself" exactly as printed, every
``sessionquery`` command of the README's shell blocks in order, and then the MCP server as
``--print-config cursor`` registers it, started by an MCP client. The home holds a small
Claude Code and Codex history, as the README's reader has.

The installation used is this interpreter's (``SESSIONQUERY_README_VENV`` names another one:
``.ci/run`` points it at the fresh clone's install). The first line's own install is run by
``.ci/run``; here ``.venv`` is that installation. Until the README says to put
``sessionquery`` on the ``PATH`` (pipx, uv tool), the ``PATH`` does not hold it, as after a
virtualenv install; the MCP client never has it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

from cli_support import make_agent_home
from locations import ROOT
from test_docs import SHELL_LANGUAGES, parse_blocks, shell_commands

README = ROOT / "README.md"
VENV_ENV = "SESSIONQUERY_README_VENV"
_TIMEOUT_S = 120
_MCP_TIMEOUT_S = 90
_INSTALL = re.compile(r"^python3 -m venv \.venv && \.venv/bin/pip install -q \. && (?P<tour>.+)$")


def _venv() -> Path:
    return Path(os.environ.get(VENV_ENV) or sys.prefix).absolute()


def _tour_and_commands() -> tuple[str, list[str]]:
    """The first line's command after its install, and the shell blocks' commands in order."""
    blocks = parse_blocks("README.md", README.read_text(encoding="utf-8"))
    first = blocks[0].text.splitlines()[0]
    install = _INSTALL.match(first)
    assert install is not None, f"the README's first line changed its shape: {first}"
    commands = [
        command.text
        for block in blocks[1:]
        if block.language in SHELL_LANGUAGES and not block.skipped
        for command in shell_commands(block)
        if command.runs
    ]
    return install.group("tour"), commands


def _environment(home: Path, *, on_path: bool) -> dict[str, str]:
    system_path = os.pathsep.join(
        part
        for part in os.environ.get("PATH", "").split(os.pathsep)
        if part and Path(part).absolute() != _venv() / "bin"
    )
    path = os.pathsep.join([str(_venv() / "bin"), system_path]) if on_path else system_path
    env = {"HOME": str(home), "PATH": path, "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8"}
    env.update({k: os.environ[k] for k in ("LANG", "LC_ALL", "SYSTEMROOT") if k in os.environ})
    return env


def _run(command: str, where: Path, env: dict[str, str], tmp: Path, *, sandbox: bool = True) -> str:
    """Run one command line; with ``sandbox`` the README's ``/tmp/...`` paths go to ``tmp``
    (not for lines the installation printed: their paths are its own, which ``.ci/run``'s
    fresh clone puts under ``/tmp``)."""
    sandboxed = re.sub(r"(?<![\w./-])/tmp/", f"{tmp}/", command) if sandbox else command
    completed = subprocess.run(
        ["bash", "-c", sandboxed],
        cwd=where,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=_TIMEOUT_S,
        check=False,
    )
    assert completed.returncode == 0, f"$ {command}\n{completed.stdout}{completed.stderr}"
    return completed.stdout


def _tried(tour_output: str) -> list[str]:
    lines = tour_output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith("Try it yourself:"))
    tried = []
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        tried.append(line.strip())
    return tried


def _serve_once(command: str, args: list[str], env: dict[str, str], where: Path) -> None:
    params = StdioServerParameters(command=command, args=args, env=env, cwd=str(where))

    async def scenario() -> None:
        with anyio.fail_after(_MCP_TIMEOUT_S):
            async with Client(params) as client:
                listed = await client.list_tools()
                assert "session_search" in {tool.name for tool in listed.tools}
                result = await client.call_tool("session_search", {"query": "websocket"})
                (block,) = result.content
                assert isinstance(block, types.TextContent)
                assert result.is_error is False, block.text

    anyio.run(scenario)


def test_the_readmes_commands_chain_for_a_new_user_in_order(tmp_path: Path) -> None:
    home, clone, tmp = tmp_path / "home", tmp_path / "clone", tmp_path / "tmp"
    for directory in (home, clone, tmp):
        directory.mkdir()
    make_agent_home(home)
    (clone / ".venv").symlink_to(_venv(), target_is_directory=True)
    tour, commands = _tour_and_commands()

    after_venv_install = _environment(home, on_path=False)
    printed = _run(tour, clone, after_venv_install, tmp)
    tried = _tried(printed)
    assert len(tried) == 3
    for line in tried:  # "Try it yourself" runs as printed, with sessionquery not on the PATH
        assert shlex.split(line)[0] != "sessionquery", line
        _run(line, clone, after_venv_install, tmp, sandbox=False)

    after_pipx = _environment(home, on_path=True)
    for command in commands:
        _run(command, clone, after_pipx, tmp)
    words = [shlex.split(command, comments=True) for command in commands]
    assert ["sessionquery", "mcp", "--print-config", "cursor"] in words

    registration = json.loads(
        _run("sessionquery mcp --print-config cursor", clone, after_pipx, tmp)
    )
    server = registration["mcpServers"]["sessionquery"]
    assert Path(server["command"]).is_absolute()
    _serve_once(server["command"], server["args"], after_venv_install, tmp)
