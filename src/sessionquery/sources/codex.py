"""Codex CLI rollouts (``~/.codex/sessions``) as read-only sessions.

Every ``rollout-*.jsonl`` file under the sessions directory (date folders or flat) is one
session. The first ``session_meta`` line gives the header: ``id`` (else the uuid at the end of
the file name), ``cwd``, ``timestamp``; ``forked_from_id`` makes it a fork
(``origin="fork"``), a subagent source's ``parent_thread_id`` a subagent child
(``origin="subagent"``). Later ``session_meta`` lines (resumed or forked histories) are kept
as log-only events.

Line mapping (see ``docs/importers.md``): ``response_item`` messages → ``user/message`` /
``assistant/message``; injected preambles (developer/system roles, environment context,
AGENTS.md / user instructions) → ``user/message`` with ``source.kind = "injected"`` whose
words sit in ``context`` blocks, so they are on the surface but not searchable; reasoning →
``reasoning`` blocks; function, custom, local-shell and tool-search calls → a ``tool-call``
block plus ``tool/call``, their outputs → ``tool/result`` (joined by ``call_id``);
``compacted`` → a ``user/message`` replacing the whole current surface; ``event_msg``
``task_started`` / ``task_complete`` / ``turn_aborted`` → turn boundaries,
``thread_name_updated`` → ``session/title``; everything else → ignorable ``codex/<type>``
events holding the raw line.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path
from typing import Any

from sessionquery.model import SessionHeader
from sessionquery.model.jsonvalue import as_dict, as_list, compact_json
from sessionquery.persistence.documents import read_check
from sessionquery.sources._builder import LogBuilder
from sessionquery.sources._catalog import Catalog
from sessionquery.sources._common import Problem, checked_id, derived_id, iso_to_ms, usable_cwd
from sessionquery.sources._files import DEFAULT_MAX_FILE_BYTES
from sessionquery.sources._lines import Line, parse_lines
from sessionquery.sources._parsed import ParsedFile, ParsedSession, UnitInput
from sessionquery.sources._sqlite import DatabaseUnavailable, database_stamp, read_database
from sessionquery.sources.units import FileTree, Role

__all__ = ["CodexSource"]

KNOWN_LINE_TYPES = frozenset(
    {
        "session_meta",
        "turn_context",
        "response_item",
        "event_msg",
        "compacted",
        "world_state",
        "inter_agent_communication_metadata",
    }
)
"""Top-level rollout line types; others are kept too but reported as problems."""

_INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<developer_instructions>",
    "<permissions instructions>",
    "<instructions>",
    "# agents.md instructions",
)
_CALL_TYPES = frozenset(
    {"function_call", "custom_tool_call", "local_shell_call", "tool_search_call"}
)
_OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})
_NAME_DATE = re.compile(r"rollout-(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})")
_UUID_TAIL = re.compile(
    r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$"
)


def select_codex(rel: str, is_dir: bool) -> Role | None:
    """``rollout-*.jsonl`` files at any depth are transcripts."""
    if is_dir:
        return "transcript"
    name = rel.rsplit("/", 1)[-1]
    return "transcript" if name.startswith("rollout-") and name.endswith(".jsonl") else None


def codex_units(root: Path, *, follow_outside_links: bool = False) -> FileTree:
    """The transcript files under ``root``, as raw units."""
    return FileTree(Path(root), select_codex, follow_outside_links=follow_outside_links)


class _Default:
    """The type of :data:`_DEFAULT` (a sentinel: ``None`` means "no state folder")."""


_DEFAULT = _Default()


class ThreadNames:
    """Thread names Codex keeps in its state database, beside the rollouts.

    Current Codex releases keep thread metadata in ``state_<N>.sqlite`` (and the thread
    history in ``thread_history_<N>.sqlite``) in ``$CODEX_HOME``, the sessions folder's parent;
    a thread's ``name`` (set by the user, else its ``title``) is its title. The databases are
    opened read-only (:mod:`._sqlite`) and read again only when they (or their ``-wal``) change.
    """

    _PATTERNS = ("state_*.sqlite", "thread_history_*.sqlite")

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._stamp: str | None = None
        self._names: dict[str, str] = {}
        self._label = "state.sqlite"

    @property
    def label(self) -> str:
        """The database file the names come from."""
        return self._label

    def _databases(self) -> list[Path]:
        found: list[Path] = []
        for pattern in self._PATTERNS:
            found += sorted(self._folder.glob(pattern), key=_db_number, reverse=True)
        return found

    def titles(self) -> dict[str, str]:
        """The current names by thread id (empty when there is no readable database)."""
        databases = self._databases()
        stamp = "|".join(f"{db.name}={database_stamp(db)}" for db in databases)
        if stamp == self._stamp:
            return self._names
        names: dict[str, str] = {}
        for db in reversed(databases):  # the newest database is read last and wins
            try:
                names.update(read_database(db, _thread_names))
                self._label = db.name
            except (DatabaseUnavailable, sqlite3.Error):
                continue
        self._stamp, self._names = stamp, names
        return names


def _db_number(path: Path) -> int:
    digits = path.stem.rsplit("_", 1)[-1]
    return int(digits) if digits.isdigit() else -1


_NAME_QUERIES = {
    (True, True): "SELECT id, name, title FROM threads",
    (True, False): "SELECT id, name, NULL FROM threads",
    (False, True): "SELECT id, NULL, title FROM threads",
}
"""The thread-name query for the columns the schema has (``name``?, ``title``?)."""


def _thread_names(conn: sqlite3.Connection) -> dict[str, str]:
    columns = {row[1] for row in conn.execute("PRAGMA table_info(threads)")}
    query = _NAME_QUERIES.get(("name" in columns, "title" in columns))
    if "id" not in columns or query is None:
        return {}
    out: dict[str, str] = {}
    for thread, named, titled in conn.execute(query):
        value = named if isinstance(named, str) and named.strip() else titled
        if isinstance(thread, str) and isinstance(value, str) and value.strip():
            out[thread] = value
    return out


def parse_codex_file(unit: UnitInput) -> ParsedFile:
    """Parse one rollout's bytes into its session and problems (never raises for bad lines)."""
    path, rel = Path(unit.where), unit.key
    lines, problems = parse_lines(path, unit.data, "empty rollout; no session imported")
    if not lines:
        return ParsedFile((), tuple(problems))
    header = _header(path, lines, problems)
    builder = LogBuilder(file=rel, last_time=header.created_at)
    copied = _copied_prefix(unit, lines, header)
    meta_seen = False
    tick = read_check()
    for line in lines:
        tick(len(line.raw))
        record = line.record
        assert record is not None
        if line.number in copied:
            if line.number == min(copied):
                data = {
                    "parent": header.parent_session,
                    "lines": [min(copied), max(copied)],
                    "count": len(copied),
                }
                builder.emit("codex/inherited", data, line.number, None, ignorable=True)
            continue
        kind = record.get("type")
        if kind == "session_meta" and not meta_seen:
            meta_seen = True
            builder.log_only("codex/session_meta", line.raw, line.number, header.created_at)
            continue
        if not isinstance(kind, str) or kind not in KNOWN_LINE_TYPES:
            message = f"unknown line type {kind!r}; kept as a log-only event"
            problems.append(Problem(str(path), line.number, message))
        _convert(builder, line, record)
    builder.finish(lines[-1].number)
    session = ParsedSession(header, tuple(builder.events), tuple(builder.surface), True)
    return ParsedFile((session,), tuple(problems))


