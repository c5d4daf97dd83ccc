"""Gemini CLI chat recordings (``~/.gemini``) as read-only sessions.

Gemini CLI records each session under ``tmp/<project>/chats/``: ``session-<time>-<id>.jsonl``
(older releases: one ``session-*.json`` document), and each subagent it ran as
``chats/<parent session id>/<agent id>.jsonl`` (metadata ``kind: "subagent"``). ``<project>`` is
a short name (or, in older releases, the SHA-256 of the project path); the project path is
read from ``tmp/<project>/.project_root``, else from ``projects.json`` (path → short name), else
by matching the record's ``projectHash`` against the paths ``projects.json`` names.

A JSONL recording is an append-only log the producer replays: a metadata record
(``sessionId``, ``projectHash``, ``startTime``, ``summary``, ``kind``, ``directories``), message
records (``id``, ``timestamp``, ``type`` user / gemini / info / error / warning, ``content``,
``toolCalls``, ``thoughts``, ``tokens``, ``model``), a message written again under the same
``id`` when it is updated (the last version wins, at the first one's place), ``{"$rewindTo":
id}`` (that message and everything after it leave the history) and ``{"$set": {...}}``
(metadata updates; ``$set.messages`` states the whole history anew: a compression or a
rolled-back turn). The importer replays it the same way (producer types:
``packages/core/src/services/chatRecordingTypes.ts``; see ``docs/importers.md``):

* a user message opens a turn (``user/message``); a gemini message is one
  ``assistant/message`` (thoughts → ``reasoning``, ``toolCalls`` → ``tool-call`` blocks plus
  ``tool/call`` events) followed by one ``tool/result`` per call with a result;
* ``$rewindTo`` → a ``user/message`` (``source.kind: "rewind"``) that replaces the dropped
  messages on the surface; ``$set.messages`` → a ``user/message`` (``source.kind:
  "compaction"``) replacing the messages it no longer lists, then its new messages;
* ``summary`` → ``session/title``; info / error / warning records → ignorable log-only events.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sessionquery.model import SessionHeader
from sessionquery.model.jsonvalue import as_dict, as_list, compact_json
from sessionquery.persistence.documents import read_check
from sessionquery.sources import _genai as genai
from sessionquery.sources._builder import LogBuilder, call_block
from sessionquery.sources._common import Problem, checked_id, derived_id, iso_to_ms, usable_cwd
from sessionquery.sources._lines import Line, parse_lines
from sessionquery.sources._parsed import ParsedFile, ParsedSession, Sides, UnitInput
from sessionquery.sources._tree import TreeSource
from sessionquery.sources.units import FileTree, Role

__all__ = ["GeminiSource", "gemini_units", "parse_gemini_unit"]

_NAME_DATE = re.compile(r"session-(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})")
_REGISTRY = "projects.json"
_MARKER = ".project_root"


def select_gemini(tmp_prefix: str) -> Callable[[str, bool], Role | None]:
    """Which files of a Gemini home (``tmp_prefix = "tmp/"``) or ``tmp`` folder (``""``) are
    transcripts or side units; only ``tmp/<project>`` and its ``chats`` tree are walked."""
    depth = tmp_prefix.count("/")

    def select(rel: str, is_dir: bool) -> Role | None:
        parts = rel.split("/")
        if tmp_prefix and parts[0] != tmp_prefix[:-1]:
            return "side" if not is_dir and rel == _REGISTRY else None
        inner = parts[depth:]
        if is_dir:
            return "transcript" if len(inner) <= 1 or inner[1] == "chats" else None
        if len(inner) == 2 and inner[1] == _MARKER:
            return "side"
        if len(inner) >= 3 and inner[1] == "chats" and rel.endswith((".jsonl", ".json")):
            return "transcript"
        return None

    return select


def _tmp_prefix(root: Path) -> str:
    return "" if root.name == "tmp" else "tmp/"


def gemini_units(root: Path, *, follow_outside_links: bool = False) -> FileTree:
    """The recordings and project markers under a Gemini home (or its ``tmp`` folder)."""
    root = Path(root)
    return FileTree(
        root, select_gemini(_tmp_prefix(root)), follow_outside_links=follow_outside_links
    )


# -- the project path ----------------------------------------------------------------------


def _registry(data: bytes) -> dict[str, str]:
    try:
        projects = json.loads(data.decode("utf-8")).get("projects")
    except (ValueError, UnicodeDecodeError, AttributeError):
        return {}
    if not isinstance(projects, dict):
        return {}
    return {str(k): str(v) for k, v in projects.items() if isinstance(v, str)}  # pyright: ignore


def project_path(sides: Sides, key: str, project_hash: object) -> str | None:
    """The project path of the recording at ``key`` (see the module docstring), or ``None``."""
    parts = key.split("/")
    chats = parts.index("chats") if "chats" in parts else -1
    if chats < 1:
        return None
    slug = parts[chats - 1]
    marker = sides.read("/".join([*parts[: chats - 1], slug, _MARKER]))
    if marker is not None:
        try:
            text = marker.decode("utf-8").strip()
        except UnicodeDecodeError:
            text = ""
        if usable_cwd(text):
            return text
    projects: dict[str, str] = {}
    if parts[0] == "tmp":
        projects = sides.memo(_REGISTRY, "registry", _registry, projects)
    for path, short in projects.items():
        if short == slug and usable_cwd(path):
            return path
    wanted = project_hash if isinstance(project_hash, str) else slug
    for path in projects:
        if hashlib.sha256(path.encode("utf-8")).hexdigest() == wanted and usable_cwd(path):
            return path
    return None


# -- the replay ----------------------------------------------------------------------------


@dataclass(slots=True)
class _Group:
    """One message id while it is in the history: all its versions, the last one wins."""

    line: Line
    record: dict[str, Any]
    numbers: list[int]
    synthetic: bool = False  # stated by a $set.messages checkpoint, not recorded as it happened


@dataclass(slots=True)
class _Rewind:
    line: Line
    target: str


@dataclass(slots=True)
class _Checkpoint:
    line: Line
    ids: list[str]
    new: list[_Group]


@dataclass(slots=True)
class _Title:
    line: Line
    title: str


@dataclass(slots=True)
class _Other:
    """A line that is not a message: metadata, or a record of an unknown shape."""

    line: Line
    name: str


@dataclass(slots=True)
class _Replay:
    """The recording replayed as the producer replays it: a timeline and the metadata."""

    meta: dict[str, Any] = field(default_factory=dict[str, Any])
    timeline: list[_Group | _Rewind | _Checkpoint | _Title | _Other] = field(
        default_factory=list[_Group | _Rewind | _Checkpoint | _Title | _Other]
    )
    history: dict[str, _Group] = field(default_factory=dict[str, _Group])
    unknown: list[Line] = field(default_factory=list[Line])

    def message(self, line: Line, record: dict[str, Any], *, synthetic: bool = False) -> _Group:
        found = self.history.get(record["id"])
        if found is not None and not synthetic:
            found.record, found.numbers = record, [*found.numbers, line.number]
            return found
        group = _Group(line, record, [line.number], synthetic)
        self.history[record["id"]] = group
        if not synthetic:
            self.timeline.append(group)
        return group

    def rewind(self, line: Line, target: str) -> None:
        self.timeline.append(_Rewind(line, target))
        ids = list(self.history)
        keep = ids[: ids.index(target)] if target in self.history else []
        self.history = {k: self.history[k] for k in keep}

    def checkpoint(self, line: Line, messages: list[Any]) -> None:
        records = [m for m in messages if isinstance(m, dict) and isinstance(m.get("id"), str)]
        old, self.history = self.history, {}
        new: list[_Group] = []
        for record in records:
            if record["id"] in old:
                self.history[record["id"]] = old[record["id"]]
            else:
                new.append(self.message(line, record, synthetic=True))
        self.timeline.append(_Checkpoint(line, [r["id"] for r in records], new))

    def metadata(self, line: Line, update: dict[str, Any], name: str) -> None:
        self.meta.update(update)
        self.timeline.append(_Other(line, name))
        summary = update.get("summary")
        if isinstance(summary, str) and summary.strip():
            self.timeline.append(_Title(line, summary))


def replay(lines: list[Line]) -> _Replay:
    """The producer's reading of a recording (``loadConversationRecord``), as a timeline."""
    state = _Replay()
    tick = read_check()
    for line in lines:
        tick(len(line.raw))
        record = line.record
        assert record is not None
        if isinstance(record.get("$rewindTo"), str):
            state.rewind(line, record["$rewindTo"])
        elif isinstance(record.get("id"), str):
            state.message(line, record)
        elif isinstance(record.get("$set"), dict):
            update = as_dict(record["$set"])
            if isinstance(update.get("messages"), list):
                state.checkpoint(line, update["messages"])
            state.metadata(line, {k: v for k, v in update.items() if k != "messages"}, "set")
        elif isinstance(record.get("sessionId"), str):
            state.metadata(line, {k: v for k, v in record.items() if k != "messages"}, "metadata")
            for message in as_list(record.get("messages")):
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    state.message(line, message)  # pyright: ignore[reportUnknownArgumentType]
        else:
            state.unknown.append(line)
            state.timeline.append(_Other(line, "unknown"))
    return state


