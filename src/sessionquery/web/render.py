"""Conversation items as HTML: the one renderer behind the viewer's pages and the HTML export.

Every function returns :class:`~sessionquery.web.markup.Markup` built with
:func:`~sessionquery.web.markup.el`, so session data is always escaped. Invariants:

* each event is one ``<article id="seq-N">`` whose ``data-seq`` and classes (``surface-…``,
  ``kind-…``) describe it; messages (user, assistant, system, compaction) carry the class
  ``msg`` that keyboard navigation walks;
* assistant text is rendered as safe Markdown; user, tool and raw text as preformatted text;
* a tool output longer than :data:`PREVIEW_LINES` lines or :data:`PREVIEW_CHARS` characters
  shows a preview and folds the rest; beyond ``limit`` characters (the server's page budget)
  it is cut with a link to the raw event — the export passes no limit and is complete;
* edits (``old``/``new`` argument pairs, patches) are shown as diffs;
* links go through a :class:`Links` value: the server links to URLs, the export to anchors.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sessionquery.web.conversation import Item, ToolCall
from sessionquery.web.markdown import render_markdown
from sessionquery.web.markup import Markup, el, join
from sessionquery.web.timefmt import iso_time

__all__ = ["PREVIEW_CHARS", "PREVIEW_LINES", "Links", "render_item", "render_items"]

PREVIEW_LINES = 8
"""Lines of a long tool output shown before the fold."""
PREVIEW_CHARS = 1200
"""Characters of a long tool output shown before the fold."""

_EDIT_PAIRS = (("old_string", "new_string"), ("old_str", "new_str"), ("old", "new"))
_PATH_KEYS = ("file_path", "path", "filename", "file")


@dataclass(frozen=True, slots=True)
class Links:
    """Where the rendered page links to.

    Attributes:
        event: the URL of an event of this session (``seq -> url``).
        raw: the URL of an event's full JSON, or ``None`` (the export embeds everything).
        limit: the most characters of one text shown before it is cut (``None``: no cut).
    """

    event: Callable[[int], str]
    raw: Callable[[int], str] | None = None
    limit: int | None = None


def _cut(text: str, links: Links, seq: int) -> tuple[str, Markup | None]:
    if links.limit is None or len(text) <= links.limit:
        return text, None
    left = len(text) - links.limit
    note: list[object] = [f"{left:,} more characters not shown here. "]
    if links.raw is not None:
        note.append(el("a", {"href": links.raw(seq)}, "Open the whole event"))
    return text[: links.limit], el("p", {"class": "cut"}, note)


def _pre(text: str, css: str = "") -> Markup:
    return el("pre", {"class": css or None}, text)


def _folded(text: str, links: Links, seq: int, css: str = "") -> Markup:
    """Text as preformatted, with a preview and a fold when it is long."""
    text, note = _cut(text, links, seq)
    lines = text.count("\n") + 1
    if lines <= PREVIEW_LINES and len(text) <= PREVIEW_CHARS:
        return join(_pre(text, css), note)
    preview = "\n".join(text.split("\n", PREVIEW_LINES)[:PREVIEW_LINES])[:PREVIEW_CHARS]
    size = f"{lines:,} lines · {_bytes(len(text.encode('utf-8', 'replace')))}"
    return el(
        "div",
        {"class": "fold"},
        _pre(preview + " …", f"preview {css}".strip()),
        el("details", None, el("summary", None, f"Show all {size}"), _pre(text, css)),
        note,
    )


def _bytes(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KB"
    return f"{count / 1024 / 1024:.1f} MB"


def _diff_lines(old: str, new: str) -> list[str]:
    lines = list(
        difflib.unified_diff(
            old.splitlines(), new.splitlines(), "before", "after", lineterm="", n=3
        )
    )
    return lines[2:] if len(lines) > 2 else lines


def _patch(lines: Sequence[str], path: str = "") -> Markup:
    rows = []
    for line in lines:
        css = "ctx"
        if line.startswith(("+++", "---", "***", "diff ", "@@")):
            css = "hunk"
        elif line.startswith("+"):
            css = "add"
        elif line.startswith("-"):
            css = "del"
        rows.append(el("span", {"class": css}, line + "\n"))
    head = el("div", {"class": "diff-path"}, path) if path else None
    return el("div", {"class": "diff"}, head, el("pre", None, rows))


def _edit_diff(args: dict[str, Any]) -> Markup | None:
    path = next((str(args[k]) for k in _PATH_KEYS if isinstance(args.get(k), str)), "")
    for old_key, new_key in _EDIT_PAIRS:
        old, new = args.get(old_key), args.get(new_key)
        if isinstance(old, str) and isinstance(new, str):
            return _patch(_diff_lines(old, new), path)
    edits = args.get("edits")
    if isinstance(edits, list) and edits and all(isinstance(e, dict) for e in edits):
        diffs = [_edit_diff({**e, "file_path": path}) for e in edits]
        if all(d is not None for d in diffs):
            return join(diffs)
    for value in args.values():
        texts = value if isinstance(value, list) else [value]
        for text in texts:
            if isinstance(text, str) and ("*** Begin Patch" in text or text.startswith("diff --")):
                return _patch(text.splitlines(), path)
    return None


def _call(call: ToolCall, links: Links, seq: int) -> Markup:
    args = call.parsed()
    body: Markup | None = _edit_diff(args) if args is not None else None
    if body is None:
        command = args.get("command") if args else None
        if isinstance(command, str) and len(args or {}) <= 3:
            body = _pre("$ " + command, "command")
        else:
            body = _folded(call.arguments, links, seq, "args")
    return el(
        "div",
        {"class": "call"},
        el("div", {"class": "call-name"}, "→ ", el("code", None, call.name)),
        body,
    )


def _seq_link(item: Item, links: Links) -> Markup:
    return el(
        "a",
        {"class": "seq", "href": links.event(item.seq), "data-seq": item.seq, "title": "Permalink"},
        f"#{item.seq}",
    )


def _event_link(seq: int, links: Links, text: str) -> Markup:
    return el("a", {"href": links.event(seq), "data-seq": seq}, text)


def _badges(item: Item, links: Links) -> list[Markup]:
    out: list[Markup] = []
    if item.synthetic:
        out.append(
            el(
                "span",
                {
                    "class": "badge synthetic",
                    "title": "The log ends inside a turn: the read adds "
                    "this event to close it; it is not stored.",
                },
                "added on read",
            )
        )
    if item.surface == "shadowed":
        out.append(el("span", {"class": "badge shadowed"}, "shadowed"))
        if item.replaced_by is not None:
            out.append(
                el(
                    "span",
                    {"class": "rel"},
                    "replaced by ",
                    _event_link(item.replaced_by, links, f"#{item.replaced_by}"),
                )
            )
    elif item.surface == "log-only":
        out.append(el("span", {"class": "badge log-only"}, "log-only"))
    return out


_LABELS = {
    "user": "User",
    "assistant": "Assistant",
    "system": "System",
    "tool-call": "Tool call",
    "tool-result": "Tool result",
    "title": "Title",
    "todo": "Todo list",
    "turn-end": "Turn ended",
}


def _label(item: Item) -> str:
    if item.compaction:
        return "Compaction summary" if item.kind == "user" else f"{_LABELS[item.kind]} (replaces)"
    if item.kind == "user" and item.source_kind not in ("", "user"):
        return f"User ({item.source_kind})"
    if item.kind == "tool-result":
        name = f" · {item.tool_name}" if item.tool_name else ""
        return ("Tool error" if item.is_error else "Tool result") + name
    return _LABELS.get(item.kind, item.type)


def _replaces(item: Item, links: Links) -> Markup | None:
    if not item.replaces:
        return None
    first, last = item.replaces[0], item.replaces[-1]
    count = len(item.replaces)
    return el(
        "div",
        {"class": "replaces", "data-replaces": " ".join(map(str, item.replaces))},
        f"Replaced {count} earlier event{'s' if count != 1 else ''} (",
        _event_link(first, links, f"#{first}"),
        "\u2013" if count > 1 else None,
        _event_link(last, links, f"#{last}") if count > 1 else None,
        ") on the surface. ",
        el(
            "button",
            {"type": "button", "class": "link show-replaced", "data-seq": item.seq},
            "Show what it replaced",
        ),
    )


def _body(item: Item, links: Links) -> list[object]:
    parts: list[object] = []
    if item.kind == "assistant":
        if item.reasoning:
            parts.append(
                el(
                    "details",
                    {"class": "reasoning"},
                    el("summary", None, "Reasoning"),
                    _pre(_cut(item.reasoning, links, item.seq)[0]),
                )
            )
        if item.text:
            text, note = _cut(item.text, links, item.seq)
            parts += [el("div", {"class": "md"}, render_markdown(text)), note]
        parts += [_call(call, links, item.seq) for call in item.calls]
    elif item.kind in ("user", "system"):
        text, note = _cut(item.text, links, item.seq)
        parts += [el("div", {"class": "text"}, text), note]
    elif item.kind == "tool-call":
        parts += [_call(call, links, item.seq) for call in item.calls]
    elif item.kind == "tool-result":
        parts.append(_folded(item.text, links, item.seq, "output"))
    elif item.kind == "todo":
        parts.append(
            el(
                "ul",
                {"class": "todos"},
                [el("li", {"class": f"todo-{status}"}, content) for status, content in item.todos],
            )
        )
    parts.append(_replaces(item, links))
    return parts


_THIN = frozenset({"structural", "raw", "title", "turn-end"})
"""Kinds shown as one thin line rather than a card."""


def _thin(item: Item, links: Links) -> Markup:
    if item.kind == "structural":
        return el("code", None, item.text)
    if item.kind == "title":
        return join(
            el("code", None, "session/title"), " ", el("span", {"class": "text"}, item.text)
        )
    if item.kind == "turn-end":
        css = "text" if item.text in ("", "completed", "stop", "end-turn") else "text warn"
        return join(el("code", None, "turn/end"), " ", el("span", {"class": css}, item.text))
    return el(
        "details", None, el("summary", None, item.type), _folded(item.text, links, item.seq, "raw")
    )


def render_item(item: Item, links: Links, *, anchor: bool = True) -> Markup:
    """One event as an ``<article>`` (``anchor=False``: a copy shown elsewhere, without the
    ``seq-N`` id that belongs to the event's own place)."""
    classes = [f"ev kind-{item.kind}", f"surface-{item.surface}"]
    if item.compaction:
        classes.append("compaction")
    if item.synthetic:
        classes.append("synthetic")
    if item.kind in ("user", "assistant", "system") or item.compaction:
        classes.append("msg")
    attrs = {
        "id": f"seq-{item.seq}" if anchor else None,
        "class": " ".join(classes),
        "data-seq": item.seq,
    }
    when = el("time", {"datetime": iso_time(item.time)}, iso_time(item.time, short=True))
    if item.kind in _THIN:
        return el(
            "article",
            attrs,
            el(
                "div",
                {"class": "thin"},
                _seq_link(item, links),
                _thin(item, links),
                _badges(item, links) if item.synthetic else None,
            ),
        )
    head = el(
        "header",
        None,
        el("span", {"class": "who"}, _label(item)),
        _seq_link(item, links),
        when,
        _badges(item, links),
    )
    return el("article", attrs, head, el("div", {"class": "body"}, _body(item, links)))


def render_items(items: Sequence[Item], links: Links) -> Markup:
    """Several events, in order."""
    return join([render_item(item, links) for item in items])
