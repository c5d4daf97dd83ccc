"""OpenCode sessions (``~/.local/share/opencode``) as read-only sessions.

OpenCode (v1.2+) keeps every session in ``opencode.db``: tables ``session`` (``id``,
``parent_id``, ``directory``, ``title``, ``revert``, ``time_created``, ``time_updated``),
``message`` and ``part`` (JSON ``data`` columns: ``MessageV2.Info`` and ``MessageV2.Part`` of
``packages/opencode/src/session/message-v2.ts`` in sst/opencode, ``session.sql.ts`` for the
tables). Older releases wrote the same values as a JSON tree:
``storage/session/<project>/<id>.json``, ``storage/message/<session>/<id>.json`` and
``storage/part/<message>/<id>.json``.

Each session is one raw unit ``session/<id>`` whose bytes are a normalized JSON document of its
rows (``{"format", "session", "messages": [{…, "parts": […]}]}``): the archive copies that,
never the database. The database is opened read-only and never written (see :mod:`._sqlite`);
its stamp (and its ``-wal`` file's) is the store's fingerprint, so an unchanged database is
not queried at all, and a changed one is asked only for each session's row counts and newest
change time, to re-read only the sessions that changed.

* the session's ``directory`` is its ``cwd``; ``parent_id`` makes it a child
  (``origin="subagent"``: a task the parent delegated), ``title`` its title;
* a user message → ``user/message`` opening a turn (its ``text`` parts; ``synthetic`` ones as
  unsearchable context, ``subtask`` parts as the delegated prompt); an assistant message →
  ``assistant/message`` events (``reasoning`` parts → ``reasoning``; ``tool`` parts →
  ``tool-call`` blocks plus ``tool/call`` and a ``tool/result`` from their completed or failed
  state), a new step at each ``step-start``;
* an assistant message with ``summary: true`` (a compaction) → a ``user/message``
  (``source.kind: "compaction"``) holding its text, replacing the whole surface;
* ``session.revert`` (the user reverted to a message) → a ``user/message``
  (``source.kind: "rewind"``) replacing that message and everything after it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sessionquery.model import SessionHeader
from sessionquery.model.jsonvalue import as_dict, as_list, compact_json
from sessionquery.persistence.documents import read_check
from sessionquery.sources._builder import LogBuilder
from sessionquery.sources._catalog import Catalog
from sessionquery.sources._common import Problem, checked_id, usable_cwd
from sessionquery.sources._files import DEFAULT_MAX_FILE_BYTES, FileStamp, read_regular
from sessionquery.sources._parsed import ParsedFile, ParsedSession, Parser, UnitInput
from sessionquery.sources._sqlite import (
    DatabaseUnavailable,
    database_stamp,
    read_database,
    read_unit,
)
from sessionquery.sources.units import SkippedFile, Unit

__all__ = ["DOCUMENT_FORMAT", "OpenCodeSource", "OpenCodeUnits", "parse_opencode_unit"]

DOCUMENT_FORMAT = "opencode-session/1"
"""The ``format`` of a session's normalized document (the bytes of its unit)."""

DATABASE = "opencode.db"
_STORAGE = "storage"

_STAMP_COLUMNS = (
    "SELECT s.id, s.time_updated,"
    " (SELECT count(*) || ':' || coalesce(max(m.time_updated), 0) FROM message m"
    "  WHERE m.session_id = s.id),"
    " (SELECT count(*) || ':' || coalesce(max(p.time_updated), 0) FROM part p"
    "  WHERE p.session_id = s.id)"
    " FROM session s"
)
_STAMPS = _STAMP_COLUMNS + " ORDER BY s.id"
_STAMP_ONE = _STAMP_COLUMNS + " WHERE s.id = ?"
_SESSION_COLUMNS = (
    "id", "parent_id", "directory", "title", "revert", "time_created", "time_updated"
)  # fmt: skip
_SESSION = (
    "SELECT id, parent_id, directory, title, revert, time_created, time_updated"
    " FROM session WHERE id = ?"
)
_MESSAGES = (
    "SELECT id, time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id"
)
_PARTS = "SELECT id, message_id, time_created, data FROM part WHERE session_id = ? ORDER BY id"
_SIZE = (
    "SELECT coalesce((SELECT sum(length(data)) FROM message WHERE session_id = ?), 0)"
    " + coalesce((SELECT sum(length(data)) FROM part WHERE session_id = ?), 0)"
)


