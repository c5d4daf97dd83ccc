"""Searchable documents straight from parsed JSON records, without frozen events.

Search indexing needs, per event, only its type, time, searchable text and surface class.
Building a validated, deep-frozen :class:`~sessionquery.model.SessionEvent` for every line
costs several times more than parsing the JSON, so a :class:`DocumentBuilder` works on the
plain dicts ``json.loads`` returns:

* text comes from :func:`~sessionquery.model.extract_text` (the one definition of semantic
  text, SPEC §3.7);
* the surface class comes from a light fold that follows the surface operations
  (``append`` and ``replace`` runs) and checks only the structure it relies on (seqs in order,
  replace endpoints on the current surface, start before end); the exact reads keep the full
  validation of :class:`~sessionquery.model.SurfaceFolder`;
* when the log ends inside a turn, the crash-tail closers are computed by
  :func:`~sessionquery.model.interrupted_turn_closers` over real events built from only that
  open turn's records, so their text is always exactly what a cold read appends.

For a valid log the result equals ``open_read`` + closers + ``fold_surface`` +
``extract_event_text`` (SPEC §3.6, §3.7): the index built either way holds identical rows.
Damage the builder notices raises :class:`~sessionquery.errors.PersistenceCorrupt` naming
the 1-based physical line (the header is line 1).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final

from sessionquery.errors import PersistenceCorrupt, PersistenceNotFound
from sessionquery.model import (
    SURFACE_ELIGIBLE_TYPES,
    Replace,
    SessionEvent,
    SessionHeader,
    SurfaceClass,
    SurfaceFolder,
    TitleSnapshot,
    extract_event_text,
    extract_text,
    fold_title,
    interrupted_turn_closers,
)
from sessionquery.model.surface import SurfaceError, surface_class_of
from sessionquery.model.title import TITLE_TYPE, title_text
from sessionquery.persistence.base import DocumentLog, SessionPersistence, TextDocument

_TEXT_TYPES = frozenset(
    {"user/message", "assistant/message", "tool/call", "tool/result", "todo/write", "turn/end"}
)
"""The only event types :func:`~sessionquery.model.extract_text` finds text in (SPEC §3.7);
records of other types skip the extraction call."""

__all__ = [
    "CHECK_EVERY_BYTES",
    "CHECK_EVERY_LINES",
    "DocumentBuilder",
    "SurfaceClasses",
    "checking",
    "event_documents",
    "jsonl_body_documents",
    "jsonl_documents",
    "read_check",
    "stored_documents",
    "title_documents",
]

CHECK_EVERY_LINES: Final = 2048
"""Lines decoded between two calls of the reader's check (a few milliseconds of work)..."""
CHECK_EVERY_BYTES: Final = 1 << 20
"""...or bytes of them, whichever comes first: one multi-megabyte line is work enough."""

_CHECK: ContextVar[Callable[[], None] | None] = ContextVar("sessionquery_read_check", default=None)


@contextmanager
def checking(check: Callable[[], None] | None) -> Iterator[None]:
    """Within the block, readers call ``check()`` every :data:`CHECK_EVERY_LINES` lines or
    :data:`CHECK_EVERY_BYTES` bytes they decode, so one very large log does not outlive a
    deadline: the caller's check raises (e.g. ``CancelToken.check``) and the read stops. The
    persistence protocol (``list()``, ``stat(id)``, ``read_documents(id)``...) has no room for
    a token; this carries it to the readers of this module and to the importers
    (:func:`read_check`)."""
    reset = _CHECK.set(check)
    try:
        yield
    finally:
        _CHECK.reset(reset)


def _ignore(size: int) -> None:
    del size


def read_check() -> Callable[[int], None]:
    """A counter for one read under :func:`checking`: call it once per line (or item) with its
    size in bytes (or characters); every :data:`CHECK_EVERY_LINES` calls or
    :data:`CHECK_EVERY_BYTES` bytes it calls the installed check, whose exception stops the
    read. Without an installed check it does nothing."""
    check = _CHECK.get()
    if check is None:
        return _ignore
    lines = 0
    size_since = 0

    def tick(size: int) -> None:
        nonlocal lines, size_since
        lines += 1
        size_since += size
        if lines >= CHECK_EVERY_LINES or size_since >= CHECK_EVERY_BYTES:
            lines = size_since = 0
            check()

    return tick


