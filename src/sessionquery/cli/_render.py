"""Rendering for the command-line tool: stable JSON shapes and pleasant terminal text.

Two renderings of every read result:

* **JSON** (``--json``): one document per command. Shapes mirror the Python result types with
  the same snake_case field names; a session record is flattened (header fields plus ``live``
  and ``persisted``); events use their JSONL wire form (``SessionEvent.to_json``); times are
  epoch milliseconds. These shapes are documented in ``docs/cli.md`` and only ever grow.
* **Text**: aligned columns, UTC times, and (on a colour terminal) bold ids and highlighted
  query matches in snippets. :class:`Style` with ``enabled=False`` yields plain text.

Nothing here does I/O except writing the strings the caller hands to a stream.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sessionquery.cli import _terminal as term
from sessionquery.model import SessionEvent, SessionHeader, TitleSnapshot, extract_event_text, thaw
from sessionquery.query.types import (
    EventRecord,
    EventSearchHit,
    EventTrace,
    EventWindow,
    LineageNode,
    LineageTrace,
    SessionRecord,
)

__all__ = [
    "ShowDetails",
    "SourceView",
    "Style",
    "dumps",
    "event_trace_json",
    "event_trace_text",
    "event_window_json",
    "event_window_text",
    "events_json",
    "events_text",
    "header_json",
    "lineage_json",
    "lineage_text",
    "record_json",
    "records_json",
    "records_text",
    "show_json",
    "show_text",
    "table",
    "time_text",
]

_WORD = re.compile(r"\w+", re.UNICODE)

WIDTH = 100
"""The widest line ``list`` and search results print (columns)."""


class Style:
    """Terminal styling that is a no-op when disabled (not a TTY, or ``NO_COLOR``).

    Styled text carries marker characters that only :func:`terminal_line` turns into ANSI
    sequences, after escaping everything that came from session data.

    Attributes:
        enabled: whether emphasis and colour are shown.
        width: the widest line list and search output may print.
    """

    def __init__(self, enabled: bool, width: int = WIDTH) -> None:
        self.enabled = enabled
        self.width = max(40, width)

    def _wrap(self, code: str, text: str) -> str:
        return f"{code}{text}{term.RESET}" if self.enabled and text else text

    def bold(self, text: str) -> str:
        """Emphasised text (ids, headings)."""
        return self._wrap(term.BOLD, text)

    def dim(self, text: str) -> str:
        """De-emphasised text (metadata)."""
        return self._wrap(term.DIM, text)

    def highlight(self, text: str, query: str) -> str:
        """``text`` with the words of ``query`` marked (the whole phrase when it appears)."""
        if not self.enabled:
            return text
        words = _WORD.findall(query)
        if not words:
            return text
        phrase = re.compile(r"\W+".join(re.escape(word) for word in words), re.IGNORECASE)
        pattern = phrase if phrase.search(text) else _any_word(words)
        return pattern.sub(lambda match: self._wrap(term.MATCH, match.group(0)), text)


def terminal_line(line: str, style: Style) -> str:
    """One rendered line as written to the terminal: data escaped, styling applied."""
    return term.terminal_line(line, style.enabled)


def _any_word(words: Sequence[str]) -> re.Pattern[str]:
    ordered = sorted({word.lower() for word in words}, key=len, reverse=True)
    return re.compile("|".join(rf"\b{re.escape(word)}\b" for word in ordered), re.IGNORECASE)


# -- shared helpers ------------------------------------------------------------------------


_C1 = re.compile("[\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def dumps(document: object) -> str:
    """The one JSON document a ``--json`` command prints (indented, UTF-8, stable order).

    Characters a terminal may act on (C1 controls, bidirectional overrides) are written as
    ``\\uNNNN`` escapes; ``json`` already escapes the C0 controls.
    """
    text = json.dumps(document, indent=2, ensure_ascii=False)
    return _C1.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def time_text(ms: int) -> str:
    """Epoch milliseconds as ``YYYY-MM-DD HH:MM:SS`` in UTC (the raw number past year 9999)."""
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, ValueError, OSError):
        return f"epoch-ms {ms}"


def table(rows: Sequence[Sequence[str]], header: Sequence[str], style: Style) -> list[str]:
    """Rows as left-aligned columns under a dimmed header; the last column is not padded."""
    widths = [term.display_width(title) for title in header]
    for row in rows:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], term.display_width(cell))

    def pad(cell: str, width: int) -> str:
        return cell + " " * (width - term.display_width(cell))

    def line(cells: Sequence[str]) -> str:
        padded = [pad(cell, widths[i]) for i, cell in enumerate(cells[:-1])]
        return "  ".join([*padded, cells[-1]]).rstrip()

    return [style.dim(line(header)), *(line(row) for row in rows)]


def _availability(record: SessionRecord) -> str:
    pairs = (("live", record.live), ("persisted", record.persisted), ("archived", record.archived))
    flags = [name for name, on in pairs if on]
    return ", ".join(flags) or "unavailable"


def _or_dash(value: object) -> str:
    return "-" if value is None else str(value)


# -- sessions --------------------------------------------------------------------------------


def header_json(header: SessionHeader) -> dict[str, Any]:
    """A session header as JSON (every field, ``null`` when absent)."""
    return {
        "id": header.id,
        "created_at": header.created_at,
        "cwd": header.cwd,
        "parent_session": header.parent_session,
        "is_seeded": header.is_seeded,
        "origin": header.origin,
        "delegation_depth": header.delegation_depth,
        "agent_preset": header.agent_preset,
        "version": header.version,
    }


def record_json(record: SessionRecord) -> dict[str, Any]:
    """A session record as JSON: the header fields plus ``live``, ``persisted`` and
    ``archived``."""
    return {
        **header_json(record.header),
        "live": record.live,
        "persisted": record.persisted,
        "archived": record.archived,
    }


def title_json(title: TitleSnapshot | None) -> dict[str, Any] | None:
    """A title snapshot as JSON, or ``None``."""
    if title is None:
        return None
    return {
        "title": title.title,
        "message_seqs": list(title.message_seqs),
        "source": thaw(title.source),
        "event_seq": title.event_seq,
        "updated_at": title.updated_at,
    }


def records_json(
    records: Sequence[SessionRecord],
    titles: dict[str, str | None] | None,
    short_ids: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``list --json``: ``{"sessions": [record + "short_id"? + "title"?]}``."""
    items = []
    for record in records:
        item = record_json(record)
        if short_ids is not None:
            item["short_id"] = short_ids.get(record.id, record.id)
        if titles is not None:
            item["title"] = titles.get(record.id)
        items.append(item)
    return {"sessions": items}