def _turn_ids(data: bytes) -> frozenset[str]:
    """The ``turn_context`` turn ids of a rollout (read without parsing the other lines)."""
    out: set[str] = set()
    for chunk in data.split(b"\n"):
        if b'"turn_context"' not in chunk:
            continue
        try:
            record = json.loads(chunk)
        except ValueError:
            continue
        turn = _dict(_dict(record).get("payload")).get("turn_id")
        if _dict(record).get("type") == "turn_context" and isinstance(turn, str):
            out.add(turn)
    return frozenset(out)


def _copied_prefix(unit: UnitInput, lines: list[Line], header: SessionHeader) -> set[int]:
    """The line numbers of a fork's or subagent's re-stamped copy of its parent's rollout.

    Codex starts a fork (and a subagent that inherits the conversation) with the parent's
    lines, re-stamped: the parent's ``session_meta``, then its turns. They are the child's
    leading lines after its own ``session_meta`` (a fork) or from the copied parent
    ``session_meta`` on (a subagent), up to the first ``turn_context`` whose ``turn_id`` the
    parent does not have. Without the parent's rollout nothing is taken as copied.
    """
    parent, origin = header.parent_session, header.origin
    if parent is None:
        return set()
    key = unit.sides.find(f"{parent}.jsonl")
    if key is None:
        return set()
    none: frozenset[str] = frozenset()
    # The copy was made from the parent as it was; the parent growing later cannot move the
    # boundary (a child's own turn ids are never the parent's), so only its presence matters.
    turns = unit.sides.memo(key, "turn-ids", _turn_ids, none, presence_only=True)
    copied: set[int] = set()
    active, own_meta = origin == "fork", False
    for line in lines:
        record = _dict(line.record)
        kind, payload = record.get("type"), _dict(record.get("payload"))
        if kind == "session_meta" and not own_meta:
            own_meta = True
            continue
        if not active:
            if kind == "session_meta" and payload.get("id") == parent:
                active = True
            else:
                continue
        if kind == "turn_context" and payload.get("turn_id") not in turns:
            break
        copied.add(line.number)
    return copied


