"""No-change ``sessionquery list`` over every format, beside one over Claude Code and Codex only.

    python benchmarks/formats_bench.py                      # 2,000 sessions, ~300 MB per home
    python benchmarks/formats_bench.py --sessions 200 --target-bytes 3e7   # a quick run

Writes two homes of the same size (sessions and bytes): one with Claude Code and Codex only
(``history.py``), one where those hold a quarter of the sessions and Gemini CLI, Qwen Code,
Copilot CLI, OpenCode (one ``opencode.db``), Cursor (one ``state.vscdb``, every other
conversation also as an agent transcript) and VS Code Copilot Chat share the rest,
each session a few turns of prompts, replies and tool calls whose outputs follow
``history.py``'s size distribution. Then it runs the real command line with nothing but
``HOME`` (and a private ``SESSIONQUERY_HOME``) set: one listing to fill the importer cache, then
``--reps`` no-change ``sessionquery list --limit 5`` in each home, alternating homes. The bar:
the all-formats home costs no more than 1.5 times the Claude + Codex home.

Writes its section of ``RESULTS.md`` (``report.replace_section``) with ``--results``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from history import HistorySpec, _budgets, _Text, _tool_output_size, generate_history  # noqa: E402
from report import TIMES, replace_section  # noqa: E402

__all__ = ["main", "render", "run"]

BAR = 1.5
"""The no-change listing of the all-formats home may cost at most this many times more."""

KINDS = ("gemini", "qwen", "copilot", "opencode", "cursor", "vscode")
_START = 1_764_547_200_000
_DAY = 86_400_000


def _iso(ms: int) -> str:
    seconds, millis = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


def _uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


@dataclass(frozen=True, slots=True)
class _Job:
    """One session to write: its random source, text pools, size budget, start time, number."""

    rng: random.Random
    text: _Text
    budget: int
    start: int
    number: int

    @property
    def project(self) -> str:
        return f"proj{self.number % 40}"

    def time(self, turn: int) -> int:
        return self.start + turn * 60_000

    def turns(self) -> list[tuple[str, str, str, str]]:
        """``(prompt, tool name, tool output, reply)`` turns adding up to about the budget."""
        rng, text = self.rng, self.text
        out: list[tuple[str, str, str, str]] = []
        size = 0
        while size < self.budget or not out:
            prompt = text.prose(rng, rng.randint(1, 4))
            output = text.output(rng, _tool_output_size(rng))
            reply = text.prose(rng, rng.randint(2, 8))
            out.append((prompt, rng.choice(("read_file", "shell", "grep", "edit")), output, reply))
            size += len(prompt) + len(output) + len(reply) + 400
        return out


def _lines(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records)


def _write(path: Path, records: list[dict[str, Any]]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = _lines(records)
    path.write_text(data)
    return len(data)


def _gemini(root: Path, job: _Job) -> int:
    sid = _uid(job.rng)
    folder = root / ".gemini" / "tmp" / job.project
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".project_root").write_text(f"/home/me/{job.project}")
    meta = {"sessionId": sid, "projectHash": "0" * 64, "startTime": _iso(job.start)}
    records: list[dict[str, Any]] = [meta]
    for i, (prompt, tool, output, reply) in enumerate(job.turns()):
        t = _iso(job.time(i))
        response = {"id": f"c{i}", "name": tool, "response": {"output": output}}
        call: dict[str, Any] = {"id": f"c{i}", "name": tool, "args": {}, "timestamp": t}
        call |= {"status": "success", "result": [{"functionResponse": response}]}
        user = {"id": f"u{i}", "timestamp": t, "type": "user", "content": [{"text": prompt}]}
        model = {"id": f"g{i}", "timestamp": t, "type": "gemini", "content": reply}
        records += [user, {**model, "toolCalls": [call]}]
    stamp = time.strftime("%Y-%m-%dT%H-%M", time.gmtime(job.start // 1000))
    return _write(folder / "chats" / f"session-{stamp}-{sid[:8]}.jsonl", records)


def _qwen(root: Path, job: _Job) -> int:
    sid = _uid(job.rng)
    records: list[dict[str, Any]] = []
    previous = None
    for i, (prompt, tool, output, reply) in enumerate(job.turns()):
        base = {"sessionId": sid, "timestamp": _iso(job.time(i)), "cwd": f"/home/me/{job.project}"}
        call = {"functionCall": {"id": f"c{i}", "name": tool, "args": {}}}
        response = {
            "functionResponse": {"id": f"c{i}", "name": tool, "response": {"output": output}}
        }
        for kind, role, part in (
            ("user", "user", {"text": prompt}),
            ("assistant", "model", call),
            ("tool_result", "user", response),
            ("assistant", "model", {"text": reply}),
        ):
            uid = _uid(job.rng)
            message = {"role": role, "parts": [part]}
            records.append(
                {"uuid": uid, "parentUuid": previous, **base, "type": kind, "message": message}
            )
            previous = uid
    folder = root / ".qwen" / "projects" / f"-home-me-{job.project}" / "chats"
    return _write(folder / f"{sid}.jsonl", records)


def _copilot(root: Path, job: _Job) -> int:
    sid = _uid(job.rng)
    context = {"cwd": f"/home/me/{job.project}"}
    start = {
        "sessionId": sid,
        "version": 1,
        "producer": "copilot-agent",
        "startTime": _iso(job.start),
    }
    events: list[tuple[str, int, dict[str, Any]]] = [
        ("session.start", 0, {**start, "context": context})
    ]
    for i, (prompt, tool, output, reply) in enumerate(job.turns()):
        request = {"toolCallId": f"c{i}", "name": tool, "arguments": {}}
        done = {"toolCallId": f"c{i}", "success": True, "result": {"content": output}}
        events += [
            ("user.message", i, {"content": prompt}),
            (
                "assistant.message",
                i,
                {"messageId": f"m{i}", "content": "", "toolRequests": [request]},
            ),
            ("tool.execution_complete", i, done),
            ("assistant.message", i, {"messageId": f"r{i}", "content": reply}),
        ]
    records = [
        {
            "type": kind,
            "id": _uid(job.rng),
            "parentId": None,
            "timestamp": _iso(job.time(i)),
            "data": data,
        }
        for kind, i, data in events
    ]
    return _write(root / ".copilot" / "session-state" / sid / "events.jsonl", records)


def _cursor_transcript(root: Path, job: _Job, cid: str) -> int:
    def message(role: str, block: dict[str, Any]) -> dict[str, Any]:
        return {"role": role, "message": {"content": [block]}}

    records: list[dict[str, Any]] = []
    for i, (prompt, tool, _output, reply) in enumerate(job.turns()):
        records += [
            message("user", {"type": "text", "text": f"<user_query>{prompt}</user_query>"}),
            message("assistant", {"type": "tool_use", "id": f"t{i}", "name": tool, "input": {}}),
            message("assistant", {"type": "text", "text": reply}),
        ]
    folder = root / ".cursor" / "projects" / f"home-me-{job.project}" / "agent-transcripts"
    return _write(folder / f"{cid}.jsonl", records)


_CURSOR_TABLES = """
CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
"""


def _cursor(conn: sqlite3.Connection, root: Path, job: _Job, heads: list[Any]) -> int:
    """One conversation in Cursor's ``state.vscdb`` (every other one also as an agent
    transcript of the same id, which the importer must list once)."""
    cid = _uid(job.rng)
    folder = f"/home/me/{job.project}"
    headers, size = [], 0
    for i, (prompt, tool, output, reply) in enumerate(job.turns()):
        call = {"name": tool, "toolCallId": f"tool_{cid}_{i}", "status": "completed"}
        call |= {"params": "{}", "result": json.dumps({"output": output})}
        for n, bubble in enumerate(
            (
                {"type": 1, "text": prompt},
                {"type": 2, "text": "", "capabilityType": 15, "toolFormerData": call},
                {"type": 2, "text": reply},
            )
        ):
            bid = f"{i:04d}-{n}"
            value = json.dumps({"_v": 3, "bubbleId": bid, "createdAt": _iso(job.time(i))} | bubble)
            conn.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"bubbleId:{cid}:{bid}", value))
            headers.append({"bubbleId": bid, "type": bubble["type"]})
            size += len(value)
    data = {"_v": 16, "composerId": cid, "name": f"conversation {job.number}"}
    data |= {"createdAt": job.start, "lastUpdatedAt": job.start, "unifiedMode": "agent"}
    data |= {"fullConversationHeadersOnly": headers}
    conn.execute(
        "INSERT INTO cursorDiskKV VALUES (?, ?)", (f"composerData:{cid}", json.dumps(data))
    )
    uri = {"fsPath": folder, "path": folder, "scheme": "file"}
    heads.append(
        {"type": "head", "composerId": cid, "workspaceIdentifier": {"id": "w", "uri": uri}}
    )
    if job.number % 2 == 0:
        size += _cursor_transcript(root, job, cid)
    return size


def _vscode(root: Path, job: _Job) -> int:
    workspace = root / ".config" / "Code" / "User" / "workspaceStorage" / f"ws-{job.project}"
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "workspace.json").write_text(
        json.dumps({"folder": f"file:///home/me/{job.project}"})
    )
    requests = []
    for i, (prompt, tool, output, reply) in enumerate(job.turns()):
        details = {"output": [{"type": "embed", "isText": True, "value": output}]}
        invocation: dict[str, Any] = {"kind": "toolInvocationSerialized", "toolCallId": f"t{i}"}
        invocation["toolId"] = tool
        invocation |= {"isComplete": True, "isConfirmed": {"type": 1}, "resultDetails": details}
        response = [invocation, {"value": reply}]
        requests.append(
            {"requestId": f"request_{i}", "timestamp": job.time(i), "message": {"text": prompt}}
            | {"response": response}
        )
    sid = _uid(job.rng)
    state = {"version": 3, "sessionId": sid, "creationDate": job.start, "requests": requests[:1]}
    ops = [{"kind": 0, "v": state}]
    ops += [{"kind": 2, "k": ["requests"], "v": [request]} for request in requests[1:]]
    return _write(workspace / "chatSessions" / f"{sid}.jsonl", ops)


_OPENCODE_SCHEMA = """
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text,
  slug text NOT NULL, directory text NOT NULL, title text NOT NULL, version text NOT NULL,
  revert text, time_created integer NOT NULL, time_updated integer NOT NULL);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX part_session_idx ON part (session_id);
