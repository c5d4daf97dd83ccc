"""The shell command that resumes a session in the agent that recorded it.

Used by the viewer's "copy resume command" action (and open to any entry point). The command
is only ever *shown* or copied: nothing in sessionquery runs it. Invariants: every argument
is quoted for a POSIX shell (``shlex.quote``), so an id or workspace holding spaces, quotes
or ``;`` is one argument; a kind whose resume command is not known gives ``None``.
"""

from __future__ import annotations

import shlex

__all__ = ["RESUME_KINDS", "resume_command"]

_TEMPLATES = {
    "claude": ("claude", "--resume"),
    "codex": ("codex", "resume"),
}
"""Each agent's own resume invocation, followed by the session id."""

RESUME_KINDS = frozenset(_TEMPLATES)
"""The source kinds that have a resume command."""


_NOT_ON_THEIR_OWN = frozenset({"claude"})
"""Kinds whose child sessions (subagents' transcripts) cannot be resumed by themselves."""


def resume_command(
    kind: str, session_id: str, cwd: str | None = None, *, child: bool = False
) -> str | None:
    """``cd <cwd> && <agent> <resume> <id>`` for a session recorded by ``kind``, or ``None``.

    Args:
        kind: the source kind (``claude``, ``codex``...); a numbered label such as
            ``claude2`` counts as its kind.
        session_id: the id in the agent's own terms (without a source prefix).
        cwd: the session's workspace; Claude Code finds a session through the directory it
            is resumed in, so the command starts there when it is known.
        child: the session has a parent; a Claude Code subagent's transcript is not
            resumable on its own (``None``), a Codex fork is.
    """
    kind = kind.rstrip("0123456789")
    template = _TEMPLATES.get(kind)
    if template is None or (child and kind in _NOT_ON_THEIR_OWN):
        return None
    command = " ".join([*template, shlex.quote(session_id)])
    if cwd:
        return f"cd {shlex.quote(cwd)} && {command}"
    return command