def _header(path: Path, lines: list[Line], problems: list[Problem]) -> SessionHeader:
    meta: dict[str, Any] | None = None
    for line in lines:
        assert line.record is not None
        if line.record.get("type") == "session_meta":
            meta = _dict(line.record.get("payload"))
            stamp = line.record.get("timestamp")
            break
    stem = path.name[: -len(".jsonl")]
    match = _UUID_TAIL.search(stem)
    fallback_id = match.group(1) if match else derived_id(stem)
    if meta is None:
        problems.append(Problem(str(path), None, "no session_meta; id derived from the file name"))
        meta, stamp = {}, None
    session_id = checked_id(meta.get("id")) or fallback_id
    created = iso_to_ms(meta.get("timestamp")) or iso_to_ms(stamp)
    if created is None:
        created = next(
            (t for t in (iso_to_ms(_dict(ln.record).get("timestamp")) for ln in lines) if t),
            None,
        )
    if created is None:
        created = _name_date(stem)
    cwd = meta.get("cwd") if isinstance(meta.get("cwd"), str) else None
    if cwd is not None and usable_cwd(cwd) is None:
        message = f"cwd {cwd!r} is not absolute, or not valid text; cwd is None"
        problems.append(Problem(str(path), None, message))
        cwd = None
    elif cwd is None:
        problems.append(Problem(str(path), None, "no cwd in session_meta; cwd is None"))
    parent, origin = _lineage(meta)
    return SessionHeader(
        id=session_id,
        created_at=created,
        cwd=cwd,
        parent_session=parent if parent != session_id else None,
        origin=origin,
        delegation_depth=1 if origin == "subagent" else 0,
    )


def _lineage(meta: dict[str, Any]) -> tuple[str | None, str | None]:
    spawn = _dict(_dict(_dict(meta.get("source")).get("subagent")).get("thread_spawn"))
    subagent_parent = checked_id(spawn.get("parent_thread_id")) or (
        checked_id(meta.get("parent_thread_id"))
        if isinstance(_dict(meta.get("source")).get("subagent"), dict)
        else None
    )
    if subagent_parent:
        return subagent_parent, "subagent"
    forked = checked_id(meta.get("forked_from_id"))
    if forked:
        return forked, "fork"
    return None, None


