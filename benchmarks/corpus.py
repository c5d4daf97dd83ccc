"""A deterministic generator of realistic session corpora, written through ``JsonlPersistence``.

``generate(root, CorpusSpec(sessions=..., events=...))`` writes ``sessions`` session files
holding ``events`` events in total (exact), spread over several workspaces, and returns a
:class:`CorpusManifest` that names the sessions and words the benchmarks query.

What the corpus looks like:

* **Sessions of varied length** (log-normal), one optional *big* session of
  ``big_session_events`` events (for ``read_event`` / ``trace_event`` on a long log), in
  ``workspaces`` workspaces (``/home/dev/src/<project>``).
* **Valid logs** (SPEC §3.3/§3.4): turns (``turn/start`` .. ``turn/end``) of steps
  (``step/start``, ``assistant/message`` with ``tool-call`` blocks, ``tool/call`` +
  ``tool/result`` per call, ``step/end``), ``todo/write``, a ``session/title`` after the first
  turn; surface-eligible events carry ``surface_op``. Long sessions are **compacted**: a summary
  ``user/message`` ``Replace``-s the whole surface and cites every node it removes.
* **Lineage**: some sessions are **forks** (seeded with a prefix of an earlier session that
  ends at a ``turn/end``; ``origin="fork"``) and some are **subagents** (``origin="subagent"``,
  depth 1, same workspace).
* **Text** follows a Zipf-like vocabulary (English function words first, then pseudo-words),
  mixed with code identifiers, file paths, shell commands and real-looking error messages.

Invariants: the same spec and seed give byte-identical files; every session folds (the
smoke test replays them); generation writes each session with one ``create``, one batched
``append`` and one ``flush``.

Run ``python benchmarks/corpus.py ROOT --sessions 1000 --events 100000`` to write a corpus.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sessionquery.model import Replace, SessionEvent, SessionHeader, messages
from sessionquery.persistence import JsonlPersistence

__all__ = ["CorpusManifest", "CorpusSpec", "generate", "main"]

START_MS = 1_735_689_600_000  # 2025-01-01T00:00:00Z
"""Creation time of the first session; later sessions are spaced minutes apart."""

DEFAULT_SEED = 20250101
"""The seed used unless another is given."""

PHRASE = "connection refused"
"""The two-word phrase the benchmarks search; it occurs inside generated error messages."""

_FUNCTION_WORDS = (
    "the to and of a in is it that for this we i on with be test not file as are was "
    "you can at from but if or so now let have will by should then error fix run check "
    "function value code line use when one all there which what need see an after before "
    "into new make changes instead because only also it's still same first update call "
    "return failing passes config case other data path module tests type version again"
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
)

_ERRORS = (
    "ConnectionRefusedError: [Errno 111] Connection refused",
    "requests.exceptions.ConnectionError: HTTPConnectionPool(host='localhost', port={port}): "
    "Max retries exceeded (Caused by NewConnectionError: connection refused)",
    "AssertionError: assert {a} == {b}",
    "TypeError: 'NoneType' object is not subscriptable",
    "KeyError: '{ident}'",
    "ModuleNotFoundError: No module named '{ident}'",
    "AttributeError: '{cls}' object has no attribute '{ident}'",
    "FileNotFoundError: [Errno 2] No such file or directory: '{path}'",
    "ValueError: invalid literal for int() with base 10: '{word}'",
    "error[E0382]: borrow of moved value: `{ident}`",
    "npm ERR! code ELIFECYCLE npm ERR! errno 1",
    "fatal: not a git repository (or any of the parent directories): .git",
    'psycopg.OperationalError: connection to server at "127.0.0.1", port 5432 failed: '
    "Connection refused",
    "TimeoutError: operation timed out after {a} seconds",
    "PermissionError: [Errno 13] Permission denied: '{path}'",
    "RuntimeError: CUDA out of memory. Tried to allocate {a} MiB",
)

_TOOLS = ("bash", "read_file", "edit_file", "grep", "write_file", "list_dir")
_EXTENSIONS = (".py", ".ts", ".rs", ".go", ".tsx", ".sql", ".yaml", ".md")
_SYLLABLES = tuple(c + v for c in "bdfghjklmnprstvz" for v in ("a", "e", "i", "o", "u", "ai"))


@dataclass(frozen=True, slots=True)
class CorpusSpec:
    """What to generate.

    Attributes:
        sessions: number of sessions (≥ 1, ≥ 2 with a big session).
        events: total number of events over all sessions (exact).
        big_session_events: events of the one big session (0 = none).
        workspaces: number of distinct ``cwd`` values.
        seed: the random seed; equal specs give byte-identical corpora.
        vocabulary: pseudo-words in the Zipf vocabulary (after the function words).
    """

    sessions: int
    events: int
    big_session_events: int = 0
    workspaces: int = 8
    seed: int = DEFAULT_SEED
    vocabulary: int = 30_000

    def __post_init__(self) -> None:
        if self.sessions < 1 or self.events < 1:
            raise ValueError("sessions and events must be positive")
        if self.big_session_events and self.sessions < 2:
            raise ValueError("a big session needs at least two sessions")
        minimum = 12 * (self.sessions - (1 if self.big_session_events else 0))
        if self.events - self.big_session_events < minimum:
            raise ValueError(
                f"{self.events} events are too few for {self.sessions} sessions "
                f"(at least {minimum + self.big_session_events} needed)"
            )
        if not 1 <= self.workspaces <= len(_PROJECTS):
            raise ValueError(f"workspaces must be between 1 and {len(_PROJECTS)}")


@dataclass(frozen=True, slots=True)
class CorpusManifest:
    """What was generated, and the inputs the benchmarks query with.

    Attributes:
        spec: the spec, as a dict.
        sessions: sessions written.
        events: events written.
        documents: events with searchable text.
        bytes: total size of the session files.
        seconds: generation wall time.
        big_session: id of the big session (``None`` without one).
        big_session_events: its event count.
        small_session: id of an ordinary session (the benchmarks append to it).
        workspaces: the ``cwd`` values, most used first.
        rare_word: a word occurring in few documents.
        common_word: the most frequent word.
        filter_word: a mid-frequency word used with metadata filters.
        phrase: a two-word phrase present in the corpus.
        forks: fork sessions written.
        subagents: subagent sessions written.
        compactions: compaction events written.
    """

    spec: dict[str, Any]
    sessions: int
    events: int
    documents: int
    bytes: int
    seconds: float
    big_session: str | None
    big_session_events: int
    small_session: str
    workspaces: list[str]
    rare_word: str
    common_word: str
    filter_word: str
    phrase: str
    forks: int
    subagents: int
    compactions: int

    def to_json(self) -> dict[str, Any]:
        """The manifest as a JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> CorpusManifest:
        """Rebuild a manifest written by :meth:`to_json`."""
        return cls(**obj)


