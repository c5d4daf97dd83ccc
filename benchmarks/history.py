"""A deterministic generator of realistic Claude Code and Codex homes, at any size.

``generate_history(home, HistorySpec(transcripts=2000, target_bytes=1_400_000_000))`` writes

* ``<home>/.claude/projects/<escaped cwd>/<uuid>.jsonl`` main transcripts, shaped like Claude
  Code 1.x/2.x ones: a leading ``file-history-snapshot`` or ``summary`` line, user prompts,
  assistant messages streamed over several lines sharing one ``message.id`` (thinking, text,
  ``tool_use``), tool results as user lines with a ``toolUseResult`` copy of the output (so
  long outputs appear twice, as in real files), ``system`` ``turn_duration`` lines, ``progress``
  lines, compactions (``compact_boundary`` + ``isCompactSummary`` user line), ``ai-title``
  lines, inline sidechains (``isSidechain: true``, older versions) and ``Task`` spawns whose
  subagent transcript is ``<escaped cwd>/<uuid>/subagents/agent-<id>.jsonl``;
* ``<home>/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`` rollouts: ``session_meta``,
  ``turn_context``, injected environment context, ``event_msg`` user/agent messages,
  reasoning, ``function_call`` / ``function_call_output`` pairs, ``token_count`` events,
  ``task_started`` / ``task_complete`` turns and the occasional ``compacted`` record.

Sizes follow a log-normal distribution scaled so the whole home is close to ``target_bytes``
(within a few percent); tool outputs are log-normal too (median ~2 KB, up to ~120 KB).
Every main transcript holds one unique *needle* word (``needle<N>x``) in one user prompt, so
benchmarks can search for a word that occurs in exactly one known session.

Invariants: the same spec gives byte-identical files and identical mtimes (each file's mtime
is its last line's timestamp); nothing outside ``home`` is written.

Run ``python benchmarks/history.py HOME --transcripts 2000 --target-bytes 1.4e9``.
"""

from __future__ import annotations

import argparse
import calendar
import json
import os
import random
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["HistoryManifest", "HistorySpec", "generate_history", "main", "needle"]

START_MS = 1_764_547_200_000  # 2025-12-01T00:00:00Z
"""Creation time of the newest transcripts; older ones are spread over the 120 days before."""

SPAN_MS = 120 * 86_400_000

DEFAULT_SEED = 20251201

_WORDS = (
    "the to and of a in is it that for this we on with be test not file as are was you can at "
    "from but if or so now let have will by should then error fix run check function value "
    "code line use when one all there which what need see an after before into new make "
    "changes instead because only also still same first update call return failing passes "
    "config case other data path module tests type version again flaky retry timeout cache "
    "index query schema migration deploy build release branch merge commit review refactor "
    "handler request response client server token session user account payment invoice "
    "parser lexer render template component state reducer effect hook router endpoint "
    "database connection pool worker queue job scheduler metric logging trace span latency "
    "memory leak crash panic exception stack frame thread lock race deadlock optimistic "
    "pessimistic transaction rollback snapshot backup restore permission role policy"
).split()

_PROJECTS = (
    "billing-api",
    "web-dashboard",
    "ml-pipeline",
    "auth-service",
    "mobile-app",
    "infra-terraform",
    "search-indexer",
    "docs-site",
    "payments-gateway",
    "data-warehouse",
    "chat-frontend",
    "cli-tools",
    "sessionquery",
    "game-engine",
    "compiler",
    "blog",
)

_TOOLS = ("Bash", "Read", "Edit", "Grep", "Glob", "Write", "TodoWrite", "WebFetch")
_CODEX_TOOLS = ("shell", "apply_patch", "update_plan", "view_image")
_EXTENSIONS = (".py", ".ts", ".rs", ".go", ".tsx", ".sql", ".yaml", ".md")
_CLAUDE_VERSIONS = ("1.0.98", "1.0.120", "2.0.14", "2.0.27", "2.0.55", "2.1.3", "2.1.12")
_MODELS = ("claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805", "claude-haiku-4-5")
_PROMPT_OPENERS = (
    "Can you look into why",
    "Please fix the",
    "I think there is a bug where",
    "Refactor the",
    "Add a test for",
    "Explain how",
    "Why does",
    "Make the",
    "Investigate the flaky test in",
    "Help me write",
)