def _convert(builder: LogBuilder, line: Line, record: dict[str, Any]) -> None:
    kind = record.get("type")
    payload = _dict(record.get("payload"))
    sub = payload.get("type")
    time = iso_to_ms(record.get("timestamp"))
    if kind == "response_item" and _response_item(builder, line, payload, time):
        return
    if kind == "event_msg" and _event_msg(builder, line, payload, time):
        return
    if kind == "compacted":
        text = payload.get("message") if isinstance(payload.get("message"), str) else ""
        content = [{"type": "text", "text": text}] if text else []
        builder.user_message(
            f"compacted-line-{line.number}",
            content,
            "compaction",
            line.number,
            time,
            replace_surface=True,
        )
        return
    name = f"codex/{kind}/{sub}" if isinstance(sub, str) and sub else f"codex/{kind or 'unknown'}"
    builder.log_only(name, line.raw, line.number, time)


def _response_item(builder: LogBuilder, line: Line, item: dict[str, Any], time: int | None) -> bool:
    kind = item.get("type")
    number = line.number
    if kind == "message":
        role = item.get("role")
        blocks = _message_blocks(item.get("content"))
        message_id = str(item.get("id") or f"line-{number}")
        if role == "assistant":
            builder.assistant_message(blocks, number, time)
        elif role != "user" or _is_injected(blocks):
            context = [dict(b, type="context") if b.get("type") == "text" else b for b in blocks]
            extra = {"role": role} if isinstance(role, str) else None
            builder.user_message(message_id, context, "injected", number, time, extra=extra)
        else:
            if not (builder.turn_open and builder.turn_explicit):
                builder.open_turn(number, time, explicit=False)
            seq = builder.user_message(message_id, blocks, "user", number, time)
            builder.derive_title(seq, _request_blocks(blocks), number, time)
        return True
    if kind == "reasoning":
        parts = [_dict(p).get("text") for p in _list(item.get("summary"))]
        parts += [_dict(p).get("text") for p in _list(item.get("content"))]
        text = "\n".join(p for p in parts if isinstance(p, str))
        builder.assistant_message([{"type": "reasoning", "text": text}], number, time)
        return True
    if kind in _CALL_TYPES and isinstance(item.get("call_id"), str):
        raw = item.get("arguments", item.get("input", item.get("action")))
        call = {
            "type": "tool-call",
            "id": item["call_id"],
            "name": str(item.get("name") or kind),
            "arguments": raw if isinstance(raw, str) else compact_json(raw),
        }
        builder.assistant_message([call], number, time)
        return True
    if kind in _OUTPUT_TYPES and isinstance(item.get("call_id"), str):
        content = _output_blocks(item.get("output", item.get("tools")))
        builder.tool_result(item["call_id"], _is_error(item), content, number, time)
        return True
    return False


def _event_msg(builder: LogBuilder, line: Line, event: dict[str, Any], time: int | None) -> bool:
    kind = event.get("type")
    number = line.number
    if kind in ("task_started", "turn_started"):
        builder.log_only(f"codex/event_msg/{kind}", line.raw, number, time)
        builder.open_turn(number, time, explicit=True)
        return True
    if kind in ("task_complete", "turn_complete"):
        builder.log_only(f"codex/event_msg/{kind}", line.raw, number, time)
        error = _dict(event.get("error"))
        reason: dict[str, Any] = {"kind": "completed"}
        if error:
            reason = {"kind": "error", "error": {"message": str(error.get("message") or "")}}
        builder.close_turn(reason, number, time)
        return True
    if kind == "turn_aborted":
        builder.log_only("codex/event_msg/turn_aborted", line.raw, number, time)
        why = event.get("reason")
        reason = {"kind": "aborted", "reason": {"kind": "user"}, "codexReason": why}
        builder.close_turn(reason, number, time)
        return True
    if kind == "thread_name_updated" and isinstance(event.get("thread_name"), str):
        data = {"title": event["thread_name"], "messageSeqs": [], "source": {"kind": "codex"}}
        builder.emit("session/title", data, number, time)
        return True
    return False


_dict, _list = as_dict, as_list


def _name_date(stem: str) -> int:
    """The start time a rollout's file name records (UTC), else 0 (listed last)."""
    match = _NAME_DATE.match(stem)
    if match is None:
        return 0
    day, hour, minute, second = match.groups()
    return iso_to_ms(f"{day}T{hour}:{minute}:{second}Z") or 0