def _loads(text: object) -> Any:
    if not isinstance(text, str | bytes):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


class OpenCodeUnits:
    """The sessions of an OpenCode data folder as raw units (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        given = Path(root).absolute()
        # The data folder, or the database file itself (its folder then holds the legacy tree).
        self._root = given.parent if given.is_file() else given
        self._db = given if given.is_file() else given / DATABASE
        self._legacy: dict[str, tuple[Path, list[Path]]] = {}

    @property
    def location(self) -> Path:
        """The OpenCode data folder."""
        return self._root

    def where(self, key: str) -> str:
        """The database (or the legacy session file) a problem about ``key`` names."""
        legacy = self._legacy.get(key)
        return str(legacy[0]) if legacy is not None else str(self._db)

    def fingerprint(self) -> str | None:
        """The database's and its ``-wal`` file's stat; ``None`` when a legacy tree exists."""
        if (self._root / _STORAGE / "session").exists():
            return None
        return database_stamp(self._db)

    def scan(self) -> tuple[list[Unit], list[Problem]]:
        """Every session: the database's (one query), then the legacy tree's others."""
        units: dict[str, Unit] = {}
        problems: list[Problem] = []
        if self._db.exists():
            try:
                rows = read_database(self._db, lambda c: c.execute(_STAMPS).fetchall())
            except DatabaseUnavailable as exc:
                problems.append(Problem(str(self._db), None, str(exc)))
            except sqlite3.Error as exc:
                message = f"unexpected schema ({exc}); its sessions are not listed"
                problems.append(Problem(str(self._db), None, message))
            else:
                for sid, updated, messages, parts in rows:
                    key = f"session/{sid}"
                    units[key] = Unit(key, f"db:{updated}:{messages}:{parts}")
        self._legacy = {}
        self._scan_legacy(units, problems)
        if not units and not problems and not self._db.exists():
            problems.append(Problem(str(self._root), None, "no opencode.db or storage/ here"))
        return [units[k] for k in sorted(units)], problems

    def _scan_legacy(self, units: dict[str, Unit], problems: list[Problem]) -> None:
        sessions = self._root / _STORAGE / "session"
        if not sessions.is_dir():
            return
        for path in sorted(sessions.glob("*/*.json")):
            key = f"session/{path.stem}"
            if key in units:
                continue  # migrated into the database: the database's copy is read
            files = [path]
            message_dir = self._root / _STORAGE / "message" / path.stem
            for message in sorted(message_dir.glob("*.json")):
                files.append(message)
                part_dir = self._root / _STORAGE / "part" / message.stem
                files.extend(sorted(part_dir.glob("*.json")))
            self._legacy[key] = (path, files)
            units[key] = Unit(key, _files_stamp(files, problems))

    def stat(self, key: str) -> Unit | None:
        """A session's current stamp (one indexed query, or a stat of its files)."""
        legacy = self._legacy.get(key)
        if legacy is not None:
            return Unit(key, _files_stamp(legacy[1], [])) if legacy[0].exists() else None
        sid = key.removeprefix("session/")
        try:
            row = read_database(self._db, lambda c: c.execute(_STAMP_ONE, (sid,)).fetchone())
        except (DatabaseUnavailable, sqlite3.Error):
            return None
        return None if row is None else Unit(key, f"db:{row[1]}:{row[2]}:{row[3]}")

    def read(self, key: str, max_bytes: int) -> tuple[bytes, Unit]:
        """The session's normalized document and its stamp.

        Raises:
            SkippedFile: the session is gone or the database cannot be read now.
        """
        if key in self._legacy:
            return self._read_legacy(key, max_bytes)
        sid = key.removeprefix("session/")
        document, stamp = read_unit(self._db, lambda c: _document(c, sid, max_bytes))
        if document is None:
            raise SkippedFile(f"session {sid!r} is no longer in the database")
        data = json.dumps(document, ensure_ascii=False).encode("utf-8")
        if len(data) > max_bytes:
            raise SkippedFile(
                f"session is {len(data)} bytes, over the {max_bytes}-byte limit; skipped"
            )
        return data, Unit(key, stamp, len(data))

    def _read_legacy(self, key: str, max_bytes: int) -> tuple[bytes, Unit]:
        path, files = self._legacy[key]
        stamp = _files_stamp(files, [])
        values = {file: _loads(read_regular(file, max_bytes)[0]) for file in files}
        info = as_dict(values[path])
        messages: list[dict[str, Any]] = []
        for file in files[1:]:
            if file.parent.parent.name == "message":
                data = as_dict(values[file])
                created = as_dict(data.get("time")).get("created")
                messages.append(
                    {"id": file.stem, "time_created": created, "data": data, "parts": []}
                )
            elif messages:
                messages[-1]["parts"].append({"id": file.stem, "data": values[file]})
        time = as_dict(info.get("time"))
        session = {
            "id": info.get("id", path.stem),
            "parent_id": info.get("parentID"),
            "directory": info.get("directory"),
            "title": info.get("title"),
            "revert": info.get("revert"),
            "time_created": time.get("created"),
            "time_updated": time.get("updated"),
        }
        document = {"format": DOCUMENT_FORMAT, "session": session, "messages": messages}
        encoded = json.dumps(document, ensure_ascii=False).encode("utf-8")
        return encoded, Unit(key, stamp, len(encoded))


