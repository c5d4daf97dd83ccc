"""Read-only importers: other agents' transcripts presented as sessionquery sessions.

* :class:`ClaudeCodeSource` reads a Claude Code ``projects`` directory;
* :class:`CodexSource` reads a Codex ``sessions`` directory;
* :class:`MultiSource` combines several persistences into one corpus with unique ids.

Each implements the read side of
:class:`~sessionquery.persistence.base.SessionPersistence` and reports what it could not read
through ``problems()`` (a list of :class:`Problem`). See ``docs/importers.md``.
"""

from sessionquery.sources._common import Problem
from sessionquery.sources.claude import ClaudeCodeSource
from sessionquery.sources.codex import CodexSource
from sessionquery.sources.multi import MultiSource

__all__ = ["ClaudeCodeSource", "CodexSource", "MultiSource", "Problem"]
