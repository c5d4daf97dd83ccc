"""Resume commands: shown and copied, quoted for a shell, only for agents that have one."""

from __future__ import annotations

import shlex

import pytest

from sessionquery.resume import resume_command


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("claude", "cd /home/me/app && claude --resume abc-1"),
        ("claude2", "cd /home/me/app && claude --resume abc-1"),
        ("codex", "cd /home/me/app && codex resume abc-1"),
    ],
)
def test_known_agents_resume_from_their_workspace(kind: str, expected: str) -> None:
    assert resume_command(kind, "abc-1", "/home/me/app") == expected


def test_unknown_kinds_and_the_store_have_no_command() -> None:
    assert resume_command("store", "abc") is None
    assert resume_command("cursor", "abc") is None


def test_hostile_ids_and_workspaces_stay_single_arguments() -> None:
    command = resume_command("claude", "x; rm -rf ~ #", "/tmp/a b'$(c)")
    assert command is not None
    words = shlex.split(command)
    assert words == ["cd", "/tmp/a b'$(c)", "&&", "claude", "--resume", "x; rm -rf ~ #"]
    assert resume_command("codex", "id") == "codex resume id"


def test_a_claude_subagents_transcript_has_no_resume_but_a_codex_fork_does() -> None:
    assert resume_command("claude", "c/agent-a1", "/w", child=True) is None
    assert resume_command("codex", "fork-1", "/w", child=True) == "cd /w && codex resume fork-1"
