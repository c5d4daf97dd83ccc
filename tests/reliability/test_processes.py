"""Many processes on one store and one index (SPEC §13.2), end to end.

Four real ``sessionquery mcp`` servers (driven by the ``mcp`` SDK client over stdio), a loop of
``sessionquery search`` commands and a writer process appending turns all share one JSONL store
and one index file for a bounded time. Every tool call and every command must answer; a
retryable ``BUSY``/``INDEX_BUILDING`` answer is counted apart (the contract allows it) and must
stay rare. Each search for the word of the turn the writer flushed last must find the growing
session: a write in another process is seen by the next search. Afterwards the servers'
answers equal those of a fresh index built by one process.

The writer paces its turns (one every ``_TURN_PAUSE`` seconds) so that the run is bounded in
turns as well as in time; nothing waits on a timer to synchronise with another process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

from cli_support import clean_env
from reliability.stats import record
from sessionquery import SessionQuery
from sessionquery.model import SessionEvent, SessionHeader, messages
from sessionquery.persistence import JsonlPersistence
from sessionquery.search.sqlite import SqliteSearch
from sessionquery.tools import SessionQueryTools, ToolCaller

WORKSPACE = "/home/dev/src/ledger"
OTHER_WORKSPACE = "/home/dev/src/elsewhere"
GROWING = "ledger-growing"
SERVERS = 4
LOAD_SECONDS = 12.0
"""How long the writer appends turns while the servers and the command loop run."""
_TURN_PAUSE = 0.1
# Generous: four interpreters importing the SDK on a loaded two-core machine.
OVERALL_SECONDS = 300
CALL_SECONDS = 60
RETRYABLE = ("SESSION_QUERY_BUSY", "SESSION_QUERY_INDEX_BUILDING")

_WRITER = """
import sys, time
from sessionquery.model import SessionEvent, SessionHeader, messages
from sessionquery.persistence import JsonlPersistence
root, sid, cwd, seconds, pause = sys.argv[1], sys.argv[2], sys.argv[3], *map(float, sys.argv[4:6])
store = JsonlPersistence(root)
end = time.monotonic() + seconds
with store.create(SessionHeader(id=sid, created_at=1_000, cwd=cwd)) as writer:
    turn = 0
    while time.monotonic() < end:
        seq = writer.event_count
        text = f"ledger turn beacon{turn:04d}x of the growing session"
        asked = messages.user_message(text, id=f"u{seq}")
        noted = messages.assistant_message(f"noted beacon{turn:04d}x", turn=0, step=0)
        writer.append([
            SessionEvent(type="user/message", seq=seq, time=2_000 + seq, data=asked,
                         surface_op="append"),
            SessionEvent(type="assistant/message", seq=seq + 1, time=2_001 + seq, data=noted,
                         surface_op="append"),
        ])
        writer.flush()
        print(turn, flush=True)
        turn += 1
        time.sleep(pause)