# --------------------------------------------------------------------------- vocabulary


def _pseudo_word(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))


class _Vocabulary:
    """Zipf-distributed words plus code identifiers, paths and commands."""

    def __init__(self, rng: random.Random, size: int) -> None:
        words = list(_FUNCTION_WORDS)
        seen = set(words)
        while len(words) < len(_FUNCTION_WORDS) + size:
            word = _pseudo_word(rng)
            if word not in seen:
                seen.add(word)
                words.append(word)
        self.words = words
        # Zipf with exponent 1.05: a few words everywhere, a long tail of rare ones.
        total = 0.0
        cumulative: list[float] = []
        for rank in range(1, len(words) + 1):
            total += 1.0 / rank**1.05
            cumulative.append(total)
        self.cumulative = cumulative
        self.rng = rng
        mid = words[len(_FUNCTION_WORDS) : len(_FUNCTION_WORDS) + 2000]
        self.identifiers = [
            rng.choice(
                (
                    f"{a}_{b}",
                    f"{a}_{b}_{c}",
                    f"{a.capitalize()}{b.capitalize()}",
                    f"{a}{b.capitalize()}{c.capitalize()}",
                )
            )
            for a, b, c in (
                (rng.choice(mid), rng.choice(mid), rng.choice(mid)) for _ in range(3000)
            )
        ]
        self.paths = [
            f"{rng.choice(('src', 'lib', 'tests', 'app', 'pkg'))}/{rng.choice(mid)}/"
            f"{rng.choice(self.identifiers).lower()}{rng.choice(_EXTENSIONS)}"
            for _ in range(2000)
        ]

    def draw(self, count: int) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self.cumulative, k=count)

    def ident(self) -> str:
        # Identifiers are Zipf-ish too: squaring a uniform draw favours the first ones.
        return self.identifiers[int(len(self.identifiers) * self.rng.random() ** 2)]

    def path(self) -> str:
        return self.paths[int(len(self.paths) * self.rng.random() ** 2)]