def records_text(
    records: Sequence[SessionRecord],
    titles: dict[str, str | None] | None,
    style: Style,
    *,
    short_ids: Mapping[str, str] | None = None,
    total: int | None = None,
) -> list[str]:
    """``list`` as an aligned table, newest first, no wider than ``style.width``.

    Args:
        records: the sessions to show.
        titles: each session's title (``None``: no title column).
        style: output styling and width.
        short_ids: the short id of each session (shown, never cut, instead of the full id).
        total: how many sessions exist (a footer says when only some are shown).
    """
    if not records:
        return ["No sessions."]
    short_ids = short_ids or {}
    safe_rows = []
    for record in records:
        h = record.header
        shown_id = term.safe(short_ids.get(h.id, h.id))
        kind = ("[archived] " if record.archived else "") + (f"[{h.origin}] " if h.origin else "")
        title = (titles or {}).get(h.id) or "untitled"
        safe_rows.append(
            (shown_id, time_text(h.created_at)[:16], term.safe(_or_dash(h.cwd)), kind + title)
        )
    id_width = max(2, *(term.display_width(row[0]) for row in safe_rows))
    ws_cap = 28 if titles is not None else style.width - id_width - 20
    ws_width = min(ws_cap, max(9, *(term.display_width(row[2]) for row in safe_rows)))
    title_width = max(12, style.width - id_width - 16 - ws_width - 6)
    rows = []
    for shown_id, created, cwd, title in safe_rows:
        row = [shown_id, created, term.cut_left(cwd, ws_width)]
        if titles is not None:
            row.append(term.cut(term.safe(title), title_width))
        rows.append(row)
    header = ["ID", "CREATED (UTC)", "WORKSPACE"]
    if titles is not None:
        header.append("TITLE")
    lines = table(rows, header, style)
    count = f"{len(records)} session(s)"
    if total is not None and total > len(records):
        count = f"{len(records)} of {total} sessions shown (newest first); --limit N or --all"
    return [*lines, "", style.dim(count)]


