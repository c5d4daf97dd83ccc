"""Shared machinery of the read-only importers: problems, line reading, log building, caching.

Invariants every importer keeps:

* an imported log is a valid event log: seqs contiguous from 0, and :func:`fold_surface`
  succeeds on it (the builder only ever appends or replaces the *whole* current surface);
* every event's ``data`` carries ``origin = {"file": <path relative to the source root>,
  "line": <1-based line>}`` (plus ``"lines"`` when several lines were merged into one event);
* a damaged line never stops the rest of a file from being read; it becomes a
  :class:`Problem`;
* parse results are cached per file and keyed by the file's stat revision, so an unchanged
  file is never parsed twice by the same source object.
"""

from __future__ import annotations

import builtins
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path, PurePosixPath, PureWindowsPath
from types import TracebackType
from typing import Any, Self

from sessionquery.errors import PersistenceClosed, PersistenceCorrupt, PersistenceNotFound
from sessionquery.model import Replace, SessionEvent, SessionHeader, validate_session_id
from sessionquery.persistence.base import PersistedSession

__all__ = ["Problem"]

ORIGIN_KEY = "origin"
"""The ``data`` key that holds an event's source pointer (not a SPEC field, so no clash)."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing an importer could not read as expected.

    Attributes:
        path: absolute path of the file (or directory) concerned.
        line: 1-based physical line number, or ``None`` for a whole-file problem.
        message: what is wrong and what the importer did about it.
    """

    path: str
    line: int | None
    message: str


def is_absolute_path(value: str) -> bool:
    """Whether ``value`` is an absolute POSIX or Windows path."""
    return PurePosixPath(value).is_absolute() or PureWindowsPath(value).is_absolute()


def iso_to_ms(value: object) -> int | None:
    """An ISO-8601 timestamp (``Z`` or offset) as epoch milliseconds, or ``None``."""
    if not isinstance(value, str) or "T" not in value:
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    millis = int(parsed.timestamp() * 1000)
    return millis if millis >= 0 else None


# --------------------------------------------------------------------------- line reading


@dataclass(frozen=True, slots=True)
class Line:
    """One physical line of a transcript: its number and parsed JSON object, or an error."""

    number: int
    record: dict[str, Any] | None
    raw: str
    error: str | None = None


def read_lines(path: Path) -> Iterator[Line]:
    """Parse a JSONL file line by line, never raising for a bad line.

    A last line without a newline that does not parse is reported as truncated; blank lines
    are skipped silently.
    """
    with path.open("rb") as handle:
        data = handle.read()
    chunks = data.split(b"\n")
    last = len(chunks) - 1
    for index, chunk in enumerate(chunks):
        number = index + 1
        if not chunk.strip():
            continue
        torn = index == last  # no newline after it
        try:
            raw = chunk.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield Line(number, None, "", f"line is not valid UTF-8 ({exc.reason}); skipped")
            continue
        try:
            record = json.loads(raw)
        except ValueError as exc:
            message = (
                "truncated last line (no newline, incomplete JSON); ignored"
                if torn
                else f"line is not valid JSON ({exc}); skipped"
            )
            yield Line(number, None, raw, message)
            continue
        if not isinstance(record, dict):
            yield Line(number, None, raw, "line is not a JSON object; skipped")
            continue
        yield Line(number, record, raw)


def readable_lines(path: Path, empty: str) -> tuple[list[Line], list[Problem]]:
    """The parsed object lines of a transcript, and a problem for every other line.

    ``empty`` is the problem reported when the file holds no line at all (nothing readable
    and nothing unreadable).
    """
    problems: list[Problem] = []
    lines: list[Line] = []
    for line in read_lines(path):
        if line.record is None:
            problems.append(Problem(str(path), line.number, line.error or "unreadable line"))
        else:
            lines.append(line)
    if not lines and not problems:
        problems.append(Problem(str(path), None, empty))
    return lines, problems


def file_revision(stat: os.stat_result) -> str:
    """The revision token of a file: changes whenever its bytes (or identity) change."""
    return f"{stat.st_dev}:{stat.st_ino}:{stat.st_size}:{stat.st_mtime_ns}"


# --------------------------------------------------------------------------- log building