def needle(index: int) -> str:
    """The unique word planted in main transcript ``index`` (0-based)."""
    return f"needle{index}x"


@dataclass(frozen=True, slots=True)
class HistorySpec:
    """What to generate.

    Attributes:
        transcripts: main transcripts (Claude and Codex together; subagent files come on top).
        target_bytes: approximate total size of all files.
        codex_share: fraction of the transcripts that are Codex rollouts.
        subagent_share: fraction of Claude transcripts that spawn subagent files.
        inline_sidechain_share: fraction of Claude transcripts with inline sidechain runs.
        compaction_bytes: a Claude/Codex transcript compacts roughly every this many bytes.
        seed: the random seed; equal specs give byte-identical homes.
    """

    transcripts: int = 200
    target_bytes: int = 140_000_000
    codex_share: float = 0.2
    subagent_share: float = 0.25
    inline_sidechain_share: float = 0.1
    compaction_bytes: int = 2_500_000
    seed: int = DEFAULT_SEED

    def __post_init__(self) -> None:
        if self.transcripts < 1:
            raise ValueError("transcripts must be at least 1")
        if self.target_bytes < 4096 * self.transcripts:
            raise ValueError("target_bytes must allow at least 4 KiB per transcript")
        for name in ("codex_share", "subagent_share", "inline_sidechain_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1")


@dataclass(slots=True)
class HistoryManifest:
    """What was written.

    Attributes:
        home: the home folder (holds ``.claude`` and ``.codex``).
        claude_projects: ``<home>/.claude/projects``.
        codex_sessions: ``<home>/.codex/sessions``.
        transcripts: main transcripts written.
        files: every file written (subagent files included).
        bytes: total bytes written.
        lines: total lines written.
        needles: ``needle word -> (path relative to home, session id)`` of each main transcript.
        seconds: generation wall time.
    """

    home: str
    claude_projects: str
    codex_sessions: str
    transcripts: int = 0
    files: int = 0
    bytes: int = 0
    lines: int = 0
    needles: dict[str, tuple[str, str]] = field(default_factory=dict[str, tuple[str, str]])
    seconds: float = 0.0


# --------------------------------------------------------------------------- text