# --------------------------------------------------------------------------- one session


@dataclass
class _SessionWriter:
    """Builds the events of one session: turns, steps, tool calls, compactions."""

    vocab: _Vocabulary
    rng: random.Random
    session_id: str
    clock: int
    events: list[SessionEvent] = field(default_factory=list)
    surface: list[int] = field(default_factory=list)
    turn: int = 0
    calls: int = 0
    compactions: int = 0
    documents: int = 0
    since_compaction: int = 0
    words: list[list[str]] = field(default_factory=list)

    def _add(
        self,
        event_type: str,
        data: Any,
        *,
        surface: bool = False,
        replace: Replace | None = None,
        sources: Sequence[int] | None = None,
    ) -> int:
        seq = len(self.events)
        self.clock += self.rng.randint(200, 9000)
        op: Any = replace if replace is not None else ("append" if surface else None)
        self.events.append(
            SessionEvent(
                event_type, seq, self.clock, data, op, None if sources is None else tuple(sources)
            )
        )
        if replace is not None:
            self.surface = [seq]
        elif surface:
            self.surface.append(seq)
        return seq

    def _prose(self, low: int, high: int) -> str:
        words = self.vocab.draw(self.rng.randint(low, high))
        self.words.append(words)
        rng = self.rng
        # Sprinkle identifiers and paths into the prose, as agents and users write.
        for _ in range(len(words) // 12):
            words.insert(rng.randrange(len(words) + 1), self.vocab.ident())
        if rng.random() < 0.3:
            words.insert(rng.randrange(len(words) + 1), self.vocab.path())
        text = " ".join(words)
        return text[0].upper() + text[1:] + "."

    def _error(self) -> str:
        rng = self.rng
        return rng.choice(_ERRORS).format(
            port=rng.choice((5432, 6379, 8000, 8080, 9200)),
            a=rng.randint(0, 999),
            b=rng.randint(0, 999),
            ident=self.vocab.ident(),
            cls=self.vocab.ident().capitalize(),
            path=self.vocab.path(),
            word=self.vocab.draw(1)[0],
        )

    def _tool_output(self, name: str) -> tuple[str, bool]:
        rng = self.rng
        failed = rng.random() < 0.12
        lines: list[str] = []
        if name in ("read_file", "write_file", "edit_file"):
            for _ in range(rng.randint(1, 12)):
                ident = self.vocab.ident()
                lines.append(
                    rng.choice(
                        (
                            f"def {ident}({self.vocab.ident()}):",
                            f"    return {ident}.{self.vocab.ident()}()",
                            f"    # {self._prose(3, 10)}",
                            f"from {self.vocab.ident()} import {ident}",
                            f"    {ident} = {rng.randint(0, 100)}",
                        )
                    )
                )
        elif name in ("grep", "list_dir"):
            for _ in range(rng.randint(1, 10)):
                lines.append(f"{self.vocab.path()}:{rng.randint(1, 900)}: {self.vocab.ident()}")
        else:
            for _ in range(rng.randint(1, 6)):
                lines.append(self._prose(4, 30))
        if failed or rng.random() < 0.1:
            lines.append(self._error())
        return "\n".join(lines), failed

    def _arguments(self, name: str) -> str:
        rng = self.rng
        if name == "bash":
            command = rng.choice(
                (
                    f"pytest {self.vocab.path()} -k {self.vocab.ident()} -q",
                    f"cargo test {self.vocab.ident()}",
                    f"npm run {rng.choice(('build', 'lint', 'test'))}",
                    f"git diff {self.vocab.path()}",
                    f"curl -s http://localhost:{rng.choice((8000, 8080))}/health",
                )
            )
            return json.dumps({"command": command})
        if name == "grep":
            return json.dumps({"pattern": self.vocab.ident(), "path": "."})
        if name == "edit_file":
            return json.dumps(
                {"path": self.vocab.path(), "old": self.vocab.ident(), "new": self.vocab.ident()}
            )
        return json.dumps({"path": self.vocab.path()})

    def run_turn(self, room: int) -> None:
        """Append one whole turn (turn/start .. turn/end) of at most ``room`` (≥ 4) events."""
        rng = self.rng
        with_todo = rng.random() < 0.15
        plan = [rng.choice((0, 1, 1, 1, 2, 3)) for _ in range(rng.choice((1, 1, 2, 2, 3, 4)))]
        # A turn costs 3 events + 1 per todo + per step 3 + 2 per call: trim the plan to fit.
        while 3 + with_todo + sum(3 + 2 * calls for calls in plan) > room:
            if plan[-1]:
                plan[-1] -= 1
            elif len(plan) > 1:
                plan.pop()
            else:
                with_todo = False
        turn = self.turn
        self.turn += 1
        self._add("turn/start", messages.turn_start(turn))
        text = self._prose(6, 45)
        self._add(
            "user/message",
            messages.user_message(text, id=f"{self.session_id}-u{turn}"),
            surface=True,
        )
        self.documents += 1
        if with_todo:
            todos = [
                (self._prose(3, 9), rng.choice(("pending", "completed")))
                for _ in range(rng.randint(1, 4))
            ]
            self._add("todo/write", messages.todo_write(todos))
            self.documents += 1
        for step, calls in enumerate(plan):
            self._step(turn, step, calls)
        self._add("turn/end", messages.turn_end(turn))

    def _step(self, turn: int, step: int, call_count: int) -> None:
        rng = self.rng
        self._add("step/start", messages.step_start(turn, step))
        text = self._prose(8, 70)
        reasoning = self._prose(10, 40) if rng.random() < 0.2 else None
        calls: list[messages.ToolCallBlock] = []
        for _ in range(call_count):
            self.calls += 1
            name = _TOOLS[min(int(len(_TOOLS) * rng.random() ** 1.5), len(_TOOLS) - 1)]
            calls.append(
                messages.tool_call_block(f"call_{self.calls}", name, self._arguments(name))
            )
        self._add(
            "assistant/message",
            messages.assistant_message(
                text, turn=turn, step=step, tool_calls=calls, reasoning=reasoning
            ),
            surface=True,
        )
        self.documents += 1
        for call in calls:
            call_seq = self._add("tool/call", messages.tool_call(call, turn=turn, step=step))
            output, failed = self._tool_output(call["name"])
            result = messages.tool_result(
                output,
                call_id=call["id"],
                turn=turn,
                step=step,
                is_error=failed,
                error=("ToolError", "TOOL_FAILED") if failed else None,
            )
            self._add("tool/result", result, surface=True, sources=[call_seq])
            self.documents += 2
        self._add("step/end", messages.step_end(turn, step))

    def title(self) -> None:
        first = list(self.surface[:2])
        self._add("session/title", messages.session_title(self._prose(3, 7).rstrip("."), first))

    def compact(self) -> None:
        """Replace the whole surface with a summary that cites every node it removes."""
        removed = list(self.surface)
        self._add(
            "user/message",
            messages.user_message(
                "Summary: " + self._prose(20, 80),
                id=f"{self.session_id}-c{self.compactions}",
                source="compaction",
            ),
            replace=Replace(removed[0], removed[-1]),
            sources=removed,
        )
        self.compactions += 1
        self.documents += 1

    def fill(self, target: int, compact_every: int) -> None:
        """Append turns until the log has ``target`` events (pads the tail with no-op steps)."""
        while len(self.events) < target:
            before = len(self.events)
            remaining = target - before
            if remaining < 16:
                self._pad(remaining)
                break
            self.run_turn(remaining - 1)  # one spare for a compaction
            if self.turn == 1:
                self.title()
            self.since_compaction += len(self.events) - before
            if self.since_compaction >= compact_every and len(self.surface) > 1:
                if target - len(self.events) >= 1:
                    self.compact()
                self.since_compaction = 0

    def _pad(self, count: int) -> None:
        """Exactly ``count`` more events: whole empty turns, then ignorable markers."""
        while count >= 2:
            turn = self.turn
            self.turn += 1
            self._add("turn/start", messages.turn_start(turn))
            self._add("turn/end", messages.turn_end(turn))
            count -= 2
        if count:
            self._add("todo/write", messages.todo_write([(self._prose(2, 5), "done")]))
            self.documents += 1


# --------------------------------------------------------------------------- the corpus


def _budgets(rng: random.Random, spec: CorpusSpec, ordinary: int) -> list[int]:
    """Event counts of the ordinary sessions: log-normal, each ≥ 12, summing exactly."""
    total = spec.events - spec.big_session_events
    weights = [rng.lognormvariate(0.0, 0.9) for _ in range(ordinary)]
    spare = total - 12 * ordinary
    scale = spare / sum(weights)
    budgets = [12 + int(w * scale) for w in weights]
    short = total - sum(budgets)
    for index in range(short):
        budgets[index % ordinary] += 1
    return budgets


@contextlib.contextmanager
def _fsync_skipped() -> Iterator[None]:
    """Make ``os.fsync`` a no-op inside the block (this process only).

    A generated corpus is disposable, and each of the three fsyncs a new session file gets
    (file, directory, first flush) costs milliseconds on ordinary disks: 10k sessions would
    spend minutes in durability barriers nobody needs. Everything else goes through the real
    ``JsonlPersistence`` code path.
    """
    real = os.fsync
    os.fsync = lambda fd: None
    try:
        yield
    finally:
        os.fsync = real


def generate(root: str | Path, spec: CorpusSpec, *, durable: bool = False) -> CorpusManifest:
    """Write the corpus of ``spec`` under ``root`` (a new or empty store directory).

    Args:
        root: the store directory.
        spec: what to generate.
        durable: keep the store's fsyncs (slow); by default they are skipped, since a
            benchmark corpus can simply be regenerated after a crash.

    Raises:
        ValueError: ``root`` already holds sessions.
    """
    with contextlib.nullcontext() if durable else _fsync_skipped():
        return _generate(root, spec)


def _generate(root: str | Path, spec: CorpusSpec) -> CorpusManifest:
    started = time.perf_counter()
    store = JsonlPersistence(root)
    if store.list():
        raise ValueError(f"{root} already holds sessions; generate into an empty directory")
    rng = random.Random(spec.seed)
    vocab = _Vocabulary(rng, spec.vocabulary)
    workspaces = [f"/home/dev/src/{name}" for name in _PROJECTS[: spec.workspaces]]
    ordinary = spec.sessions - (1 if spec.big_session_events else 0)
    budgets = _budgets(rng, spec, ordinary)
    big_index = ordinary // 2 if spec.big_session_events else -1
    counts: Counter[str] = Counter()
    recent: list[tuple[SessionHeader, list[SessionEvent]]] = []
    totals = {"events": 0, "documents": 0, "forks": 0, "subagents": 0, "compactions": 0}
    small_session = ""
    big_session: str | None = None
    budget_iter = iter(budgets)
    for index in range(spec.sessions):
        session_id = f"s{index:06d}"
        created = START_MS + index * 150_000 + rng.randint(0, 60_000)
        is_big = index == big_index
        target = spec.big_session_events if is_big else next(budget_iter)
        # Zipf over workspaces too: the first projects see most of the work.
        cwd = workspaces[min(int(len(workspaces) * rng.random() ** 1.6), len(workspaces) - 1)]
        header = SessionHeader(id=session_id, created_at=created, cwd=cwd)
        writer = _SessionWriter(vocab, rng, session_id, created)
        roll = rng.random()
        parent = rng.choice(recent) if recent and not is_big else None
        if parent is not None and roll < 0.06:
            cut = _fork_cut(parent[1], target - 12, rng)
            if cut is not None:
                header = SessionHeader(
                    id=session_id,
                    created_at=created,
                    cwd=parent[0].cwd,
                    parent_session=parent[0].id,
                    is_seeded=True,
                    origin="fork",
                )
                writer.events = list(parent[1][: cut + 1])
                writer.clock = max(created, writer.events[-1].time)
                writer.surface = _surface_of(writer.events)
                writer.turn = _next_turn(writer.events)
                writer.calls = 10_000
                writer.documents = 0
                totals["forks"] += 1
        elif parent is not None and roll < 0.18:
            header = SessionHeader(
                id=session_id,
                created_at=created,
                cwd=parent[0].cwd,
                parent_session=parent[0].id,
                origin="subagent",
                delegation_depth=1,
            )
            totals["subagents"] += 1
        inherited = len(writer.events) if header.is_seeded else 0
        writer.fill(target, compact_every=200 if is_big else rng.randint(40, 90))
        handle = store.create(header, inherited_event_count=inherited)
        try:
            handle.append(writer.events)
            handle.flush()
        finally:
            handle.close()
        for words in writer.words:
            counts.update(words)
        totals["events"] += len(writer.events)
        totals["documents"] += writer.documents + _seed_documents(writer.events[:inherited])
        totals["compactions"] += writer.compactions
        if is_big:
            big_session = session_id
        elif not small_session and not header.is_seeded and 30 <= target <= 200:
            small_session = session_id
        if not is_big:
            recent.append((header, writer.events))
            if len(recent) > 30:
                recent.pop(0)
    size = sum(p.size_bytes or 0 for p in store.list())
    common = counts.most_common(1)[0][0]
    return CorpusManifest(
        spec=asdict(spec),
        sessions=spec.sessions,
        events=totals["events"],
        documents=totals["documents"],
        bytes=size,
        seconds=round(time.perf_counter() - started, 3),
        big_session=big_session,
        big_session_events=spec.big_session_events,
        small_session=small_session or "s000000",
        workspaces=workspaces,
        rare_word=_rare_word(vocab.words, counts),
        common_word=common,
        filter_word=vocab.words[300],
        phrase=PHRASE,
        forks=totals["forks"],
        subagents=totals["subagents"],
        compactions=totals["compactions"],
    )


def _seed_documents(events: Sequence[SessionEvent]) -> int:
    searchable = {"user/message", "assistant/message", "tool/call", "tool/result", "todo/write"}
    return sum(1 for event in events if event.type in searchable)


def _fork_cut(events: Sequence[SessionEvent], limit: int, rng: random.Random) -> int | None:
    """A ``turn/end`` seq of ``events`` leaving room for the fork's own turns, or ``None``."""
    ends = [e.seq for e in events if e.type == "turn/end" and e.seq < limit]
    return rng.choice(ends) if ends else None


def _surface_of(events: Sequence[SessionEvent]) -> list[int]:
    surface: list[int] = []
    for event in events:
        op = event.surface_op
        if op == "append":
            surface.append(event.seq)
        elif isinstance(op, Replace):
            start = surface.index(op.start_seq)
            end = surface.index(op.end_seq)
            surface[start : end + 1] = [event.seq]
    return surface


def _next_turn(events: Sequence[SessionEvent]) -> int:
    turns = [e.data["turn"] for e in events if e.type == "turn/end"]
    return int(max(turns)) + 1 if turns else 0


def _rare_word(words: list[str], counts: Counter[str]) -> str:
    """A word that occurs only a few times (about 10, at least once)."""
    best = None
    for word in words[len(_FUNCTION_WORDS) :]:
        seen = counts.get(word, 0)
        if seen and (best is None or abs(seen - 10) < abs(counts[best] - 10)):
            best = word
            if seen == 10:
                break
    return best or words[-1]


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: write a corpus and print its manifest as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", help="an empty or new directory for the session files")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--big-session-events", type=int, default=0)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args(argv)
    spec = CorpusSpec(
        sessions=args.sessions,
        events=args.events,
        big_session_events=args.big_session_events,
        seed=args.seed,
    )
    manifest = generate(args.root, spec)
    json.dump(manifest.to_json(), sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
