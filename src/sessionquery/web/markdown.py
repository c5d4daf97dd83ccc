"""A small, safe Markdown renderer for assistant messages.

Agents write Markdown: paragraphs, fenced code, inline code, emphasis, headings, lists,
quotes and links. This renders that common subset and nothing else. Invariants:

* the output is built with :mod:`sessionquery.web.markup`, so all text is escaped; raw HTML in
  the source is shown as text, never interpreted;
* a link's target goes through :func:`~sessionquery.web.markup.safe_url` (only relative,
  ``http(s):`` and ``mailto:`` targets; ``javascript:`` and ``data:`` links become ``#``) and
  every link gets ``rel="noopener noreferrer nofollow"``;
* rendering is bounded: blocks are found line by line, inline spans only in lines of at most
  :data:`INLINE_LINE_MAX` characters with bounded repetitions, and a message longer than
  :data:`PLAIN_TEXT_OVER` is shown as plain text, so a hostile message cannot stall it;
* anything not understood is shown as the text it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from sessionquery.web.markup import Markup, el, join

__all__ = ["render_markdown"]

_FENCE = re.compile(r"^(\s{0,3})(`{3,}|~{3,})\s*([\w+#.-]*)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s{0,3}[-*+]\s+(.*)$")
_NUMBER = re.compile(r"^\s{0,3}(\d{1,9})[.)]\s+(.*)$")
_QUOTE = re.compile(r"^\s{0,3}>\s?(.*)$")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_INLINE = re.compile(
    r"(?P<code>`{1,3})(?P<code_text>[^`\n]{1,1000}?)(?P=code)"
    r"|\[(?P<link_text>[^\]\n]{1,500})\]\((?P<link_url>[^)\s]{1,1000})\)"
    r"|\*\*(?P<strong>[^*\n]{1,1000})\*\*"
    r"|__(?P<strong2>[^_\n]{1,1000})__"
    r"|(?<![\w*])\*(?P<em>[^*\s][^*\n]{0,1000}?)\*(?![\w*])"
    r"|(?P<url>https?://[^\s<>()\[\]]{1,1000}[^\s<>()\[\].,;:!?'\"])"
)
_LINK_REL = "noopener noreferrer nofollow"


INLINE_LINE_MAX = 4000
"""Lines longer than this are shown as plain text (inline spans are not looked for)."""
PLAIN_TEXT_OVER = 200_000
"""Messages longer than this are shown as preformatted text, not rendered as Markdown."""


def _inline(text: str) -> Markup:
    if len(text) > INLINE_LINE_MAX:
        return Markup(join(text))
    parts: list[object] = []
    position = 0
    for match in _INLINE.finditer(text):
        parts.append(text[position : match.start()])
        position = match.end()
        group = match.lastgroup
        if match.group("code") is not None:
            parts.append(el("code", None, match.group("code_text")))
        elif match.group("link_text") is not None:
            url = match.group("link_url")
            parts.append(el("a", {"href": url, "rel": _LINK_REL}, match.group("link_text")))
        elif group in ("strong", "strong2"):
            parts.append(el("strong", None, match.group(group)))
        elif group == "em":
            parts.append(el("em", None, match.group("em")))
        elif group == "url":
            url = match.group("url")
            parts.append(el("a", {"href": url, "rel": _LINK_REL}, url))
    parts.append(text[position:])
    return join(parts)


def _lines_inline(lines: list[str]) -> Markup:
    out: list[object] = []
    for index, line in enumerate(lines):
        if index:
            out.append(el("br"))
        out.append(_inline(line))
    return join(out)


def _list_block(lines: list[str], index: int, pattern: re.Pattern[str]) -> tuple[Markup, int]:
    items: list[list[str]] = []
    while index < len(lines):
        line = lines[index]
        match = pattern.match(line)
        if match:
            items.append([match.group(match.lastindex or 1)])
        elif items and line.strip() and line.startswith((" ", "\t")):
            items[-1].append(line.strip())
        else:
            break
        index += 1
    tag = "ol" if pattern is _NUMBER else "ul"
    start = None
    if tag == "ol":
        first = _NUMBER.match(lines[index - len(items)] if items else "")
        start = first.group(1) if first and first.group(1) != "1" else None
    body = [el("li", None, _lines_inline(item)) for item in items]
    return el(tag, {"start": start}, body), index


def _blocks(lines: list[str]) -> Iterator[Markup]:
    index = 0
    paragraph: list[str] = []

    def flush() -> Iterator[Markup]:
        if paragraph:
            yield el("p", None, _lines_inline(paragraph))
            paragraph.clear()

    while index < len(lines):
        line = lines[index]
        fence = _FENCE.match(line)
        if fence:
            yield from flush()
            marker, language = fence.group(2), fence.group(3)
            body: list[str] = []
            index += 1
            while index < len(lines) and not lines[index].strip().startswith(marker):
                body.append(lines[index])
                index += 1
            index += 1
            attrs = {"class": "code", "data-lang": language or None}
            yield el("pre", attrs, el("code", None, "\n".join(body)))
            continue
        heading = _HEADING.match(line)
        if not line.strip():
            yield from flush()
        elif heading:
            yield from flush()
            level = min(6, len(heading.group(1)) + 2)  # inside a message: h3..h6
            yield el(f"h{level}", None, _inline(heading.group(2)))
        elif _RULE.match(line):
            yield from flush()
            yield el("hr")
        elif _BULLET.match(line) or _NUMBER.match(line):
            yield from flush()
            pattern = _BULLET if _BULLET.match(line) else _NUMBER
            block, index = _list_block(lines, index, pattern)
            yield block
            continue
        elif _QUOTE.match(line):
            yield from flush()
            quoted: list[str] = []
            while index < len(lines) and (match := _QUOTE.match(lines[index])):
                quoted.append(match.group(1))
                index += 1
            yield el("blockquote", None, list(_blocks(quoted)))
            continue
        else:
            paragraph.append(line)
        index += 1
    yield from flush()


def render_markdown(text: str) -> Markup:
    """``text`` (Markdown) as safe HTML."""
    if len(text) > PLAIN_TEXT_OVER:
        return el("pre", {"class": "plain"}, text)
    return join(list(_blocks(text.replace("\r\n", "\n").split("\n"))))