class _Text:
    """Pools of words, sentences and output lines, built once per generation."""

    def __init__(self, rng: random.Random) -> None:
        syllables = [c + v for c in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u")]
        pseudo = ["".join(rng.choices(syllables, k=rng.randint(2, 4))) for _ in range(3000)]
        self.words = _WORDS + pseudo
        weights = [1.0 / (rank + 1) ** 0.9 for rank in range(len(self.words))]
        self.sentences = [
            " ".join(rng.choices(self.words, weights=weights, k=rng.randint(6, 22))).capitalize()
            + "."
            for _ in range(4000)
        ]
        idents = [rng.choice(pseudo) + "_" + rng.choice(pseudo) for _ in range(400)]
        self.paths = [
            f"src/{rng.choice(pseudo)}/{rng.choice(idents)}{rng.choice(_EXTENSIONS)}"
            for _ in range(600)
        ]
        self.output_lines = self._output_lines(rng, idents)

    def _output_lines(self, rng: random.Random, idents: list[str]) -> list[str]:
        out: list[str] = []
        for _ in range(6000):
            kind = rng.randrange(6)
            path = rng.choice(self.paths)
            if kind == 0:
                out.append(f"{rng.randint(1, 999):>6}\t    def {rng.choice(idents)}(self, value):")
            elif kind == 1:
                out.append(f"{path}:{rng.randint(1, 900)}: {rng.choice(self.sentences)}")
            elif kind == 2:
                name = rng.choice(idents)
                verdict = rng.choice(("PASSED", "PASSED", "PASSED", "FAILED", "SKIPPED"))
                out.append(f"tests/test_{name}.py::test_{rng.choice(idents)} {verdict}")
            elif kind == 3:
                out.append(
                    f"2025-11-{rng.randint(1, 28):02d} {rng.randint(0, 23):02d}:"
                    f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d} INFO "
                    f"{rng.choice(idents)}: {rng.choice(self.sentences)}"
                )
            elif kind == 4:
                out.append(f"-rw-r--r--  1 dev dev {rng.randint(10, 99999):>6} Nov 12 {path}")
            else:
                out.append(f"    {rng.choice(idents)} = {rng.choice(idents)}({rng.randint(0, 99)})")
        return out

    def prose(self, rng: random.Random, sentences: int) -> str:
        return " ".join(rng.choices(self.sentences, k=sentences))

    def output(self, rng: random.Random, size: int) -> str:
        lines = max(1, size // 60)
        return "\n".join(rng.choices(self.output_lines, k=lines))


def _tool_output_size(rng: random.Random) -> int:
    return int(min(120_000, max(40, rng.lognormvariate(8.0, 1.3))))


def _iso(ms: int) -> str:
    seconds, millis = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _dump(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


# --------------------------------------------------------------------------- Claude Code


@dataclass(slots=True)
class _ClaudeWriter:
    """Writes one Claude transcript line by line, tracking the uuid chain and the clock."""

    rng: random.Random
    text: _Text
    session_id: str
    cwd: str
    version: str
    clock: int
    lines: list[str] = field(default_factory=list[str])
    size: int = 0
    parent: str | None = None
    sidechain: bool = False
    agent_id: str | None = None
    cap: int = 120_000

    def put(self, record: dict[str, Any]) -> None:
        line = _dump(record)
        self.lines.append(line)
        self.size += len(line.encode("utf-8"))

    def tick(self, low: int = 400, high: int = 40_000) -> str:
        self.clock += self.rng.randint(low, high)
        return _iso(self.clock)

    def envelope(self, kind: str) -> dict[str, Any]:
        own = _uuid(self.rng)
        record: dict[str, Any] = {
            "parentUuid": self.parent,
            "isSidechain": self.sidechain,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": self.version,
            "gitBranch": "main",
        }
        if self.agent_id is not None:
            record["agentId"] = self.agent_id
        record.update({"type": kind, "uuid": own, "timestamp": self.tick()})
        self.parent = own
        return record

    def prompt(self, words: str) -> None:
        record = self.envelope("user")
        record["message"] = {"role": "user", "content": words}
        self.put(record)

    def assistant_turn(self, calls: int, spawn: list[str] | None = None) -> None:
        message_id = "msg_" + _uuid(self.rng).replace("-", "")[:24]
        request = "req_" + _uuid(self.rng).replace("-", "")[:24]
        model = self.rng.choice(_MODELS)
        blocks: list[dict[str, Any]] = []
        if self.rng.random() < 0.4:
            blocks.append(
                {
                    "type": "thinking",
                    "thinking": self.text.prose(self.rng, self.rng.randint(2, 8)),
                    "signature": _uuid(self.rng).replace("-", "") * 4,
                }
            )
        blocks.append({"type": "text", "text": self.text.prose(self.rng, self.rng.randint(1, 6))})
        tool_ids: list[tuple[str, str]] = []
        for _ in range(calls):
            tool = self.rng.choice(_TOOLS)
            tool_id = "toolu_" + _uuid(self.rng).replace("-", "")[:24]
            path = self.rng.choice(self.text.paths)
            arguments: dict[str, Any] = (
                {"command": f"pytest -q {path}", "description": "Run the tests"}
                if tool == "Bash"
                else {"file_path": f"{self.cwd}/{path}"}
            )
            if tool == "Edit":
                arguments["old_string"] = self.text.output(self.rng, 200)
                arguments["new_string"] = self.text.output(self.rng, 240)
            blocks.append({"type": "tool_use", "id": tool_id, "name": tool, "input": arguments})
            tool_ids.append((tool_id, tool))
        if spawn is not None:
            tool_id = "toolu_" + _uuid(self.rng).replace("-", "")[:24]
            prompt = self.text.prose(self.rng, 3)
            blocks.append(
                {
                    "type": "tool_use",
                    "id": tool_id,
                    "name": "Task",
                    "input": {"description": "Explore", "prompt": prompt},
                }
            )
            tool_ids.append((tool_id, "Task"))
        for index, block in enumerate(blocks):  # streamed: one line per block
            record = self.envelope("assistant")
            usage = {
                "input_tokens": self.rng.randint(3, 40),
                "cache_creation_input_tokens": self.rng.randint(0, 9000),
                "cache_read_input_tokens": self.rng.randint(0, 90000),
                "output_tokens": self.rng.randint(1, 900),
            }
            record["message"] = {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [block],
                "stop_reason": "tool_use" if index == len(blocks) - 1 and tool_ids else None,
                "stop_sequence": None,
                "usage": usage,
            }
            record["requestId"] = request
            self.put(record)
        for tool_id, tool in tool_ids:
            if tool == "Task" and spawn is not None:
                agent = "a" + _uuid(self.rng).replace("-", "")[:16]
                spawn.append(agent)
                output = self.text.prose(self.rng, self.rng.randint(3, 12))
                result: dict[str, Any] = {"status": "completed", "agentId": agent}
            else:
                output = self.text.output(self.rng, min(self.cap, _tool_output_size(self.rng)))
                result = {"stdout": output, "stderr": "", "interrupted": False}
            if tool == "Bash" and self.rng.random() < 0.3:
                record = self.envelope("progress")
                record["data"] = {"type": "bash_progress", "output": output[:200]}
                record["toolUseID"] = tool_id
                record["parentToolUseID"] = tool_id
                self.put(record)
            record = self.envelope("user")
            is_error = self.rng.random() < 0.05
            record["message"] = {
                "role": "user",
                "content": [
                    {
                        "tool_use_id": tool_id,
                        "type": "tool_result",
                        "content": output,
                        "is_error": is_error,
                    }
                ],
            }
            record["toolUseResult"] = result
            self.put(record)

    def turn_end(self) -> None:
        record = self.envelope("system")
        record.update({"subtype": "turn_duration", "durationMs": self.rng.randint(800, 300_000)})
        self.put(record)

    def compaction(self) -> None:
        last = self.parent
        record = self.envelope("system")
        record.update(
            {
                "parentUuid": None,
                "logicalParentUuid": last,
                "subtype": "compact_boundary",
                "content": "Conversation compacted",
                "compactMetadata": {"trigger": "auto", "preTokens": self.rng.randint(1, 9) * 20000},
            }
        )
        self.put(record)
        summary = self.envelope("user")
        summary["isCompactSummary"] = True
        summary["isVisibleInTranscriptOnly"] = True
        summary["message"] = {
            "role": "user",
            "content": "This session is being continued from a previous conversation that ran "
            "out of context. The conversation is summarized below:\n"
            + self.text.prose(self.rng, self.rng.randint(10, 40)),
        }
        self.put(summary)


def _prompt_words(rng: random.Random, text: _Text, extra: str = "") -> str:
    opener = rng.choice(_PROMPT_OPENERS)
    body = text.prose(rng, rng.randint(1, 4))
    words = f"{opener} {rng.choice(text.paths)}? {body}"
    return f"{words} {extra}".rstrip() if extra else words


def _claude_transcript(
    rng: random.Random, text: _Text, spec: HistorySpec, *, budget: int, index: int, start: int
) -> tuple[str, str, list[str], list[tuple[str, list[str]]]]:
    """One main transcript: (session id, escaped-cwd folder, lines, [(agent id, lines)])."""
    project = rng.choice(_PROJECTS)
    cwd = f"/home/dev/src/{project}"
    session_id = _uuid(rng)
    writer = _ClaudeWriter(rng, text, session_id, cwd, rng.choice(_CLAUDE_VERSIONS), start)
    writer.cap = max(200, budget // 12)
    if rng.random() < 0.5:
        writer.put(
            {
                "type": "file-history-snapshot",
                "messageId": _uuid(rng),
                "snapshot": {
                    "messageId": _uuid(rng),
                    "trackedFileBackups": {},
                    "timestamp": _iso(start),
                },
                "isSnapshotUpdate": False,
            }
        )
    else:
        writer.put({"type": "summary", "summary": text.prose(rng, 1)[:70], "leafUuid": _uuid(rng)})
    spawns = rng.random() < spec.subagent_share
    inline = rng.random() < spec.inline_sidechain_share
    agents: list[tuple[str, list[str]]] = []
    needle_turn = 0
    turn = 0
    next_compaction = spec.compaction_bytes
    while writer.size < budget or turn == 0:
        extra = needle(index) if turn == needle_turn else ""
        writer.prompt(_prompt_words(rng, text, extra))
        steps = rng.randint(1, 5)
        for step in range(steps):
            spawn: list[str] | None = [] if spawns and step == 0 and rng.random() < 0.3 else None
            writer.assistant_turn(rng.randint(0, 3) if step < steps - 1 else 0, spawn)
            for agent in spawn or ():
                agent_lines = _subagent(rng, text, writer, agent)
                writer.size += sum(len(line.encode("utf-8")) for line in agent_lines)
                agents.append((agent, agent_lines))
            if inline and rng.random() < 0.2:
                _inline_sidechain(writer)
        writer.turn_end()
        if turn == 0 and rng.random() < 0.6:
            record = {
                "type": "ai-title",
                "aiTitle": text.prose(rng, 1)[:60],
                "sessionId": session_id,
            }
            writer.put(record)
        if writer.size > next_compaction:
            writer.compaction()
            next_compaction += spec.compaction_bytes
        turn += 1
    folder = cwd.replace("/", "-").replace(".", "-")
    return session_id, folder, writer.lines, agents


def _inline_sidechain(writer: _ClaudeWriter) -> None:
    main_parent = writer.parent
    writer.sidechain, writer.parent = True, None
    writer.prompt(writer.text.prose(writer.rng, 2))
    writer.assistant_turn(writer.rng.randint(1, 2))
    writer.assistant_turn(0)
    writer.sidechain, writer.parent = False, main_parent


def _subagent(rng: random.Random, text: _Text, parent: _ClaudeWriter, agent: str) -> list[str]:
    child = _ClaudeWriter(
        rng, text, parent.session_id, parent.cwd, parent.version, parent.clock, sidechain=True
    )
    child.agent_id = agent
    child.cap = parent.cap
    child.prompt(text.prose(rng, 3))
    for _ in range(rng.randint(1, 6)):
        child.assistant_turn(rng.randint(1, 3))
    child.assistant_turn(0)
    parent.clock = max(parent.clock, child.clock)
    return child.lines


# --------------------------------------------------------------------------- Codex


def _codex_transcript(
    rng: random.Random, text: _Text, spec: HistorySpec, *, budget: int, index: int, start: int
) -> tuple[str, list[str]]:
    session_id = _uuid(rng)
    cwd = f"/home/dev/src/{rng.choice(_PROJECTS)}"
    cap = max(200, budget // 12)
    clock = start
    lines: list[str] = []
    size = 0

    def put(kind: str, payload: dict[str, Any]) -> None:
        nonlocal clock, size
        clock += rng.randint(200, 30_000)
        line = _dump({"timestamp": _iso(clock), "type": kind, "payload": payload})
        lines.append(line)
        size += len(line.encode("utf-8"))

    meta = {
        "id": session_id,
        "timestamp": _iso(start),
        "cwd": cwd,
        "originator": "codex_cli_rs",
        "cli_version": "0.46.0",
        "instructions": None,
        "source": "cli",
        "model_provider": "openai",
        "git": {"commit_hash": _uuid(rng).replace("-", "")[:40], "branch": "main"},
    }
    put("session_meta", meta)
    env = (
        f"<environment_context>\n  <cwd>{cwd}</cwd>\n"
        "  <approval_policy>on-request</approval_policy>\n</environment_context>"
    )
    put(
        "response_item",
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": env}]},
    )
    turn = 0
    next_compaction = spec.compaction_bytes
    while size < budget or turn == 0:
        turn_id = _uuid(rng)
        put(
            "event_msg",
            {"type": "task_started", "turn_id": turn_id, "model_context_window": 272000},
        )
        put(
            "turn_context",
            {
                "cwd": cwd,
                "approval_policy": "on-request",
                "sandbox_policy": {"mode": "workspace-write"},
                "model": "gpt-5-codex",
                "effort": "high",
                "summary": "auto",
            },
        )
        prompt = _prompt_words(rng, text, needle(index) if turn == 0 else "")
        put(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": prompt}],
            },
        )
        put("event_msg", {"type": "user_message", "message": prompt, "images": []})
        for _ in range(rng.randint(1, 6)):
            summary = text.prose(rng, 1)
            put("event_msg", {"type": "agent_reasoning", "text": summary})
            put(
                "response_item",
                {
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": summary}],
                    "content": None,
                    "encrypted_content": "gAAAA" + _uuid(rng) * 8,
                },
            )
            call_id = "call_" + _uuid(rng).replace("-", "")[:24]
            tool = rng.choice(_CODEX_TOOLS)
            arguments = json.dumps(
                {
                    "command": [
                        "bash",
                        "-lc",
                        f"rg -n {rng.choice(text.words)} {rng.choice(text.paths)}",
                    ],
                    "workdir": cwd,
                }
            )
            put(
                "response_item",
                {"type": "function_call", "name": tool, "arguments": arguments, "call_id": call_id},
            )
            output = json.dumps(
                {
                    "output": text.output(rng, min(cap, _tool_output_size(rng))),
                    "metadata": {
                        "exit_code": 0 if rng.random() < 0.9 else 1,
                        "duration_seconds": 0.4,
                    },
                }
            )
            put(
                "response_item",
                {"type": "function_call_output", "call_id": call_id, "output": output},
            )
            put(
                "event_msg",
                {
                    "type": "token_count",
                    "info": {
                        "total_token_usage": {
                            "input_tokens": rng.randint(1000, 90000),
                            "output_tokens": rng.randint(10, 4000),
                        }
                    },
                },
            )
        answer = text.prose(rng, rng.randint(1, 6))
        put("event_msg", {"type": "agent_message", "message": answer})
        put(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": answer}],
            },
        )
        put(
            "event_msg",
            {"type": "task_complete", "turn_id": turn_id, "last_agent_message": answer[:200]},
        )
        if size > next_compaction:
            put("compacted", {"message": text.prose(rng, rng.randint(10, 30))})
            next_compaction += spec.compaction_bytes
        turn += 1
    return session_id, lines


# --------------------------------------------------------------------------- driver


def _budgets(rng: random.Random, spec: HistorySpec) -> list[int]:
    weights = [rng.lognormvariate(0.0, 1.1) for _ in range(spec.transcripts)]
    total = sum(weights)
    # Each transcript overshoots its budget by part of a turn (~7% on average): aim below.
    scale = spec.target_bytes * 0.93 / total
    return [max(3000, int(weight * scale)) for weight in weights]


def _write(path: Path, lines: list[str], mtime_ms: int) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(lines).encode("utf-8")
    path.write_bytes(data)
    os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return len(data)


def _entries(spec: HistorySpec) -> Iterator[tuple[int, bool, int, int, random.Random]]:
    rng = random.Random(spec.seed)
    budgets = _budgets(rng, spec)
    for index, budget in enumerate(budgets):
        codex = rng.random() < spec.codex_share
        start = START_MS - SPAN_MS + rng.randrange(SPAN_MS)
        yield index, codex, budget, start, random.Random(f"{spec.seed}:{index}")


def generate_history(
    home: str | os.PathLike[str], spec: HistorySpec, *, progress: bool = False
) -> HistoryManifest:
    """Write a Claude Code + Codex home under ``home`` (which must not hold ``.claude`` or
    ``.codex`` yet) and return what was written.

    Raises:
        FileExistsError: ``home`` already holds a ``.claude`` or ``.codex`` folder.
    """
    began = time.perf_counter()
    root = Path(home)
    claude, codex = root / ".claude" / "projects", root / ".codex" / "sessions"
    for existing in (root / ".claude", root / ".codex"):
        if existing.exists():
            raise FileExistsError(f"{existing} already exists; generate into a fresh home")
    claude.mkdir(parents=True)
    codex.mkdir(parents=True)
    manifest = HistoryManifest(str(root), str(claude), str(codex))
    text = _Text(random.Random(spec.seed))
    for index, is_codex, budget, start, rng in _entries(spec):
        if is_codex:
            session_id, lines = _codex_transcript(
                rng, text, spec, budget=budget, index=index, start=start
            )
            stamp = time.strftime("%Y/%m/%d", time.gmtime(start // 1000))
            name = time.strftime("rollout-%Y-%m-%dT%H-%M-%S", time.gmtime(start // 1000))
            path = codex / stamp / f"{name}-{session_id}.jsonl"
            files = [(path, lines)]
        else:
            session_id, folder, lines, agents = _claude_transcript(
                rng, text, spec, budget=budget, index=index, start=start
            )
            path = claude / folder / f"{session_id}.jsonl"
            files = [(path, lines)]
            for agent, agent_lines in agents:
                sub = claude / folder / session_id / "subagents" / f"agent-{agent}.jsonl"
                files.append((sub, agent_lines))
        last = _last_time(lines, start)
        for file_path, file_lines in files:
            manifest.bytes += _write(file_path, file_lines, last)
            manifest.lines += len(file_lines)
            manifest.files += 1
        manifest.transcripts += 1
        manifest.needles[needle(index)] = (path.relative_to(root).as_posix(), session_id)
        if progress and (index + 1) % 100 == 0:
            print(f"{index + 1} transcripts, {manifest.bytes / 1e6:.0f} MB", file=sys.stderr)
    manifest.seconds = time.perf_counter() - began
    return manifest


def _last_time(lines: list[str], default: int) -> int:
    record = json.loads(lines[-1])
    stamp = record.get("timestamp")
    if not isinstance(stamp, str):
        return default
    seconds = calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S"))
    return seconds * 1000 + int(stamp[20:23])


def main(argv: list[str] | None = None) -> int:
    """Command line: write a history home and print its manifest (without needles) as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("home", help="folder to write .claude/ and .codex/ into")
    defaults = HistorySpec()
    parser.add_argument("--transcripts", type=int, default=defaults.transcripts)
    parser.add_argument("--target-bytes", type=float, default=defaults.target_bytes)
    parser.add_argument("--codex-share", type=float, default=defaults.codex_share)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args(argv)
    try:
        spec = HistorySpec(
            transcripts=args.transcripts,
            target_bytes=int(args.target_bytes),
            codex_share=args.codex_share,
            seed=args.seed,
        )
        manifest = generate_history(args.home, spec, progress=True)
    except (ValueError, FileExistsError) as exc:
        print(f"history.py: {exc}", file=sys.stderr)
        return 2
    summary = asdict(manifest)
    summary.pop("needles")
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