@dataclass(slots=True)
class LogBuilder:
    """Builds one session's event log in order, keeping turn/step structure and the surface.

    Turns opened *implicitly* (formats without explicit turn events) are closed by the next
    user prompt, and at the end of the file when no tool call is left without a result; a
    turn left open makes the query service's crash-tail repair mark its pending calls.
    """

    file: str
    events: list[SessionEvent] = field(default_factory=list[SessionEvent])
    last_time: int = 0
    current: list[int] = field(default_factory=list[int])
    turn: int = -1
    turn_open: bool = False
    turn_explicit: bool = False
    step: int = -1
    step_open: bool = False
    step_has_results: bool = False
    call_seqs: dict[str, int] = field(default_factory=dict[str, int])
    pending_calls: set[str] = field(default_factory=set[str])

    # -- primitives

    def time_of(self, value: int | None) -> int:
        """``value`` if known, else the last known time (times never go missing)."""
        if value is not None:
            self.last_time = value
        return self.last_time

    def emit(
        self,
        kind: str,
        data: dict[str, Any],
        line: int | list[int],
        time: int | None = None,
        *,
        surface: bool = False,
        replace_surface: bool = False,
        sources: tuple[int, ...] | None = None,
        ignorable: bool = False,
    ) -> int:
        """Append one event; ``data`` gets the origin pointer. Returns its seq."""
        seq = len(self.events)
        lines = line if isinstance(line, list) else [line]
        origin: dict[str, Any] = {"file": self.file, "line": lines[0]}
        if len(lines) > 1:
            origin["lines"] = lines
        payload = {**data, ORIGIN_KEY: origin}
        op: Any = None
        if surface or replace_surface:
            op = "append"
            if replace_surface and self.current:
                op = Replace(self.current[0], self.current[-1])
                sources = tuple(self.current)
                self.current = []
            self.current.append(seq)
        event = SessionEvent(
            kind,
            seq,
            self.time_of(time),
            payload,
            surface_op=op,
            source_event_seqs=sources,
            ignorable=ignorable,
        )
        self.events.append(event)
        return seq

    def log_only(self, kind: str, raw: str, line: int, time: int | None) -> None:
        """An ignorable, log-only event that keeps the raw line."""
        self.emit(kind, {"raw": raw}, line, time, ignorable=True)

    # -- turn and step structure

    def open_turn(self, line: int, time: int | None, *, explicit: bool) -> None:
        """Close any open turn and start a new one."""
        if self.turn_open:
            self.close_turn(self.default_close_reason(), line, time)
        self.turn += 1
        self.step = -1
        self.turn_open, self.turn_explicit = True, explicit
        self.pending_calls.clear()
        self.emit("turn/start", {"turn": self.turn}, line, time)

    def default_close_reason(self) -> dict[str, Any]:
        """``completed``, or ``aborted`` by the user when calls are still without results."""
        if self.pending_calls:
            return {"kind": "aborted", "reason": {"kind": "user"}}
        return {"kind": "completed"}

    def close_turn(self, reason: dict[str, Any], line: int, time: int | None) -> None:
        """End the open step and turn (no-op when no turn is open)."""
        if not self.turn_open:
            return
        self.close_step(line, time)
        self.emit("turn/end", {"turn": self.turn, "reason": reason}, line, time)
        self.turn_open = False
        self.pending_calls.clear()

    def close_step(self, line: int, time: int | None) -> None:
        """End the open step, if any."""
        if self.step_open:
            self.emit("step/end", {"turn": self.turn, "step": self.step}, line, time)
            self.step_open = False

    def ensure_turn(self, line: int, time: int | None) -> None:
        """Open an implicit turn when output arrives outside any turn."""
        if not self.turn_open:
            self.open_turn(line, time, explicit=False)

    def begin_output(self, line: int, time: int | None) -> None:
        """Prepare for model output: a new step after tool results, or the first step."""
        self.ensure_turn(line, time)
        if self.step_open and self.step_has_results:
            self.close_step(line, time)
        if not self.step_open:
            self.step += 1
            self.step_open, self.step_has_results = True, False
            self.pending_calls.clear()
            self.emit("step/start", {"turn": self.turn, "step": self.step}, line, time)

    def begin_result(self, line: int, time: int | None) -> None:
        """Prepare for a tool result (opening a turn/step if the log lacks one)."""
        if not self.turn_open or not self.step_open:
            self.begin_output(line, time)
        self.step_has_results = True

    # -- message helpers

    def user_message(
        self,
        message_id: str,
        content: list[Any],
        kind: str,
        line: int,
        time: int | None,
        *,
        replace_surface: bool = False,
        extra: dict[str, Any] | None = None,
    ) -> int:
        """A ``user/message`` on the surface (appended, or replacing the whole surface)."""
        data: dict[str, Any] = {
            "id": message_id,
            "role": "user",
            "content": content,
            "source": {"kind": kind, **(extra or {})},
        }
        return self.emit(
            "user/message", data, line, time, surface=True, replace_surface=replace_surface
        )

    def assistant_message(
        self,
        content: list[Any],
        line: int | list[int],
        time: int | None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """An ``assistant/message`` plus one ``tool/call`` per ``tool-call`` block."""
        first = line[0] if isinstance(line, list) else line
        self.begin_output(first, time)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        data: dict[str, Any] = {"turn": self.turn, "step": self.step, "message": message}
        if extra:
            data.update(extra)
        self.emit("assistant/message", data, line, time, surface=True)
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool-call":
                call_id = block["id"]
                call = {
                    "turn": self.turn,
                    "step": self.step,
                    "callId": call_id,
                    "name": block["name"],
                    "arguments": block["arguments"],
                }
                self.call_seqs[call_id] = self.emit("tool/call", call, first, time)
                self.pending_calls.add(call_id)

    def tool_result(
        self, call_id: str, is_error: bool, content: list[Any], line: int, time: int | None
    ) -> None:
        """A ``tool/result`` citing its ``tool/call`` when that call is in this log."""
        self.begin_result(line, time)
        message = {
            "role": "user",
            "source": {"kind": "tool", "callId": call_id},
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": call_id,
                    "isError": is_error,
                    "content": content,
                }
            ],
        }
        call_seq = self.call_seqs.get(call_id)
        self.pending_calls.discard(call_id)
        self.emit(
            "tool/result",
            {"turn": self.turn, "step": self.step, "message": message},
            line,
            time,
            surface=True,
            sources=(call_seq,) if call_seq is not None else None,
        )

    def finish(self, line: int) -> None:
        """Close an implicit last turn that has no call left without a result."""
        if self.turn_open and not self.turn_explicit and not self.pending_calls:
            self.close_turn({"kind": "completed"}, line, None)