# -- the events ----------------------------------------------------------------------------


@dataclass(slots=True)
class _Emitter:
    builder: LogBuilder
    surface: list[tuple[str, int]] = field(default_factory=list[tuple[str, int]])

    def group(self, group: _Group) -> None:
        seq = emit_message(self.builder, group.record, group.line, group.numbers)
        if seq is not None:
            self.surface.append((group.record["id"], seq))

    def cut(self, start: int, kind: str, text: str, line: Line) -> None:
        """Replace the surface from position ``start`` with a marker (nothing if empty)."""
        builder, time = self.builder, iso_to_ms(as_dict(line.record).get("timestamp"))
        if start >= len(self.surface):
            builder.log_only(f"gemini/{kind}", line.raw, line.number, time)
            return
        builder.close_turn(builder.default_close_reason(), line.number, time)
        builder.user_message(
            f"{kind}-line-{line.number}",
            [{"type": "context", "text": text}],
            kind,
            line.number,
            time,
            replace_surface=True,
            replace_from=self.surface[start][1],
        )
        del self.surface[start:]

    def rewind(self, item: _Rewind) -> None:
        ids = [message_id for message_id, _ in self.surface]
        start = ids.index(item.target) if item.target in ids else 0
        text = f"Rewound to before message {item.target}"
        self.cut(start, "rewind", text, item.line)

    def checkpoint(self, item: _Checkpoint) -> None:
        ids = [message_id for message_id, _ in self.surface]
        keep = 0
        while keep < min(len(ids), len(item.ids)) and ids[keep] == item.ids[keep]:
            keep += 1
        retained = len(item.ids) - len(item.new)
        text = f"History replaced: {retained} earlier messages kept, {len(item.new)} new"
        self.cut(keep, "compaction", text, item.line)
        for group in item.new:
            seq = emit_message(self.builder, group.record, group.line, group.numbers, stated=True)
            if seq is not None:
                self.surface.append((group.record["id"], seq))