print("done", turn, flush=True)
"""


def _beacon(turn: int) -> str:
    return f"beacon{turn:04d}x"


def _event(seq: int, text: str) -> SessionEvent:
    if seq % 2 == 0:
        asked = messages.user_message(text, id=f"u{seq}")
        return SessionEvent(
            type="user/message", seq=seq, time=1_000 + seq, data=asked, surface_op="append"
        )
    answered = messages.assistant_message(text, turn=0, step=0)
    return SessionEvent(
        type="assistant/message", seq=seq, time=1_000 + seq, data=answered, surface_op="append"
    )


def _make_store(root: Path) -> list[str]:
    """Six sessions in ``WORKSPACE`` and one elsewhere, all mentioning the ledger."""
    store = JsonlPersistence(root)
    ids = []
    topics = ["rounding", "currency", "refunds", "invoices", "taxes", "exports"]
    for number, topic in enumerate(topics):
        sid = f"ledger-{topic}"
        header = SessionHeader(id=sid, created_at=100 + number, cwd=WORKSPACE)
        with store.create(header) as writer:
            texts = [f"the ledger {topic} step {step} needs care" for step in range(6)]
            writer.append([_event(seq, text) for seq, text in enumerate(texts)])
        ids.append(sid)
    hidden = SessionHeader(id="elsewhere-ledger", created_at=50, cwd=OTHER_WORKSPACE)
    with store.create(hidden) as writer:
        writer.append([_event(0, "the ledger of another workspace")])
    return ids


def _text(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


@dataclass
class _Figures:
    calls: Counter[str] = field(default_factory=Counter)
    retries: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    commands: int = 0
    turns_seen: list[int] = field(default_factory=list)


class _WriterProgress:
    """The last turn the writer reported flushed, read from its stdout by a thread."""

    def __init__(self, child: subprocess.Popen[str]) -> None:
        self.last = -1
        self.done = threading.Event()
        self.lines: list[str] = []
        self._child = child
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._child.stdout is not None
        try:
            for line in self._child.stdout:
                self.lines.append(line.strip())
                if line.startswith("done"):
                    break
                self.last = int(line)
        finally:
            self.done.set()

    def close(self) -> None:
        """After the writer exited: the reading thread ends at the end of its output."""
        self._thread.join(timeout=CALL_SECONDS)
        assert not self._thread.is_alive()
        assert self._child.stdout is not None
        self._child.stdout.close()


def _finish(writer: subprocess.Popen[str], progress: _WriterProgress) -> str:
    """Wait for the writer (killed if it overruns its bound); its stderr."""
    try:
        writer.wait(timeout=LOAD_SECONDS + CALL_SECONDS)
    except subprocess.TimeoutExpired:
        writer.kill()
        writer.wait()
    progress.close()
    assert writer.stderr is not None
    with writer.stderr:
        return writer.stderr.read()


def _server(root: Path, index: Path, env: dict[str, str]) -> StdioServerParameters:
    args = ["-m", "sessionquery.cli", "mcp", "--root", str(root), "--index", str(index)]
    return StdioServerParameters(command=sys.executable, args=[*args, "--cwd", WORKSPACE], env=env)


def _command(root: Path, index: Path, *words: str) -> list[str]:
    return [
        sys.executable, "-m", "sessionquery.cli", "search", *words, "--json", "--limit", "50",
        "--root", str(root), "--index", str(index), "--cwd", WORKSPACE,
    ]  # fmt: skip


def _run(command: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=CALL_SECONDS, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _command_loop(
    root: Path, index: Path, env: dict[str, str], stop: threading.Event, figures: _Figures
) -> None:
    """Run ``sessionquery search`` one command after another until ``stop`` is set."""
    while not stop.is_set():
        done = subprocess.run(
            _command(root, index, "ledger"),
            env=env, capture_output=True, text=True, timeout=CALL_SECONDS, check=False,
        )  # fmt: skip
        figures.commands += 1
        if done.returncode != 0:
            figures.failures.append(f"search command exit {done.returncode}: {done.stderr}")
            continue
        found = {item["session"]["id"] for item in json.loads(done.stdout)["items"]}
        if not {"ledger-rounding", "ledger-exports"} <= found or "elsewhere-ledger" in found:
            figures.failures.append(f"search command found {sorted(found)}")


async def _load(client: Client, name: str, progress: _WriterProgress, figures: _Figures) -> None:
    """Call the tools in turn until the writer is done; check every answer."""

    async def call(tool: str, arguments: dict[str, object]) -> str | None:
        with anyio.fail_after(CALL_SECONDS):
            result = await client.call_tool(tool, arguments)
        figures.calls[name] += 1
        text = _text(result)
        if result.is_error and text.startswith(RETRYABLE):
            figures.retries[text.split(":", 1)[0]] += 1
            return None
        if result.is_error:
            figures.failures.append(f"{name} {tool} {arguments}: {text}")
            return None
        return text

    while not progress.done.is_set():
        turn = progress.last
        if turn >= 0:
            found = await call("session_search", {"query": _beacon(turn)})
            if found is not None:
                figures.turns_seen.append(turn)
                if GROWING not in found:
                    figures.failures.append(f"{name} missed {_beacon(turn)}: {found}")
            events = await call(
                "session_event_search", {"session_id": GROWING, "query": _beacon(turn)}
            )
            if events is not None and _beacon(turn) not in events:
                figures.failures.append(f"{name} event search missed {_beacon(turn)}: {events}")
            read = await call("session_event_read", {"session_id": GROWING, "seq": 2 * turn})
            if read is not None and _beacon(turn) not in read:
                figures.failures.append(f"{name} read of turn {turn}: {read}")
        listing = await call("session_search", {"query": "ledger"})
        if listing is not None and ("ledger-taxes" not in listing or "elsewhere" in listing):
            figures.failures.append(f"{name} ledger search: {listing}")


def _final_calls(turns: int) -> list[tuple[str, dict[str, object]]]:
    calls: list[tuple[str, dict[str, object]]] = [
        ("session_search", {"query": "ledger"}),
        ("session_search", {"query": "growing session"}),
        ("session_event_search", {"session_id": GROWING, "query": "ledger turn"}),
        ("session_trace", {"session_id": GROWING}),
        ("session_event_read", {"session_id": GROWING, "seq": 2 * (turns - 1), "before": 3}),
    ]
    for turn in sorted({0, turns // 2, turns - 1}):
        calls.append(("session_search", {"query": _beacon(turn)}))
        calls.append(("session_event_search", {"session_id": GROWING, "query": _beacon(turn)}))
    return calls


def _fresh_answers(
    root: Path, index: Path, calls: list[tuple[str, dict[str, object]]]
) -> list[str]:
    with SessionQuery(persistence=JsonlPersistence(root), search=SqliteSearch(index)) as query:
        tools = SessionQueryTools(query)
        caller = ToolCaller(cwd=WORKSPACE)
        answers = []
        for name, arguments in calls:
            result = tools.call(name, arguments, caller)
            assert not result.is_error, result.text
            answers.append(result.text)
        return answers


def test_four_servers_a_search_loop_and_a_writer_share_one_store_and_one_index(
    tmp_path: Path,
) -> None:
    root, index = tmp_path / "store", tmp_path / "index.sqlite3"
    _make_store(root)
    env = clean_env(tmp_path)
    figures = _Figures()
    stop = threading.Event()
    final: dict[str, list[str]] = {}
    turns = 0
    load_seconds: list[float] = []
    started = time.monotonic()

    async def scenario() -> None:
        nonlocal turns
        with anyio.fail_after(OVERALL_SECONDS):
            async with AsyncExitStack() as stack:
                clients: list[Client] = []
                # Bounded by OVERALL_SECONDS: a cancel scope may not close inside a client's.
                for _ in range(SERVERS):
                    clients.append(
                        await stack.enter_async_context(Client(_server(root, index, env)))
                    )
                writer = subprocess.Popen(  # noqa: ASYNC220 (starting it does not block)
                    [sys.executable, "-c", _WRITER, str(root), GROWING, WORKSPACE,
                     str(LOAD_SECONDS), str(_TURN_PAUSE)],
                    env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                )  # fmt: skip
                progress = _WriterProgress(writer)
                load_started = time.monotonic()
                loop = threading.Thread(
                    target=_command_loop, args=(root, index, env, stop, figures), daemon=True
                )
                loop.start()
                try:
                    async with anyio.create_task_group() as group:
                        for number, client in enumerate(clients):
                            group.start_soon(_load, client, f"server{number}", progress, figures)
                finally:
                    stop.set()
                    errors = _finish(writer, progress)
                    loop.join(timeout=CALL_SECONDS)
                    load_seconds.append(time.monotonic() - load_started)
                assert writer.returncode == 0, errors
                assert not loop.is_alive()
                (last,) = [line for line in progress.lines if line.startswith("done")]
                turns = int(last.split()[1])
                assert turns > 0
                calls = _final_calls(turns)
                for number, client in enumerate(clients):
                    answers = []
                    for name, arguments in calls:
                        with anyio.fail_after(CALL_SECONDS):
                            result = await client.call_tool(name, arguments)
                        assert not result.is_error, _text(result)
                        answers.append(_text(result))
                    final[f"server{number}"] = answers

    anyio.run(scenario)

    assert figures.failures == []
    calls = _final_calls(turns)
    fresh = _fresh_answers(root, tmp_path / "fresh.sqlite3", calls)
    for answers in final.values():
        assert answers == fresh
    assert GROWING in fresh[0] and GROWING in fresh[1] and _beacon(turns - 1) in fresh[-1]
    shared_command = _run(_command(root, index, "ledger"), env)
    fresh_command = _run(_command(root, tmp_path / "fresh-cli.sqlite3", "ledger"), env)
    assert json.loads(shared_command) == json.loads(fresh_command)
    assert GROWING in {item["session"]["id"] for item in json.loads(fresh_command)["items"]}
    total = sum(figures.calls.values())
    retried = sum(figures.retries.values())
    assert retried <= total // 10, figures.retries
    assert len(figures.turns_seen) >= SERVERS
    assert figures.commands >= 1
    counts = {
        "servers": SERVERS,
        "processes": SERVERS + 1 + figures.commands,
        "tool_calls": total,
        "retries": retried,
        "search_commands": figures.commands,
        "turns": turns,
    }
    seconds = {"load": round(load_seconds[0], 1), "total": round(time.monotonic() - started, 1)}
    print(json.dumps({**counts, "seconds": seconds}))
    record("processes", **counts)


# --- many hits while a writer creates and appends in a loop (issue: no STALE_CURSOR) ------

MANY = 130
"""Workspace sessions holding ``ledger``: more than one page of the backend's largest page."""
OWN = "ledger-own"
"""The session one server acts as (``--session``): it matches best, so that server's answer
needs a second page (its own session is skipped), the case a writer can make go stale."""
CHURN_SECONDS = 10.0
_CHURN_PAUSE = 0.01