# --------------------------------------------------------------------------- file catalog


@dataclass(frozen=True, slots=True)
class ParsedSession:
    """One imported session: header and complete event log."""

    header: SessionHeader
    events: tuple[SessionEvent, ...]
    preferred: bool = False  # keeps its id when another file claims the same one


@dataclass(frozen=True, slots=True)
class ParsedFile:
    """Everything one transcript file yields."""

    sessions: tuple[ParsedSession, ...]
    problems: tuple[Problem, ...]


@dataclass(frozen=True, slots=True)
class _FileEntry:
    revision: str
    size: int
    summaries: tuple[tuple[SessionHeader, int, bool], ...]  # header, event count, preferred
    problems: tuple[Problem, ...]


Parser = Callable[[Path, str], ParsedFile]


class ReadHandleImpl:
    """A :class:`~sessionquery.persistence.base.ReadHandle` over an already parsed log."""

    def __init__(self, header: SessionHeader, events: tuple[SessionEvent, ...]) -> None:
        self._header = header
        self._events = events
        self._closed = False

    @property
    def header(self) -> SessionHeader:
        """The session header."""
        return self._header

    @property
    def inherited_event_count(self) -> int:
        """Always 0: imported sessions are never seeded."""
        return 0

    def read(self, offset: int = 0, length: int | None = None) -> list[SessionEvent]:
        """Events ``offset .. offset+length`` of the imported log.

        Raises:
            PersistenceClosed: after :meth:`close`.
        """
        if self._closed:
            raise PersistenceClosed(f"read handle of {self._header.id!r} is closed")
        end = None if length is None else offset + length
        return list(self._events[offset:end])

    def close(self) -> None:
        """Release the handle; idempotent."""
        self._closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class FileCatalog:
    """The common body of the importers: scanning, id resolution, caching, reading.

    ``list()`` stats every candidate file and parses only files whose revision changed since
    the last scan (keeping just headers and counts); ``open_read`` re-parses the one file it
    needs (a small LRU keeps the last few parsed files for parent/child reads).
    """

    _PARSED_CACHE = 4

    def __init__(self, root: str | os.PathLike[str], parser: Parser) -> None:
        self._root = Path(root).absolute()
        self._parser = parser
        self._lock = threading.RLock()
        self._entries: dict[str, _FileEntry] = {}
        self._parsed: OrderedDict[tuple[str, str], ParsedFile] = OrderedDict()
        self._ids: dict[str, tuple[str, str]] = {}  # public id -> (file, own id)
        self._root_problems: tuple[Problem, ...] = ()

    @property
    def root(self) -> Path:
        """The directory this source reads."""
        return self._root

    def candidates(self) -> list[Path]:
        """The transcript files under the root (overridden per format)."""
        raise NotImplementedError

    # -- scanning

    def _scan(self) -> None:
        root = self._root
        if not root.is_dir():
            self._root_problems = (
                Problem(str(root), None, "not a directory; no sessions imported"),
            )
            self._entries, self._ids = {}, {}
            return
        files = self.candidates()
        self._root_problems = (
            ()
            if files
            else (Problem(str(root), None, "no transcript files found under this directory"),)
        )
        seen: dict[str, _FileEntry] = {}
        for path in files:
            rel = path.relative_to(root).as_posix()
            entry = self._entry(path, rel)
            if entry is not None:
                seen[rel] = entry
        self._entries = seen
        self._ids = self._resolve_ids(seen)

    def _entry(self, path: Path, rel: str) -> _FileEntry | None:
        try:
            stat = path.stat()
        except OSError:
            return None
        revision = file_revision(stat)
        old = self._entries.get(rel)
        if old is not None and old.revision == revision:
            return old
        parsed = self._parse(path, rel, revision)
        summaries = tuple((s.header, len(s.events), s.preferred) for s in parsed.sessions)
        return _FileEntry(revision, stat.st_size, summaries, parsed.problems)

    def _parse(self, path: Path, rel: str, revision: str) -> ParsedFile:
        key = (rel, revision)
        cached = self._parsed.get(key)
        if cached is not None:
            self._parsed.move_to_end(key)
            return cached
        try:
            parsed = self._parser(path, rel)
        except OSError as exc:
            parsed = ParsedFile((), (Problem(str(path), None, f"cannot read file: {exc}"),))
        self._parsed[key] = parsed
        while len(self._parsed) > self._PARSED_CACHE:
            self._parsed.popitem(last=False)
        return parsed

    @staticmethod
    def _resolve_ids(entries: dict[str, _FileEntry]) -> dict[str, tuple[str, str]]:
        # Two files claiming one id: the preferred one (file named after the id), else the
        # first by path, keeps it; the others become "<id>@<relative path>" (stable per file).
        claims: dict[str, list[tuple[bool, str]]] = {}
        for rel, entry in entries.items():
            for header, _count, preferred in entry.summaries:
                claims.setdefault(header.id, []).append((not preferred, rel))
        ids: dict[str, tuple[str, str]] = {}
        for own_id, files in claims.items():
            files.sort()
            for index, (_, rel) in enumerate(files):
                public = own_id if index == 0 else f"{own_id}@{rel}"
                ids[public] = (rel, own_id)
        return ids

    @staticmethod
    def _public_header(header: SessionHeader, public_id: str) -> SessionHeader:
        return header if public_id == header.id else replace(header, id=public_id)

    # -- the persistence protocol

    def list(self) -> list[PersistedSession]:
        """Every imported session (parsing only files that changed since the last call)."""
        with self._lock:
            self._scan()
            return [self._listing(public) for public in self._ids]

    def _listing(self, public: str) -> PersistedSession:
        rel, own_id = self._ids[public]
        entry = self._entries[rel]
        for header, count, _ in entry.summaries:
            if header.id == own_id:
                return PersistedSession(
                    header=self._public_header(header, public),
                    revision=entry.revision,
                    event_count=count,
                    size_bytes=entry.size,
                )
        raise PersistenceNotFound(public)  # pragma: no cover - ids come from summaries

    def stat(self, session_id: str) -> PersistedSession | None:
        """One session's listing entry, or ``None``."""
        with self._lock:
            self._scan()
            if session_id not in self._ids:
                return None
            return self._listing(session_id)

    def open_read(self, session_id: str) -> ReadHandleImpl:
        """Open an imported session for reading.

        Raises:
            PersistenceNotFound: no session of that id.
            PersistenceCorrupt: the file became unreadable.
        """
        with self._lock:
            self._scan()
            target = self._ids.get(session_id)
            if target is None:
                raise PersistenceNotFound(f"session {session_id!r} is not in {self._root}")
            rel, own_id = target
            path = self._root / rel
            try:
                revision = file_revision(path.stat())
            except OSError as exc:
                raise PersistenceCorrupt(f"{path}: cannot read transcript: {exc}") from exc
            parsed = self._parse(path, rel, revision)
        for session in parsed.sessions:
            if session.header.id == own_id:
                header = self._public_header(session.header, session_id)
                return ReadHandleImpl(header, session.events)
        raise PersistenceNotFound(f"session {session_id!r} is no longer in {path}")

    def problems(self) -> builtins.list[Problem]:
        """Problems found in the current revision of every file, in path then line order."""
        with self._lock:
            self._scan()
            out = list(self._root_problems)
            for rel in sorted(self._entries):
                out.extend(self._entries[rel].problems)
            return out


def checked_id(value: object) -> str | None:
    """``value`` if it is a usable session id, else ``None``."""
    try:
        return validate_session_id(value)
    except ValueError:
        return None


def jsonl_files(root: Path, accept: Callable[[Path], bool]) -> list[Path]:
    """Regular ``*.jsonl`` files under ``root`` (recursively) accepted by ``accept``, sorted."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if name.endswith(".jsonl") and accept(path) and path.is_file():
                out.append(path)
    return out


def dumps(value: object) -> str:
    """Compact JSON text for tool arguments (non-ASCII kept readable)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