def _thought(value: object) -> str:
    thought = as_dict(value)
    return " ".join(str(thought.get(k) or "") for k in ("subject", "description")).strip()


def _content_blocks(record: dict[str, Any]) -> list[dict[str, Any]]:
    return genai.text_blocks(genai.parts_of(record.get("content")))


def _tool_blocks(record: dict[str, Any], number: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for index, call in enumerate(as_list(record.get("toolCalls"))):
        data = as_dict(call)
        block = call_block(
            data.get("id"),
            f"line-{number}-{index}",
            data.get("name"),
            compact_json(data.get("args", {})),
        )
        if isinstance(data.get("agentId"), str):
            block["agentId"] = data["agentId"]
        blocks.append(block)
    return blocks


def _result(call: dict[str, Any]) -> tuple[list[dict[str, Any]], bool] | None:
    status = call.get("status")
    parts = genai.parts_of(call.get("result")) if call.get("result") is not None else []
    blocks: list[dict[str, Any]] = []
    failed = status in ("error", "cancelled")
    for _call_id, response in genai.function_responses(parts):
        found, is_error = genai.response_blocks(response)
        blocks += found
        failed = failed or is_error
    blocks += genai.text_blocks(parts, reasoning=False)
    display = call.get("resultDisplay")
    if not blocks and isinstance(display, str) and display:
        blocks = [{"type": "text", "text": display}]
    if not blocks and status not in ("success", "error", "cancelled"):
        return None  # not run yet (or still running): the call stays pending
    return blocks, failed


def emit_message(
    builder: LogBuilder,
    record: dict[str, Any],
    line: Line,
    numbers: list[int],
    *,
    stated: bool = False,
) -> int | None:
    """The events of one message record; the seq of its first surface event, if any."""
    kind = record.get("type")
    time = iso_to_ms(record.get("timestamp"))
    number = line.number
    where: int | list[int] = numbers if len(numbers) > 1 else number
    if kind == "user":
        blocks = _content_blocks(record)
        if not stated:
            builder.open_turn(number, time, explicit=False)
        seq = builder.user_message(
            record["id"], blocks, "compaction" if stated else "user", number, time
        )
        if not stated:
            builder.derive_title(seq, blocks, number, time)
        return seq
    if kind == "gemini":
        thoughts = [
            {"type": "reasoning", "text": _thought(t)} for t in as_list(record.get("thoughts"))
        ]
        blocks = [*thoughts, *_content_blocks(record), *_tool_blocks(record, number)]
        extra: dict[str, Any] = {}
        if isinstance(record.get("model"), str):
            extra["model"] = record["model"]
        if isinstance(record.get("tokens"), dict):
            extra["usage"] = record["tokens"]
        seq = len(builder.events)
        builder.assistant_message(blocks, where, time, extra)
        first = next(
            i
            for i in range(seq, len(builder.events))
            if builder.events[i].type == "assistant/message"
        )
        for call in map(as_dict, as_list(record.get("toolCalls"))):
            outcome = _result(call)
            if outcome is None:
                continue
            call_id = call.get("id")
            when = iso_to_ms(call.get("timestamp")) or time
            if isinstance(call_id, str) and call_id:
                builder.tool_result(call_id, outcome[1], outcome[0], number, when)
        return first
    name = kind if isinstance(kind, str) and kind else "unknown"
    builder.log_only(f"gemini/{name}", compact_json(record), number, time)
    return None


# -- the file ------------------------------------------------------------------------------


def _lines_of(unit: UnitInput, where: Path) -> tuple[list[Line], list[Problem]]:
    if unit.key.endswith(".json"):
        try:
            record = json.loads(unit.data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            return [], [Problem(str(where), None, f"not a JSON recording ({exc}); skipped")]
        if not isinstance(record, dict):
            return [], [Problem(str(where), None, "not a JSON object; skipped")]
        return [Line(1, record, json.dumps(record, ensure_ascii=False))], []
    return parse_lines(where, unit.data, "empty recording; no session imported")


def _created(meta: dict[str, Any], lines: list[Line], name: str) -> int:
    created = iso_to_ms(meta.get("startTime"))
    if created is None:
        created = next(
            (t for t in (iso_to_ms(as_dict(ln.record).get("timestamp")) for ln in lines) if t),
            None,
        )
    if created is None:
        match = _NAME_DATE.search(name)
        if match is not None:
            day, hour, minute = match.groups()
            created = iso_to_ms(f"{day}T{hour}:{minute}:00Z")
    return created or 0


def parse_gemini_unit(unit: UnitInput) -> ParsedFile:
    """Parse one recording into its session and problems (never raises for bad lines)."""
    where = Path(unit.where)
    lines, problems = _lines_of(unit, where)
    if not lines:
        return ParsedFile((), tuple(problems))
    state = replay(lines)
    for line in state.unknown:
        problems.append(
            Problem(str(where), line.number, "unknown record; kept as a log-only event")
        )
    meta = state.meta
    stem = unit.name.rsplit(".", 1)[0]
    session_id = checked_id(meta.get("sessionId")) or derived_id(stem)
    if not checked_id(meta.get("sessionId")):
        problems.append(Problem(str(where), None, "no sessionId; id derived from the file name"))
    parts = unit.parts
    parent = None
    if meta.get("kind") == "subagent" and len(parts) >= 2 and parts[-2] != "chats":
        parent = derived_id(parts[-2])
    cwd = project_path(unit.sides, unit.key, meta.get("projectHash"))
    if cwd is None:
        directories = [d for d in as_list(meta.get("directories")) if usable_cwd(d)]
        cwd = directories[0] if directories else None
    if cwd is None and parent is None:
        message = "project path unknown (no .project_root or projects.json entry); cwd is None"
        problems.append(Problem(str(where), None, message))
    created = _created(meta, lines, unit.name)
    header = SessionHeader(
        id=session_id,
        created_at=created,
        cwd=cwd,
        parent_session=parent if parent != session_id else None,
        origin="subagent" if parent else None,
        delegation_depth=1 if parent else 0,
    )
    builder = LogBuilder(file=unit.key, last_time=created)
    emitter = _Emitter(builder)
    for item in state.timeline:
        if isinstance(item, _Group):
            emitter.group(item)
        elif isinstance(item, _Rewind):
            emitter.rewind(item)
        elif isinstance(item, _Checkpoint):
            emitter.checkpoint(item)
        elif isinstance(item, _Other):
            if not unit.key.endswith(".json"):  # a JSON document's messages are its events
                builder.log_only(f"gemini/{item.name}", item.line.raw, item.line.number, None)
        else:
            data = {"title": item.title, "messageSeqs": [], "source": {"kind": "gemini-summary"}}
            builder.emit("session/title", data, item.line.number, None)
    builder.finish(lines[-1].number)
    session = ParsedSession(header, tuple(builder.events), tuple(builder.surface), True)
    return ParsedFile((session,), tuple(problems))


class GeminiSource(TreeSource, kind="gemini", units=gemini_units, parser=parse_gemini_unit):
    """A read-only ``SessionPersistence`` over a Gemini CLI home.

    ``root`` is ``~/.gemini`` (or its ``tmp`` folder); ``$GEMINI_CLI_HOME/.gemini`` when Gemini
    runs with that variable. Arguments and errors: :class:`~._tree.TreeSource`.
    """