@dataclass(frozen=True, slots=True)
class SourceView:
    """Where a shown session is stored.

    Attributes:
        kind: the source kind (``root``, ``claude``, ``codex``).
        label: its label among the sources.
        name: how a person calls it (``sample``, ``Claude Code``...).
        path: the source's directory.
        file: the transcript file the session was read from, when known.
    """

    kind: str
    label: str
    name: str
    path: str
    file: str | None = None


@dataclass(frozen=True, slots=True)
class ShowDetails:
    """Everything ``show`` prints about one session."""

    header: SessionHeader
    title: TitleSnapshot | None
    short_id: str
    events: Sequence[SessionEvent]
    source: SourceView | None
    resume: str | None
    archived: bool = False

    @property
    def model(self) -> str | None:
        """The model of the latest assistant message that records one."""
        return _last_data_text(self.events, "model", "assistant/message")

    @property
    def branch(self) -> str | None:
        """The latest git branch an event records (``gitBranch``)."""
        return _last_data_text(self.events, "gitBranch")


def _last_data_text(
    events: Sequence[SessionEvent], key: str, kind: str | None = None
) -> str | None:
    for event in reversed(events):
        if kind is not None and event.type != kind:
            continue
        value = event.data.get(key) if isinstance(event.data, Mapping) else None
        if isinstance(value, str) and value:
            return value
    return None


def show_json(details: ShowDetails) -> dict[str, Any]:
    """``show --json``: the header, the title and what the text view adds (short id, event
    count, source, model, branch, the resume command)."""
    source = details.source
    return {
        "session": header_json(details.header),
        "title": title_json(details.title),
        "short_id": details.short_id,
        "event_count": len(details.events),
        "last_event_at": details.events[-1].time if details.events else None,
        "source": None
        if source is None
        else {"kind": source.kind, "label": source.label, "path": source.path, "file": source.file},
        "model": details.model,
        "branch": details.branch,
        "resume": details.resume,
        "archived": details.archived,
    }


def show_text(details: ShowDetails, style: Style) -> list[str]:
    """``show``: one labelled line per fact a person looks for, title first; lines for facts
    the session does not record are left out."""
    header, title = details.header, details.title
    title_line = "untitled"
    if title is not None:
        title_line = f"{title.title}  {style.dim(f'(seq {title.event_seq})')}"
    events = details.events
    count = (
        f"{len(events)}"
        if not events
        else f"{len(events)}, the last at {time_text(events[-1].time)} UTC"
    )
    source = details.source
    fields: list[tuple[str, str | None]] = [
        ("Session", style.bold(header.id)),
        ("Short id", details.short_id if details.short_id != header.id else None),
        ("Title", title_line),
        ("Created", f"{time_text(header.created_at)} UTC"),
        ("Workspace", _or_dash(header.cwd)),
        ("Parent", header.parent_session),
        ("Origin", header.origin),
        ("Events", count),
        ("Source", None if source is None else f"{source.file or source.path}  ({source.name})"),
        ("Model", details.model),
        ("Branch", details.branch),
        ("Resume", details.resume),
    ]
    if details.archived:
        fields.append(("Stored", "archived (its source file is gone; read from the archive)"))
    shown = [(label, value) for label, value in fields if value is not None]
    width = max(len(label) for label, _ in shown)
    return [f"{style.dim(label.ljust(width))}  {value}" for label, value in shown]


# -- events ----------------------------------------------------------------------------------


