"""A session read as a conversation: for the terminal, and exported as Markdown or JSON.

One pass (:func:`entries`) turns a session's event log into conversation entries (user and
assistant turns, tool calls and results, system messages, compactions, subagents); the
renderers differ only in form (the HTML export is the web viewer's renderer,
:mod:`sessionquery.web.export`). Invariants:

* the terminal view (:func:`conversation_text`) shows each tool call on one line and cuts
  long tool results with a visible marker saying how much was left out; every line passes
  through the terminal escaping of :mod:`sessionquery.cli._terminal` when printed;
* the exports are complete (nothing cut); Markdown code fences are longer than any backtick
  run inside them;
* reasoning is shown only in the exports, marked as such.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sessionquery.cli import _terminal as term
from sessionquery.cli._render import Style, header_json, time_text, title_json
from sessionquery.model import Replace, SessionEvent, SessionHeader, TitleSnapshot, thaw
from sessionquery.model.jsonvalue import as_dict, as_list
from sessionquery.query.types import SessionLog, SessionRecord
from sessionquery.web.conversation import block_text

__all__ = [
    "Entry",
    "conversation_text",
    "entries",
    "export_json",
    "export_markdown",
]

Kind = Literal[
    "user",
    "assistant",
    "reasoning",
    "system",
    "tool-call",
    "tool-result",
    "compaction",
    "subagent",
    "turn-end",
    "boundary",
]

RESULT_LINES = 6
"""Lines of a tool result the terminal view shows before cutting."""
RESULT_CHARS = 600
"""Characters of a tool result the terminal view shows before cutting."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One item of a conversation.

    Attributes:
        kind: what it is.
        seq: the event's seq (``None`` for a subagent, which is another session).
        time: epoch milliseconds.
        text: the readable text (tool results: their output; tool calls: the arguments).
        name: the tool name, or the subagent's session id.
        detail: a short note (``error`` for a failed tool result, the replaced range of a
            compaction, the subagent's title, a turn's end reason).
    """

    kind: Kind
    seq: int | None
    time: int
    text: str = ""
    name: str = ""
    detail: str = ""


def _arguments(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(thaw(value), ensure_ascii=False, sort_keys=True)


def _message_entries(event: SessionEvent, calls: set[str]) -> Iterator[Entry]:
    data = as_dict(event.data)
    if event.type == "user/message":
        text = block_text(data.get("content"))
        if text:
            yield Entry("user", event.seq, event.time, text)
        return
    message = as_dict(data.get("message"))
    content = message.get("content")
    if event.type == "system/message":
        if block_text(content):
            yield Entry("system", event.seq, event.time, block_text(content))
    elif event.type == "assistant/message":
        reasoning = block_text(content, "reasoning")
        if reasoning:
            yield Entry("reasoning", event.seq, event.time, reasoning)
        text = block_text(content)
        if text:
            yield Entry("assistant", event.seq, event.time, text)
        for block in map(as_dict, as_list(content)):
            if block.get("type") == "tool-call" and str(block.get("id")) not in calls:
                args = _arguments(block.get("arguments"))
                yield Entry("tool-call", event.seq, event.time, args, str(block.get("name")))
    elif event.type == "tool/result":
        failed = any(as_dict(b).get("isError") is True for b in as_list(content)) or bool(
            data.get("error")
        )
        yield Entry(
            "tool-result", event.seq, event.time, block_text(content), "", "error" if failed else ""
        )


def _event_entries(event: SessionEvent, calls: set[str]) -> Iterator[Entry]:
    op = event.surface_op
    if isinstance(op, Replace) and event.type != "tool/result":
        span = f"replaces seq {op.start_seq} to {op.end_seq}"
        text = block_text(as_dict(as_dict(event.data).get("message")).get("content")) or block_text(
            as_dict(event.data).get("content")
        )
        yield Entry("compaction", event.seq, event.time, text, "", span)
        return
    if event.type == "tool/call":
        data = as_dict(event.data)
        args = _arguments(data.get("arguments"))
        yield Entry("tool-call", event.seq, event.time, args, str(data.get("name")))
        return
    if event.type == "turn/end":
        reason = as_dict(as_dict(event.data).get("reason"))
        kind = reason.get("kind")
        if isinstance(kind, str) and kind not in ("stop", "end-turn", "completed", "tool-use"):
            message = as_dict(reason.get("error")).get("message")
            yield Entry("turn-end", event.seq, event.time, str(message or ""), "", kind)
        return
    yield from _message_entries(event, calls)
    if isinstance(op, Replace):
        yield Entry("compaction", event.seq, event.time, "", "", f"shortens seq {op.start_seq}")


def entries(
    log: SessionLog, children: Sequence[SessionRecord] = (), titles: dict[str, str] | None = None
) -> list[Entry]:
    """The conversation of ``log``, with its direct child sessions placed at their start time."""
    calls = {str(as_dict(e.data).get("callId")) for e in log.events if e.type == "tool/call"}
    out: list[Entry] = []
    pending = sorted(children, key=lambda r: (r.header.created_at, r.id))
    inherited = log.inherited_event_count
    parent = log.session.parent_session or "the parent session"
    for event in log.events:
        if inherited and event.seq == 0:
            note = f"inherited from {parent}: the first {inherited} events"
            out.append(Entry("boundary", None, event.time, "", "", note))
        if inherited and event.seq == inherited:
            out.append(Entry("boundary", None, event.time, "", "", "this session starts here"))
        while pending and pending[0].header.created_at <= event.time:
            out.append(_subagent(pending.pop(0), titles or {}))
        out.extend(_event_entries(event, calls))
    out.extend(_subagent(record, titles or {}) for record in pending)
    return out


def _subagent(record: SessionRecord, titles: dict[str, str]) -> Entry:
    kind = record.header.origin or "child"
    return Entry(
        "subagent",
        None,
        record.header.created_at,
        "",
        record.id,
        f"{kind}: {titles.get(record.id) or 'untitled'}",
    )


# -- terminal ---------------------------------------------------------------------------------


def _rule(label: str, style: Style) -> str:
    line = f"── {label} "
    return style.dim(
        term.cut(line + "─" * max(0, style.width - term.display_width(line)), style.width)
    )


def _cut_result(text: str, session_id: str, seq: int | None) -> list[str]:
    lines = text.splitlines() or [""]
    kept = lines[:RESULT_LINES]
    shown = "\n".join(kept)
    if len(shown) > RESULT_CHARS:
        shown = shown[:RESULT_CHARS]
        kept = shown.splitlines()
    left = len(text) - len(shown)
    if left > 0:
        where = f"sessionquery read {session_id} {seq}" if seq is not None else ""
        kept.append(f"[… {left:,} more characters cut; {where}]")
    return kept


def conversation_text(
    header: SessionHeader, title: TitleSnapshot | None, items: Sequence[Entry], style: Style
) -> list[str]:
    """The terminal view: a heading, then each entry under a rule naming its speaker."""
    sid = header.id
    lines = [
        style.bold(title.title if title else "untitled"),
        style.dim(f"{sid} | {header.cwd or '-'} | created {time_text(header.created_at)} UTC"),
    ]
    for item in items:
        at = f"seq {item.seq} · {time_text(item.time)}"
        if item.kind in ("user", "assistant", "system"):
            lines += ["", _rule(f"{item.kind} · {at}", style), *item.text.splitlines()]
        elif item.kind == "tool-call":
            call = " ".join(item.text.split())
            lines.append(term.cut(f"  → {item.name} {call}", style.width))
        elif item.kind == "tool-result":
            mark = "  ← error" if item.detail else "  ←"
            body = _cut_result(item.text, sid, item.seq)
            lines += [f"{mark} {body[0]}", *(f"    {line}" for line in body[1:])]
        elif item.kind == "compaction":
            lines += ["", _rule(f"compaction · {at} · {item.detail}", style)]
            lines += item.text.splitlines()
        elif item.kind == "subagent":
            lines += ["", _rule(f"{item.detail} · session {item.name}", style)]
            lines.append(
                style.dim(f"   read it with: sessionquery show {item.name} --conversation")
            )
        elif item.kind == "turn-end":
            lines.append(style.dim(f"  (turn ended: {item.detail} {item.text})".rstrip()))
        elif item.kind == "boundary":
            lines += ["", _rule(item.detail, style)]
    return lines


# -- exports ----------------------------------------------------------------------------------


def export_json(
    log: SessionLog, title: TitleSnapshot | None, children: Sequence[SessionRecord]
) -> dict[str, Any]:
    """The complete session as one JSON document (events in their wire form)."""
    return {
        "session": header_json(log.session),
        "title": title_json(title),
        "inherited_event_count": log.inherited_event_count,
        "events": [thaw(event.to_json()) for event in log.events],
        "children": [record.id for record in children],
    }


def _fence(text: str, info: str = "") -> list[str]:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{info}", *text.splitlines(), fence]


_MD_HEADINGS = {"user": "User", "assistant": "Assistant", "system": "System"}


def _markdown_line(text: str) -> str:
    # Inline data is escaped so it cannot open links, emphasis or HTML; controls are visible.
    flat = " ".join(term.printable(text).split())
    return re.sub(r"([\\`*_{}\[\]<>()#+!|])", r"\\\1", flat)


def _code_span(text: str) -> str:
    """``text`` as one inline code span: delimited by a backtick run longer than any inside it
    (backslashes do not escape inside code spans), controls shown as visible escapes."""
    flat = " ".join(term.printable(text).split())
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    ticks = "`" * (longest + 1)
    padded = f" {flat} " if flat.startswith("`") or flat.endswith("`") else flat
    return f"{ticks}{padded}{ticks}"


def _printable(items: Sequence[Entry]) -> list[Entry]:
    return [
        Entry(
            i.kind,
            i.seq,
            i.time,
            term.printable(i.text),
            term.printable(i.name),
            term.printable(i.detail),
        )
        for i in items
    ]


def export_markdown(
    header: SessionHeader, title: TitleSnapshot | None, items: Sequence[Entry]
) -> str:
    """The complete conversation as Markdown (message text verbatim, tool data fenced).

    Control characters are written as visible escapes (``\\x1b``), as on the terminal.
    """
    items = _printable(items)
    lines = [
        f"# {_markdown_line(title.title) if title else 'Untitled session'}",
        "",
        f"- Session: {_code_span(header.id)}",
        f"- Created: {time_text(header.created_at)} UTC",
        f"- Workspace: {_markdown_line(header.cwd or '-')}",
    ]
    for item in items:
        at = f"seq {item.seq}, {time_text(item.time)} UTC"
        lines.append("")
        if item.kind in _MD_HEADINGS:
            lines += [f"## {_MD_HEADINGS[item.kind]} ({at})", "", item.text]
        elif item.kind == "reasoning":
            lines += [f"*Reasoning ({at}):*", "", *(f"> {line}" for line in item.text.splitlines())]
        elif item.kind == "tool-call":
            lines += [f"**Tool call** {_code_span(item.name)} ({at})", ""]
            lines += _fence(item.text, "json")
        elif item.kind == "tool-result":
            lines += [f"**Tool result{' (error)' if item.detail else ''}** ({at})", ""]
            lines += _fence(item.text)
        elif item.kind == "compaction":
            lines += [f"## Compaction ({at}; {item.detail})", "", item.text]
        elif item.kind == "subagent":
            lines.append(f"> **Subagent** {_code_span(item.name)} ({_markdown_line(item.detail)})")
        elif item.kind == "turn-end":
            lines.append(f"*Turn ended: {_markdown_line(item.detail + ' ' + item.text)}*")
        elif item.kind == "boundary":
            lines.append(f"---\n\n*{_markdown_line(item.detail)}*")
    return "\n".join(lines) + "\n"
