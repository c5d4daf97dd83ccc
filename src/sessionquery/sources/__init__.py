"""Read-only importers: other agents' transcripts presented as sessionquery sessions.

* :class:`ClaudeCodeSource` reads a Claude Code ``projects`` directory;
* :class:`CodexSource` reads a Codex ``sessions`` directory;
* :class:`GeminiSource`, :class:`QwenSource`, :class:`CopilotCliSource`,
  :class:`OpenCodeSource`, :class:`CursorSource` and :class:`VscodeCopilotSource` read Gemini
  CLI, Qwen Code, GitHub Copilot CLI, OpenCode, Cursor and VS Code Copilot Chat histories;
* :class:`MultiSource` combines several persistences into one corpus with unique ids;
* :mod:`sessionquery.sources.registry` is the importer seam: every kind of source, its default
  locations and how to open it; :mod:`sessionquery.sources.units` the raw units the archive
  copies.

Each importer implements the read side of
:class:`~sessionquery.persistence.base.SessionPersistence` and reports what it could not read
through ``problems()`` (a list of :class:`Problem`). See ``docs/importers.md``.

Names are imported on first use, so ``sessionquery.sources.registry`` stays cheap to import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sessionquery.sources._common import Problem
    from sessionquery.sources.claude import ClaudeCodeSource
    from sessionquery.sources.codex import CodexSource
    from sessionquery.sources.copilot import CopilotCliSource
    from sessionquery.sources.cursor import CursorSource
    from sessionquery.sources.gemini import GeminiSource
    from sessionquery.sources.multi import MultiSource
    from sessionquery.sources.opencode import OpenCodeSource
    from sessionquery.sources.qwen import QwenSource
    from sessionquery.sources.vscode import VscodeCopilotSource

__all__ = [
    "ClaudeCodeSource",
    "CodexSource",
    "CopilotCliSource",
    "CursorSource",
    "GeminiSource",
    "MultiSource",
    "OpenCodeSource",
    "Problem",
    "QwenSource",
    "VscodeCopilotSource",
]

_HOMES = {
    "ClaudeCodeSource": "sessionquery.sources.claude",
    "CodexSource": "sessionquery.sources.codex",
    "CopilotCliSource": "sessionquery.sources.copilot",
    "CursorSource": "sessionquery.sources.cursor",
    "GeminiSource": "sessionquery.sources.gemini",
    "MultiSource": "sessionquery.sources.multi",
    "OpenCodeSource": "sessionquery.sources.opencode",
    "Problem": "sessionquery.sources._common",
    "QwenSource": "sessionquery.sources.qwen",
    "VscodeCopilotSource": "sessionquery.sources.vscode",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