def event_record_json(event: EventRecord | EventSearchHit) -> dict[str, Any]:
    """One event's metadata as JSON (of a listed event, or of a search hit)."""
    return {"seq": event.seq, "type": event.type, "time": event.time, "surface": event.surface}


PREVIEW_CHARS = 200
"""Characters of an event's text ``events --json`` carries as its preview."""


def preview(event: SessionEvent) -> str:
    """The start of an event's searchable text on one line (empty when it has none)."""
    text = " ".join(extract_event_text(event)[: PREVIEW_CHARS * 4].split())
    return text[:PREVIEW_CHARS]


def events_json(
    session_id: str, events: Sequence[EventRecord], previews: Mapping[int, str] | None = None
) -> dict[str, Any]:
    """``events --json``: ``{"session_id", "events": [{seq, type, time, surface, preview}]}``."""
    items = []
    for event in events:
        item = event_record_json(event)
        if previews is not None:
            item["preview"] = previews.get(event.seq, "")
        items.append(item)
    return {"session_id": session_id, "events": items}


def events_text(
    events: Sequence[EventRecord], style: Style, previews: Mapping[int, str] | None = None
) -> list[str]:
    """``events``: one row per raw event, with the start of its text, no wider than
    ``style.width``."""
    previews = previews or {}
    rows = [[str(e.seq), time_text(e.time), e.surface, e.type] for e in events]
    widths = [
        max([len(header), *(len(row[i]) for row in rows)])
        for i, header in enumerate(["SEQ", "TIME (UTC)", "SURFACE", "TYPE"])
    ]
    room = style.width - sum(widths) - 2 * len(widths)
    if room >= 12:
        for row, event in zip(rows, events, strict=True):
            row.append(term.cut(term.safe(previews.get(event.seq, "")), room))
        return table(rows, ["SEQ", "TIME (UTC)", "SURFACE", "TYPE", "TEXT"], style)
    return table(rows, ["SEQ", "TIME (UTC)", "SURFACE", "TYPE"], style)


def event_window_json(window: EventWindow) -> dict[str, Any]:
    """``read --json``: the target and its neighbours in wire form."""
    return {
        "session": header_json(window.session),
        "inherited_event_count": window.inherited_event_count,
        "target": window.target.to_json(),
        "start_seq": window.start_seq,
        "end_seq": window.end_seq,
        "events": [event.to_json() for event in window.events],
    }


def _event_line(event: SessionEvent, style: Style) -> str:
    return f"{style.bold(f'seq {event.seq}')}  {event.type}  {style.dim(time_text(event.time))}"


NEIGHBOUR_LINES = 3
"""Lines of a neighbour's text ``read`` shows (the target is always shown in full)."""

NEIGHBOUR_CHARS = 300
"""Characters of a neighbour's text ``read`` shows."""


def _neighbour(session_id: str, event: SessionEvent, style: Style) -> list[str]:
    text = extract_event_text(event)
    if not text:
        return [f"  {_event_line(event, style)}  {style.dim('(no text)')}"]
    lines = text.splitlines()[:NEIGHBOUR_LINES]
    shown = "\n".join(lines)
    if len(shown) > NEIGHBOUR_CHARS:
        shown = shown[:NEIGHBOUR_CHARS]
        lines = shown.splitlines()
    body = [f"      {line}" for line in lines]
    left = len(text) - len(shown)
    if left > 0:
        more = f"[… {left:,} more characters; sessionquery read {session_id} {event.seq}]"
        body.append(f"      {style.dim(more)}")
    return [f"  {_event_line(event, style)}", *body]


def event_window_text(window: EventWindow, style: Style) -> list[str]:
    """``read``: the full target event as indented JSON between its neighbours' summaries."""
    target = window.target
    before = [e for e in window.events if e.seq < target.seq]
    after = [e for e in window.events if e.seq > target.seq]
    lines = [f"Session {style.bold(window.session.id)}  {_event_line(target, style)}", ""]
    if before:
        lines += ["Before:"]
        for event in before:
            lines += _neighbour(window.session.id, event, style)
        lines.append("")
    lines += json.dumps(thaw(target.to_json()), indent=2, ensure_ascii=False).splitlines()
    if after:
        lines += ["", "After:"]
        for event in after:
            lines += _neighbour(window.session.id, event, style)
    return lines