def _files_stamp(files: list[Path], problems: list[Problem]) -> str:
    digest = hashlib.sha256()
    for file in files:
        try:
            digest.update(FileStamp.of(os.stat(file)).revision.encode())
        except OSError as exc:
            problems.append(Problem(str(file), None, f"cannot read file: {exc.strerror}"))
        digest.update(b"\n")
    return f"files:{len(files)}:{digest.hexdigest()[:32]}"


def _document(
    conn: sqlite3.Connection, sid: str, max_bytes: int
) -> tuple[dict[str, Any] | None, str]:
    row = conn.execute(_SESSION, (sid,)).fetchone()
    if row is None:
        return None, ""
    (size,) = conn.execute(_SIZE, (sid, sid)).fetchone()
    if size > max_bytes:  # checked before a row is loaded: a huge session costs no memory
        raise SkippedFile(f"session is {size} bytes, over the {max_bytes}-byte limit; skipped")
    stamp_row = conn.execute(_STAMP_ONE, (sid,)).fetchone()
    stamp = f"db:{stamp_row[1]}:{stamp_row[2]}:{stamp_row[3]}"
    session = dict(zip(_SESSION_COLUMNS, row, strict=True))
    session["revert"] = _loads(session["revert"])
    messages: dict[str, dict[str, Any]] = {}
    for mid, created, data in conn.execute(_MESSAGES, (sid,)):
        messages[mid] = {"id": mid, "time_created": created, "data": _loads(data), "parts": []}
    for pid, mid, created, data in conn.execute(_PARTS, (sid,)):
        if mid in messages:
            messages[mid]["parts"].append(
                {"id": pid, "time_created": created, "data": _loads(data)}
            )
    return {
        "format": DOCUMENT_FORMAT,
        "session": session,
        "messages": list(messages.values()),
    }, stamp