_CHURN_WRITER = """
import sys, time
from sessionquery.model import SessionEvent, SessionHeader, messages
from sessionquery.persistence import JsonlPersistence
root, cwd, seconds, pause = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:5])
store = JsonlPersistence(root)
end = time.monotonic() + seconds
turn = 0
while time.monotonic() < end:
    with store.create(SessionHeader(id=f"churn-{turn:04d}", created_at=5_000, cwd=cwd)) as w:
        for _ in range(4):  # a new session, then appends to it: both move every cursor
            seq = w.event_count
            text = f"ledger churn beacon{turn:04d}x"
            w.append([SessionEvent(type="user/message", seq=seq, time=6_000 + seq,
                                   data=messages.user_message(text, id=f"u{seq}"),
                                   surface_op="append")])
            w.flush()
            print(turn, flush=True)
            turn += 1
            time.sleep(pause)
print("done", turn, flush=True)
"""


def _make_many(root: Path) -> None:
    store = JsonlPersistence(root)
    for number in range(MANY):
        header = SessionHeader(id=f"ledger-{number:03d}", created_at=100 + number, cwd=WORKSPACE)
        with store.create(header) as writer:
            writer.append([_event(0, f"the ledger entry {number} balances")])
    with store.create(SessionHeader(id=OWN, created_at=99, cwd=WORKSPACE)) as writer:
        writer.append([_event(0, "ledger ledger ledger")])
    with store.create(SessionHeader(id="elsewhere", created_at=98, cwd=OTHER_WORKSPACE)) as w:
        w.append([_event(0, "ledger ledger of another workspace")])