def _message_blocks(content: object) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    out: list[dict[str, Any]] = []
    for part in _list(content):
        block = _dict(part)
        text = block.get("text")
        if block.get("type") in ("input_text", "output_text", "text") and isinstance(text, str):
            out.append({"type": "text", "text": text})
        elif block:
            out.append({"type": str(block.get("type") or "unknown")})
    return out


_IDE_CONTEXT = "# context from my ide setup:"
_IDE_REQUEST = re.compile(r"^#+ my request for codex:?[ \t]*$", re.IGNORECASE | re.MULTILINE)


def _request_blocks(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The blocks a title is derived from: for a prompt that starts with the IDE's context
    preamble (``# Context from my IDE setup:`` ... ``## My request for Codex:``), only the
    request after it; a preamble without a request gives no title text."""
    texts = [b for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)]
    if not texts or not texts[0]["text"].lstrip().lower().startswith(_IDE_CONTEXT):
        return blocks
    text = texts[0]["text"]
    match = _IDE_REQUEST.search(text)
    request = text[match.end() :] if match is not None else ""
    return [{"type": "text", "text": request}, *texts[1:]]


def _is_injected(blocks: list[dict[str, Any]]) -> bool:
    texts = [b["text"] for b in blocks if b.get("type") == "text"]
    return bool(texts) and texts[0].lstrip().lower().startswith(_INJECTED_PREFIXES)


def _output_blocks(output: object) -> list[dict[str, Any]]:
    if isinstance(output, str):
        # Older rollouts wrap shell output as a JSON string {"output": ..., "metadata": ...}.
        try:
            decoded = json.loads(output)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict) and isinstance(decoded.get("output"), str):
            output = decoded["output"]
        return [{"type": "text", "text": output}] if isinstance(output, str) else []
    if isinstance(output, dict):
        return _message_blocks([output])
    if isinstance(output, list):
        return _message_blocks(output)
    return [{"type": "text", "text": compact_json(output)}] if output is not None else []


def _is_error(item: dict[str, Any]) -> bool:
    output = item.get("output")
    if isinstance(output, str):
        try:
            decoded = json.loads(output)
        except ValueError:
            return False
        code = _dict(_dict(decoded).get("metadata")).get("exit_code")
        return isinstance(code, int) and code != 0
    return False


class CodexSource(Catalog, kind="codex", units=codex_units, parser=parse_codex_file):
    """A read-only ``SessionPersistence`` over a Codex ``sessions`` directory.

    Args:
        sessions_dir: a ``~/.codex/sessions``-style directory; ``rollout-*.jsonl`` files are
            found at any depth (``YYYY/MM/DD`` folders or flat).
        metadata_cache: a SQLite file that keeps what each rollout yields between runs
            (derived, disposable, shareable by processes), or ``None`` to keep it in memory.
        max_file_bytes: rollouts larger than this are reported and not read (256 MiB).
        follow_outside_links: follow symbolic links that lead outside ``sessions_dir``.
        state_dir: where Codex's state databases (thread names) are; the sessions folder's
            parent (``$CODEX_HOME``) by default. ``None`` there reads no thread names.

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` when ``metadata_cache`` names a file that is not
            an importer cache (it is left untouched).
        ValueError: ``max_file_bytes`` is not a positive integer.
    """

    def __init__(
        self,
        sessions_dir: str | os.PathLike[str],
        *,
        metadata_cache: str | os.PathLike[str] | None = None,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        follow_outside_links: bool = False,
        state_dir: str | os.PathLike[str] | _Default | None = _DEFAULT,
    ) -> None:
        folder = Path(sessions_dir).absolute()
        tree = codex_units(folder, follow_outside_links=follow_outside_links)
        state = folder.parent if isinstance(state_dir, _Default) else state_dir
        super().__init__(
            tree,
            parse_codex_file,
            metadata_cache=metadata_cache,
            max_file_bytes=max_file_bytes,
            titles=None if state is None else ThreadNames(Path(state)),
        )