"""

_SESSION_ROW = "INSERT INTO session VALUES (?, 'p', NULL, 's', ?, ?, '1.2.27', NULL, ?, ?)"
_MESSAGE_ROW = "INSERT INTO message VALUES (?, ?, ?, ?, ?)"
_PART_ROW = "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)"


def _opencode(conn: sqlite3.Connection, job: _Job) -> int:
    sid = "ses_" + uuid.UUID(int=job.rng.getrandbits(128)).hex[:26]
    folder = f"/home/me/{job.project}"
    conn.execute(_SESSION_ROW, (sid, folder, f"session {job.number}", job.start, job.start + 1))
    size = 0
    for i, (prompt, tool, output, reply) in enumerate(job.turns()):
        t = job.time(i)
        state = {"status": "completed", "input": {}, "output": output, "title": tool}
        state |= {"metadata": {}, "time": {"start": t, "end": t}}
        tool_part = {"type": "tool", "callID": f"c{i}", "tool": tool, "state": state}
        for role, parts in (
            ("user", [{"type": "text", "text": prompt}]),
            ("assistant", [tool_part, {"type": "text", "text": reply}]),
        ):
            mid = f"msg_{sid[4:]}_{i:04d}{role[0]}"
            info = json.dumps({"role": role, "time": {"created": t}})
            conn.execute(_MESSAGE_ROW, (mid, sid, t, t, info))
            for j, part in enumerate(parts):
                data = json.dumps(part)
                size += len(data)
                conn.execute(_PART_ROW, (f"prt_{mid[4:]}_{j}", mid, sid, t, t, data))
    return size


def generate_formats(home: Path, sessions: int, target_bytes: int, seed: int) -> dict[str, Any]:
    """A home where Claude Code and Codex hold a quarter of the sessions and bytes and the six
    other formats share the rest; returns the sessions per kind and the bytes written."""
    quarter = max(1, sessions // 4)
    share = max(4096 * quarter, target_bytes // 4)
    generate_history(home, HistorySpec(transcripts=quarter, target_bytes=share, seed=seed))
    rest = max(1, sessions - quarter)
    spec = HistorySpec(transcripts=rest, target_bytes=max(4096 * rest, target_bytes - share))
    rng = random.Random(seed)
    text = _Text(rng)
    writers: dict[str, Callable[[Path, _Job], int]] = {
        "gemini": _gemini,
        "qwen": _qwen,
        "copilot": _copilot,
        "vscode": _vscode,
    }
    counts = dict.fromkeys(KINDS, 0)
    written = 0
    db = home / ".local" / "share" / "opencode" / "opencode.db"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.executescript(_OPENCODE_SCHEMA)
    state = home / ".config" / "Cursor" / "User" / "globalStorage" / "state.vscdb"
    state.parent.mkdir(parents=True)
    cursor = sqlite3.connect(state)
    cursor.execute("PRAGMA journal_mode = WAL")
    cursor.executescript(_CURSOR_TABLES)
    heads: list[Any] = []
    for n, budget in enumerate(_budgets(rng, spec)):
        kind = KINDS[n % len(KINDS)]
        job = _Job(
            random.Random(f"{seed}:{n}"), text, budget, _START - rng.randrange(120 * _DAY), n
        )
        if kind == "opencode":
            written += _opencode(conn, job)
        elif kind == "cursor":
            written += _cursor(cursor, home, job, heads)
        else:
            written += writers[kind](home, job)
        counts[kind] += 1
    headers = json.dumps({"allComposers": heads})
    cursor.execute("INSERT INTO ItemTable VALUES ('composer.composerHeaders', ?)", (headers,))
    for done in (conn, cursor):
        done.commit()
        done.close()
    return {"sessions": counts, "bytes": written}


def _size(home: Path) -> tuple[int, int]:
    files = [p for p in home.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def _list(home: Path, sq_home: Path) -> float:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            (
                "XDG_",
                "CODEX_",
                "CLAUDE_",
                "GEMINI_",
                "QWEN_",
                "COPILOT_",
                "VSCODE_",
                "SESSIONQUERY_",
            )
        )
    }
    env |= {"HOME": str(home), "SESSIONQUERY_HOME": str(sq_home), "NO_COLOR": "1"}
    began = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "sessionquery.cli", "list", "--limit", "5", "--no-titles"],
        env=env,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - began


def run(work: Path, sessions: int, target_bytes: int, reps: int, seed: int) -> dict[str, Any]:
    """Generate both homes under ``work`` and time the no-change listings side by side."""
    plain, every = work / "plain", work / "every"
    generate_history(plain, HistorySpec(transcripts=sessions, target_bytes=target_bytes, seed=seed))
    counts = generate_formats(every, sessions, target_bytes, seed)
    for home in (plain, every):
        _list(home, work / f"sq-{home.name}")  # the first listing reads everything
    times: dict[str, list[float]] = {"plain": [], "every": []}
    for _ in range(reps):
        for home in (plain, every):
            times[home.name].append(_list(home, work / f"sq-{home.name}"))
    plain_files, plain_bytes = _size(plain)
    every_files, every_bytes = _size(every)
    return {
        "sessions": sessions,
        "plain": {"files": plain_files, "bytes": plain_bytes, "seconds": times["plain"]},
        "every": {
            "files": every_files,
            "bytes": every_bytes,
            "seconds": times["every"],
            "kinds": counts["sessions"],
        },
        "load": os.getloadavg(),
        "reps": reps,
    }


def render(figures: dict[str, Any]) -> str:
    """The ``RESULTS.md`` section."""
    plain = statistics.median(figures["plain"]["seconds"])
    every = statistics.median(figures["every"]["seconds"])
    ratio = every / plain
    load = ", ".join(f"{x:.2f}" for x in figures["load"])
    kinds = ", ".join(f"{k} {v}" for k, v in figures["every"]["kinds"].items())
    verdict = "met" if ratio <= BAR else "NOT met"

    def row(name: str, home: dict[str, Any], seconds: float, vs: str, bar: str) -> str:
        size = f"{home['bytes'] / 1e6:.0f} MB"
        return f"| {name} | {home['files']} | {size} | {seconds:.2f} s | {vs} | {bar} |"

    return "\n".join([
        "## Every format: no-change list",
        "",
        f"`benchmarks/formats_bench.py`: {figures['sessions']} sessions per home, no-change "
        "`sessionquery list --limit 5 --no-titles` with only `HOME` set (wall time, Python "
        f"start-up included, median of {figures['reps']}, homes alternating; load average "
        f"{load} at the end).",
        "",
        "| home | files | size | no-change list | vs Claude Code + Codex | bar |",
        "|---|---|---|---|---|---|",
        row("Claude Code + Codex", figures["plain"], plain, f"1.00{TIMES}", ""),
        row("all eight formats", figures["every"], every, f"{ratio:.2f}{TIMES}",
            f"at most {BAR:.1f}{TIMES}: {verdict}"),
        "",
        f"The all-formats home: Claude Code and Codex a quarter of the sessions, then {kinds} "
        "(OpenCode's in one `opencode.db`; Cursor's in one `state.vscdb`, every other one also "
        "as an agent transcript of the same id, listed once).",
        "",
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Command line: generate, measure, print (and with ``--results``, write) the section."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--target-bytes", type=float, default=3e8)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=HistorySpec().seed)
    parser.add_argument("--workdir", help="where the homes go (default: a temporary folder)")
    parser.add_argument("--results", help="RESULTS.md to write the section into")
    parser.add_argument("--json", help="also write the raw figures to this file")
    args = parser.parse_args(argv)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="sq-formats-"))
    try:
        figures = run(work, args.sessions, int(args.target_bytes), args.reps, args.seed)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    section = render(figures)
    print(section)
    if args.results:
        replace_section(Path(args.results), section)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
