"""How to start this installation of ``sessionquery`` again: from a shell, or from an MCP client.

After a virtualenv install, ``sessionquery`` is not on the ``PATH``; an MCP client starts its
servers without the user's shell set-up at all. So every command line this package prints
for a person to run, and every MCP registration, names the command that works.

Invariants:

* :func:`launcher` is absolute and starts exactly the installation that is running (its
  interpreter's own ``sessionquery`` script, else that interpreter with ``-m``);
* :func:`shell_command` is the bare ``sessionquery`` only when that name on the ``PATH`` is
  this installation, else the absolute launcher;
* registrations are printed, never written into another program's configuration.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

__all__ = ["CLIENTS", "Client", "launcher", "on_path", "registration", "shell_command"]

Client = Literal["claude", "codex", "cursor"]
CLIENTS: tuple[Client, ...] = ("claude", "codex", "cursor")
"""The MCP clients ``sessionquery mcp --print-config`` writes a registration for."""

SERVER_NAME = "sessionquery"
_SCRIPT = "sessionquery.exe" if os.name == "nt" else "sessionquery"


def launcher() -> list[str]:
    """The absolute command that runs this installation's ``sessionquery``."""
    script = Path(sys.executable).absolute().parent / _SCRIPT
    if script.is_file():
        return [str(script)]
    return [str(Path(sys.executable).absolute()), "-m", "sessionquery.cli"]


def on_path() -> bool:
    """Whether a bare ``sessionquery`` typed in a shell runs this installation."""
    import shutil  # imports compression modules: only when asked

    found = shutil.which("sessionquery")
    first = launcher()
    if found is None or len(first) != 1:
        return False
    try:
        return Path(found).resolve() == Path(first[0]).resolve()
    except OSError:
        return False


def shell_command() -> str:
    """``sessionquery`` when that runs this installation, else its absolute launcher."""
    return "sessionquery" if on_path() else shlex.join(launcher())


def registration(client: Client, arguments: Sequence[str]) -> tuple[str, str]:
    """What registers ``sessionquery mcp`` (with ``arguments``) with ``client``.

    Returns:
        The text to paste or run, and one line saying where it goes.
    """
    command, *rest = launcher()
    args = [*rest, "mcp", *arguments]
    if client == "claude":
        line = shlex.join(["claude", "mcp", "add", "--scope", "user", SERVER_NAME, "--", command])
        text = f"{line} {shlex.join(args)}\n"
        return text, "run this in a shell (Claude Code, every project)"
    if client == "codex":
        lines = [f"[mcp_servers.{SERVER_NAME}]", f"command = {json.dumps(command)}"]
        lines.append(f"args = {json.dumps(args)}")
        return "\n".join(lines) + "\n", "add this to ~/.codex/config.toml (Codex)"
    document = {"mcpServers": {SERVER_NAME: {"command": command, "args": args}}}
    return json.dumps(document, indent=2) + "\n", "merge this into ~/.cursor/mcp.json (Cursor)"