def event_trace_json(trace: EventTrace) -> dict[str, Any]:
    """``trace-event --json``: every direct relationship of one event."""
    return {
        "session": header_json(trace.session),
        "target": event_record_json(trace.target),
        "replaced_by": trace.replaced_by,
        "replacement_chain": list(trace.replacement_chain),
        "replaced_event_seqs": list(trace.replaced_event_seqs),
        "source_event_seqs": list(trace.source_event_seqs),
        "derived_event_seqs": list(trace.derived_event_seqs),
    }


def _seqs(values: Iterable[int]) -> str:
    listed = ", ".join(str(value) for value in values)
    return listed or "none"


def event_trace_text(trace: EventTrace, style: Style) -> list[str]:
    """``trace-event``: seven labelled lines."""
    t = trace.target
    fields = [
        ("Session", style.bold(trace.session.id)),
        ("Target", f"seq {t.seq} | {t.type} | {t.surface} | {time_text(t.time)} UTC"),
        ("Replaced by", "none" if trace.replaced_by is None else f"seq {trace.replaced_by}"),
        ("Replacement chain", _seqs(trace.replacement_chain)),
        ("Replaces", _seqs(trace.replaced_event_seqs)),
        ("Cites (sources)", _seqs(trace.source_event_seqs)),
        ("Cited by (derived)", _seqs(trace.derived_event_seqs)),
    ]
    width = max(len(label) for label, _ in fields)
    return [f"{style.dim(label.ljust(width))}  {value}" for label, value in fields]


# -- lineage ---------------------------------------------------------------------------------


def _node_json(node: LineageNode) -> dict[str, Any]:
    return {
        "session": record_json(node.record),
        "descendants": [_node_json(child) for child in node.descendants],
    }


def lineage_json(trace: LineageTrace) -> dict[str, Any]:
    """``trace --json``: target, ancestors (nearest first) and the descendant tree."""
    return {
        "target": record_json(trace.target),
        "ancestors": [record_json(record) for record in trace.ancestors],
        "descendants": [_node_json(node) for node in trace.descendants],
        "complete": trace.complete,
        "root": None if trace.root is None else trace.root.id,
        "unresolved_parent_id": trace.unresolved_parent_id,
    }


def _lineage_label(record: SessionRecord, style: Style, *, target: bool = False) -> str:
    h = record.header
    parts = [style.bold(h.id) if target else h.id]
    if h.origin:
        parts.append(f"[{h.origin}]")
    parts.append(style.dim(f"{time_text(h.created_at)}  {_or_dash(h.cwd)}"))
    if target:
        parts.append("<- target")
    return "  ".join(parts)


def _tree(nodes: Sequence[LineageNode], prefix: str, style: Style) -> list[str]:
    lines: list[str] = []
    for index, node in enumerate(nodes):
        last = index == len(nodes) - 1
        lines.append(f"{prefix}{'└─ ' if last else '├─ '}{_lineage_label(node.record, style)}")
        lines += _tree(node.descendants, prefix + ("   " if last else "│  "), style)
    return lines


def lineage_text(trace: LineageTrace, style: Style) -> list[str]:
    """``trace``: a tree from the oldest known ancestor down through the target's subtree."""
    lines: list[str] = []
    if not trace.complete:
        missing = _or_dash(trace.unresolved_parent_id)
        lines.append(style.dim(f"(lineage incomplete: parent {missing} is not in the sources)"))
    chain = [*reversed(trace.ancestors), trace.target]
    prefix = ""
    for depth, record in enumerate(chain):
        connector = "" if depth == 0 else "└─ "
        is_target = record is trace.target
        lines.append(f"{prefix}{connector}{_lineage_label(record, style, target=is_target)}")
        if depth > 0:
            prefix += "   "
    lines += _tree(trace.descendants, prefix, style)
    return lines