class OpenCodeSource(Catalog):
    """A read-only ``SessionPersistence`` over an OpenCode data folder.

    Args:
        root: ``~/.local/share/opencode`` (``$XDG_DATA_HOME/opencode`` when set), holding
            ``opencode.db`` and/or the legacy ``storage/`` tree; or the database file itself.
        metadata_cache: a SQLite file that keeps what each session yields between runs
            (derived, disposable, shareable by processes), or ``None`` to keep it in memory.
        max_file_bytes: sessions whose rows exceed this are reported and not read (256 MiB).

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` when ``metadata_cache`` names a file that is not
            an importer cache (it is left untouched).
        ValueError: ``max_file_bytes`` is not a positive integer.
    """

    kind = "opencode"

    @classmethod
    def unit_parser(cls) -> Parser:
        """The parser of this kind's units."""
        return parse_opencode_unit

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        metadata_cache: str | os.PathLike[str] | None = None,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    ) -> None:
        super().__init__(
            OpenCodeUnits(Path(root)),
            parse_opencode_unit,
            metadata_cache=metadata_cache,
            max_file_bytes=max_file_bytes,
        )


# -- the document to events -----------------------------------------------------------------


def _tool(builder: LogBuilder, part: dict[str, Any], line: int, time: int | None) -> None:
    state = as_dict(part.get("state"))
    call_id = str(part.get("callID") or f"line-{line}")
    block = {
        "type": "tool-call",
        "id": call_id,
        "name": str(part.get("tool") or "unknown"),
        "arguments": compact_json(state.get("input", {})),
    }
    builder.assistant_message([block], line, time)
    status = state.get("status")
    if status == "completed":
        output = state.get("output")
        failed = part.get("tool") == "invalid" or _exit(state) not in (None, 0)
        blocks = [{"type": "text", "text": output}] if isinstance(output, str) and output else []
        builder.tool_result(call_id, failed, blocks, line, _end(state) or time)
    elif status == "error":
        error = state.get("error")
        blocks = [{"type": "text", "text": error}] if isinstance(error, str) and error else []
        builder.tool_result(call_id, True, blocks, line, _end(state) or time)


def _exit(state: dict[str, Any]) -> object:
    return as_dict(state.get("metadata")).get("exit")


def _end(state: dict[str, Any]) -> int | None:
    end = as_dict(state.get("time")).get("end")
    return end if type(end) is int and end >= 0 else None


def _user(builder: LogBuilder, message: dict[str, Any], line: int, time: int | None) -> int:
    blocks: list[dict[str, Any]] = []
    for part in map(as_dict, (p.get("data") for p in as_list(message.get("parts")))):
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            context = part.get("synthetic") is True or part.get("ignored") is True
            blocks.append({"type": "context" if context else "text", "text": part["text"]})
        elif kind == "subtask" and isinstance(part.get("prompt"), str):
            blocks.append({"type": "text", "text": part["prompt"]})
        elif kind == "file":
            blocks.append(
                {"type": "file", "name": part.get("filename"), "mediaType": part.get("mime")}
            )
    builder.open_turn(line, time, explicit=False)
    seq = builder.user_message(str(message.get("id")), blocks, "user", line, time)
    builder.derive_title(seq, blocks, line, time)
    return seq


def _assistant(builder: LogBuilder, message: dict[str, Any], line: int, time: int | None) -> int:
    info = as_dict(message.get("data"))
    extra: dict[str, Any] = {}
    if isinstance(info.get("modelID"), str):
        extra["model"] = info["modelID"]
    first = len(builder.events)
    pending: list[dict[str, Any]] = []

    def flush() -> None:
        if pending:
            builder.assistant_message(list(pending), line, time, extra)
            pending.clear()

    for part in map(as_dict, (p.get("data") for p in as_list(message.get("parts")))):
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str) and part["text"]:
            pending.append({"type": "text", "text": part["text"]})
        elif kind == "reasoning":
            pending.append({"type": "reasoning", "text": str(part.get("text") or "")})
        elif kind == "tool":
            flush()
            _tool(builder, part, line, time)
        elif kind == "step-finish":
            flush()
            builder.close_step(line, time)
    flush()
    error = as_dict(info.get("error"))
    if error and builder.turn_open:
        reason = {
            "kind": "error",
            "error": {
                "message": str(as_dict(error.get("data")).get("message") or error.get("name") or "")
            },
        }
        builder.close_turn(reason, line, time)
    return first