def test_four_servers_answer_every_session_search_while_a_writer_creates_and_appends(
    tmp_path: Path,
) -> None:
    root, index = tmp_path / "store", tmp_path / "index.sqlite3"
    _make_many(root)
    env = clean_env(tmp_path)
    figures = _Figures()

    async def searches(client: Client, name: str, own: bool, progress: _WriterProgress) -> None:
        async def search(query: str) -> str | None:
            with anyio.fail_after(CALL_SECONDS):
                result = await client.call_tool("session_search", {"query": query})
            figures.calls[name] += 1
            text = _text(result)
            if result.is_error:  # any error, retryable ones included
                figures.failures.append(f"{name} {query}: {text}")
                return None
            return text

        while not progress.done.is_set():
            listing = await search("ledger")
            if listing is not None:
                shown = listing.count("\n   Snippet: ")
                if shown < 99 or "Result cap reached" not in listing:
                    figures.failures.append(f"{name} ledger search showed {shown} hits")
                if "Session elsewhere " in listing or (own and f"Session {OWN} " in listing):
                    figures.failures.append(f"{name} ledger search: {listing}")
            turn = progress.last
            if turn >= 0:
                found = await search(_beacon(turn))
                if found is not None:
                    figures.turns_seen.append(turn)
                    if f"Session churn-{turn - turn % 4:04d} " not in found:
                        figures.failures.append(f"{name} missed {_beacon(turn)}: {found}")

    async def scenario() -> None:
        with anyio.fail_after(OVERALL_SECONDS):
            async with AsyncExitStack() as stack:
                clients: list[tuple[Client, bool]] = []
                for number in range(SERVERS):
                    own = number == 0
                    params = _server(root, index, env)
                    if own:
                        params.args = [*params.args[:-2], "--session", OWN]
                    client = await stack.enter_async_context(Client(params))
                    clients.append((client, own))
                writer = subprocess.Popen(  # noqa: ASYNC220 (starting it does not block)
                    [sys.executable, "-c", _CHURN_WRITER, str(root), WORKSPACE,
                     str(CHURN_SECONDS), str(_CHURN_PAUSE)],
                    env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                )  # fmt: skip
                progress = _WriterProgress(writer)
                try:
                    async with anyio.create_task_group() as group:
                        for number, (client, own) in enumerate(clients):
                            group.start_soon(searches, client, f"server{number}", own, progress)
                finally:
                    errors = _finish(writer, progress)
                assert writer.returncode == 0, errors

    anyio.run(scenario)

    assert figures.failures == []
    total = sum(figures.calls.values())
    assert total >= 4 * SERVERS and len(figures.turns_seen) >= SERVERS
    print(json.dumps({"session_searches": total, "beacons_found": len(figures.turns_seen)}))
    record("stale_free_searches", session_searches=total, beacons=len(figures.turns_seen))