class SurfaceClasses:
    """A light surface fold: which seqs are current, shadowed or log-only.

    Only the structure is checked (what the classification relies on); a violation raises
    ``ValueError`` naming the seq.
    """

    __slots__ = ("_next", "_prev", "_removed", "_tail")

    def __init__(self) -> None:
        self._next: dict[int, int | None] = {}
        self._prev: dict[int, int | None] = {}
        self._removed: set[int] = set()
        self._tail: int | None = None

    def apply(self, seq: int, kind: str, op: object) -> None:
        """Fold event ``seq`` of type ``kind`` with surface operation ``op`` (wire or model form).

        Raises:
            ValueError: an eligible event without a valid operation, or a replace whose
                endpoints are not a run of the current surface.
        """
        if kind not in SURFACE_ELIGIBLE_TYPES:
            return
        if op == "append":
            self._link(seq, self._tail, None)
            return
        start, end = _replace_bounds(seq, op)
        removed = self._run(seq, start, end)
        before, after = self._prev[start], self._next[end]
        for node in removed:
            del self._next[node]
            del self._prev[node]
        self._removed.update(removed)
        self._link(seq, before, after)

    def _run(self, seq: int, start: int, end: int) -> list[int]:
        if start not in self._next or end not in self._next:
            raise ValueError(f"seq {seq}: replace endpoints must be on the current surface")
        removed: list[int] = []
        node: int | None = start
        while node is not None:
            removed.append(node)
            if node == end:
                return removed
            node = self._next[node]
        raise ValueError(f"seq {seq}: replace start {start} comes after end {end} on the surface")

    def _link(self, seq: int, before: int | None, after: int | None) -> None:
        self._prev[seq], self._next[seq] = before, after
        if before is not None:
            self._next[before] = seq
        if after is None:
            self._tail = seq
        else:
            self._prev[after] = seq

    def surface_class(self, seq: int) -> SurfaceClass:
        """The class of ``seq`` as of the events folded so far."""
        return surface_class_of(seq, self._next, self._removed)


def _replace_bounds(seq: int, op: object) -> tuple[int, int]:
    if isinstance(op, Replace):
        return op.start_seq, op.end_seq
    if isinstance(op, dict) and op.get("op") == "replace":
        start, end = op.get("startSeq"), op.get("endSeq")
        if type(start) is int and type(end) is int:
            return start, end
    raise ValueError(f"seq {seq}: a surface-eligible event needs a valid surface operation")


class DocumentBuilder:
    """Collects the documents of one log from its event records, in seq order.

    Args:
        header: the session header.
        revision: the revision the records were read at.
        path: the file named in error messages.
    """

    __slots__ = (
        "_docs",
        "_fold",
        "_header",
        "_open_turn",
        "_path",
        "_revision",
        "_seq",
        "_title_record",
        "_titles",
    )

    def __init__(self, header: SessionHeader, revision: str, path: str) -> None:
        self._header = header
        self._revision = revision
        self._path = path
        self._fold = SurfaceClasses()
        self._docs: list[tuple[int, str, int, str]] = []
        self._titles: list[TextDocument] = []
        self._open_turn: list[dict[str, Any]] | None = None
        self._title_record: dict[str, Any] | None = None
        self._seq = 0

    def _corrupt(self, message: str) -> PersistenceCorrupt:
        return PersistenceCorrupt(f"{self._path} line {self._seq + 2}: {message}")

    def add(self, record: object) -> None:
        """Add the next event record (a parsed JSON object).

        Raises:
            PersistenceCorrupt: the record is not an event, is out of order or breaks the fold.
        """
        if type(record) is not dict:
            raise self._corrupt("invalid event: not a JSON object")
        obj: dict[str, Any] = record
        seq, kind, time = obj.get("seq"), obj.get("type"), obj.get("time")
        if type(seq) is not int or seq != self._seq:
            raise self._corrupt(f"event has seq {seq!r}, expected {self._seq}")
        if type(kind) is not str or not kind or type(time) is not int or time < 0:
            raise self._corrupt("invalid event: type or time")
        if kind in SURFACE_ELIGIBLE_TYPES:
            try:
                self._fold.apply(seq, kind, obj.get("surfaceOp"))
            except ValueError as exc:
                raise self._corrupt(f"invalid surface: {exc}") from None
        if kind in _TEXT_TYPES:
            text = extract_text(kind, obj.get("data"))
            if text:
                self._docs.append((seq, kind, time, text))
        elif kind == TITLE_TYPE:
            title = title_text(kind, obj.get("data"))
            if title:
                self._titles.append(TextDocument(seq, kind, time, "log-only", title))
        if kind == "session/title" and _has_title(obj.get("data")):
            self._title_record = obj  # fold_title's rule: the last one with a string title
        if kind == "turn/start":
            self._open_turn = [obj]
        elif kind == "turn/end":
            self._open_turn = None
        elif self._open_turn is not None:
            self._open_turn.append(obj)
        self._seq += 1

    def _apply(self, seq: int, kind: str, time: int, op: object, data: object) -> None:
        try:
            self._fold.apply(seq, kind, op)
        except ValueError as exc:
            raise self._corrupt(f"invalid surface: {exc}") from None
        text = extract_text(kind, data)
        if text:
            self._docs.append((seq, kind, time, text))

    def finish(self) -> DocumentLog:
        """The documents, crash-tail closers included when the log ends inside a turn.

        Raises:
            PersistenceCorrupt: a record of the open turn is not a valid event.
        """
        count = self._seq
        if self._open_turn is not None:
            try:
                tail = [SessionEvent.from_json(obj) for obj in self._open_turn]
            except (ValueError, RecursionError) as exc:
                message = f"{self._path}: invalid event in the open turn: {exc}"
                raise PersistenceCorrupt(message) from None
            for event in interrupted_turn_closers(tail):
                self._seq = event.seq
                self._apply(event.seq, event.type, event.time, event.surface_op, event.data)
                count += 1
        fold = self._fold
        documents = [
            TextDocument(seq, kind, time, fold.surface_class(seq), text)
            for seq, kind, time, text in self._docs
        ]
        title, read = self._title()
        return DocumentLog(
            self._header,
            self._revision,
            count,
            documents,
            self._titles,
            title=title,
            title_read=read,
        )

    def _title(self) -> tuple[TitleSnapshot | None, bool]:
        """The log's title from its last ``session/title`` record (crash-tail closers never
        add one); unknown when that record is not a valid event."""
        if self._title_record is None:
            return None, True
        try:
            return fold_title([SessionEvent.from_json(self._title_record)]), True
        except (ValueError, RecursionError):
            return None, False