def _summary(builder: LogBuilder, message: dict[str, Any], line: int, time: int | None) -> int:
    texts = [
        {"type": "text", "text": part["text"]}
        for part in map(as_dict, (p.get("data") for p in as_list(message.get("parts"))))
        if part.get("type") == "text" and isinstance(part.get("text"), str)
    ]
    builder.close_turn(builder.default_close_reason(), line, time)
    return builder.user_message(
        str(message.get("id")), texts, "compaction", line, time, replace_surface=True
    )


def _time(value: object) -> int | None:
    return value if type(value) is int and value >= 0 else None


def parse_opencode_unit(unit: UnitInput) -> ParsedFile:
    """Parse one session's normalized document into its session and problems."""
    where = unit.where
    document = as_dict(_loads(unit.data))
    if document.get("format") != DOCUMENT_FORMAT:
        return ParsedFile(
            (), (Problem(where, None, f"{unit.key}: not an OpenCode session document"),)
        )
    session = as_dict(document.get("session"))
    problems: list[Problem] = []
    sid = checked_id(session.get("id"))
    if sid is None:
        return ParsedFile((), (Problem(where, None, f"{unit.key}: session without a usable id"),))
    cwd = usable_cwd(session.get("directory"))
    if cwd is None:
        problems.append(Problem(where, None, f"session {sid}: no usable directory; cwd is None"))
    created = _time(session.get("time_created")) or 0
    parent = checked_id(session.get("parent_id"))
    header = SessionHeader(
        id=sid,
        created_at=created,
        cwd=cwd,
        parent_session=parent if parent != sid else None,
        origin="subagent" if parent and parent != sid else None,
        delegation_depth=1 if parent and parent != sid else 0,
    )
    builder = LogBuilder(file=unit.key, last_time=created)
    starts: dict[str, int] = {}
    handlers: dict[str, Callable[[LogBuilder, dict[str, Any], int, int | None], int]] = {
        "user": _user,
        "assistant": _assistant,
    }
    tick = read_check()
    messages = as_list(document.get("messages"))
    for index, message in enumerate(map(as_dict, messages), start=1):
        tick(len(message.get("parts") or ()))
        info = as_dict(message.get("data"))
        time = _time(as_dict(info.get("time")).get("created")) or _time(message.get("time_created"))
        role = info.get("role")
        if role == "assistant" and info.get("summary") is True:
            starts[str(message.get("id"))] = _summary(builder, message, index, time)
        elif isinstance(role, str) and role in handlers:
            seq = handlers[role](builder, message, index, time)
            if seq >= 0:
                starts[str(message.get("id"))] = seq
        else:
            builder.log_only("opencode/message", compact_json(info), index, time)
            problems.append(
                Problem(
                    where, None, f"session {sid}: message {message.get('id')} has no known role"
                )
            )
    title = session.get("title")
    if isinstance(title, str) and title.strip():
        data = {"title": title, "messageSeqs": [], "source": {"kind": "opencode-title"}}
        builder.emit(
            "session/title", data, max(len(messages), 1), _time(session.get("time_updated"))
        )
    revert = as_dict(session.get("revert"))
    target = starts.get(str(revert.get("messageID")))
    start = next((s for s in builder.current if target is not None and s >= target), None)
    if start is not None:
        builder.close_turn(builder.default_close_reason(), len(messages), None)
        builder.user_message(
            "revert",
            [{"type": "context", "text": f"Reverted to before message {revert.get('messageID')}"}],
            "rewind",
            max(len(messages), 1),
            None,
            replace_surface=True,
            replace_from=start,
        )
    builder.finish(max(len(messages), 1))
    parsed = ParsedSession(header, tuple(builder.events), tuple(builder.surface), True)
    return ParsedFile((parsed,), tuple(problems))