def _has_title(data: object) -> bool:
    return isinstance(data, dict) and isinstance(data.get("title"), str)


def jsonl_documents(
    header: SessionHeader, revision: str, lines: Iterable[bytes | str], path: str
) -> DocumentLog:
    """The documents of the complete event lines ``lines`` (header line excluded).

    Raises:
        PersistenceCorrupt: invalid UTF-8 or JSON, or a record the builder refuses.
    """
    builder = DocumentBuilder(header, revision, path)
    loads = json.loads
    check = _CHECK.get()
    size_since = 0
    for number, line in enumerate(lines, 2):
        if check is not None:  # inlined read_check(): this loop is the build's hot path
            size_since += len(line)
            if size_since >= CHECK_EVERY_BYTES or number % CHECK_EVERY_LINES == 0:
                size_since = 0
                check()
        try:
            record = loads(line)
        except UnicodeDecodeError:
            raise PersistenceCorrupt(f"{path} line {number}: invalid UTF-8") from None
        except (ValueError, RecursionError):
            raise PersistenceCorrupt(f"{path} line {number}: invalid JSON") from None
        builder.add(record)
    return builder.finish()


def jsonl_body_documents(
    header: SessionHeader, revision: str, body: bytes, path: str
) -> DocumentLog:
    """The documents of a JSONL body (the bytes after the header line); a torn final line
    (no newline) is ignored, as every read of the store ignores it.

    Raises:
        PersistenceCorrupt: as :func:`jsonl_documents`.
    """
    body = body[: body.rfind(b"\n") + 1]
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return jsonl_documents(header, revision, body.split(b"\n")[:-1], path)
    lines = text.split("\n")
    lines.pop()
    return jsonl_documents(header, revision, lines, path)


def event_documents(events: Sequence[SessionEvent]) -> list[TextDocument]:
    """The searchable documents of a whole log (its events with text, in seq order), each
    with its surface class from the log's fold; the caller's deadline (:func:`checking`) is
    checked as the texts are extracted.

    Raises:
        SurfaceError: the log does not fold.
    """
    folder = SurfaceFolder()
    for event in events:
        folder.apply(event)
    tick = read_check()
    documents: list[TextDocument] = []
    for event in events:
        text = extract_event_text(event)
        tick(len(text))
        if text:
            surface = folder.surface_class(event.seq)
            documents.append(TextDocument(event.seq, event.type, event.time, surface, text))
    return documents


def title_documents(events: Iterable[SessionEvent]) -> list[TextDocument]:
    """The title documents of a log: each ``session/title`` event with a non-blank title
    (:func:`~sessionquery.model.title.title_text`), in seq order (always ``log-only``)."""
    return [
        TextDocument(event.seq, event.type, event.time, "log-only", title)
        for event in events
        if event.type == TITLE_TYPE and (title := title_text(event.type, event.data))
    ]


def stored_documents(source: SessionPersistence, session_id: str) -> DocumentLog:
    """The documents of one stored log the slow, exact way: ``open_read``, the crash tail
    closed (:func:`~sessionquery.model.interrupted_turn_closers`), the fold, the texts. For
    stores without a faster :class:`~sessionquery.persistence.base.DocumentSource` path of
    their own (the importers' and the JSONL store's are tested to give the same documents).

    Raises:
        PersistenceNotFound: the id is not stored.
        PersistenceCorrupt: the log is damaged or does not fold.
    """
    entry = source.stat(session_id)
    if entry is None:
        raise PersistenceNotFound(f"session {session_id!r} is not stored")
    with source.open_read(session_id) as handle:
        header = handle.header
        events = handle.read()
    events = events + interrupted_turn_closers(events)
    try:
        documents = event_documents(events)
    except SurfaceError as exc:
        raise PersistenceCorrupt(f"session {session_id!r} does not fold: {exc}") from None
    return DocumentLog(
        header,
        entry.revision,
        len(events),
        documents,
        title_documents(events),
        title=fold_title(events),
        title_read=True,
    )
