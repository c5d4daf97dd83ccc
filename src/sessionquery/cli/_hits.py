"""Search results for the command line: JSON shapes and text with highlighted snippets.

Sessions are named by their short ids in text (the JSON carries full ids and ``short_id``);
every text line fits the style's width; a search whose words were corrected starts with one
line saying what was searched instead. Nothing here does I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sessionquery.cli import _terminal as term
from sessionquery.cli._render import (
    Style,
    _or_dash,
    event_record_json,
    header_json,
    record_json,
    time_text,
)
from sessionquery.match_modes import SEARCH_MODES
from sessionquery.query.types import EventSearchHit, EventSearchPage, SessionSearchPage

__all__ = [
    "corrected_query",
    "correction_line",
    "event_hits_json",
    "event_hits_text",
    "mode_text",
    "session_hits_json",
    "session_hits_text",
]


def _hit_json(hit: EventSearchHit) -> dict[str, Any]:
    return {**event_record_json(hit), "snippet": hit.snippet}


def session_hits_json(
    query: str,
    page: SessionSearchPage,
    titles: dict[str, str | None],
    short_ids: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``search --json``: ``{"query", "items": [{session, short_id, title, best_match}],
    "more"}``.

    ``more`` is true when further hits exist beyond the requested limit (the CLI pages
    internally; continuation cursors are bound to one process and never printed).
    """
    short_ids = short_ids or {}
    return {
        "query": query,
        "items": [
            {
                "session": record_json(hit.record),
                "short_id": short_ids.get(hit.record.id, hit.record.id),
                "title": titles.get(hit.record.id),
                "best_match": _hit_json(hit.best_match),
            }
            for hit in page.items
        ],
        "more": page.next_cursor is not None,
    }


def _match_line(hit: EventSearchHit, style: Style) -> str:
    meta = f"seq {hit.seq} | {term.safe(hit.type)} | {hit.surface} | {time_text(hit.time)}"
    return style.dim(term.cut(meta, style.width - 3))


def _snippet(hit: EventSearchHit, query: str, style: Style) -> list[str]:
    flat = " ".join(term.safe(hit.snippet).split())
    lines = term.wrap(flat, style.width - 3, 3)
    return ["   " + style.highlight(line, query) for line in lines]


def mode_text(match: str) -> str:
    """The mode's summary (its record's, :mod:`sessionquery.match_modes`), or ``match``."""
    mode = next((mode for mode in SEARCH_MODES if mode.name == match), None)
    return match if mode is None else mode.summary


def corrected_query(query: str, corrections: Mapping[str, str]) -> str:
    """``query`` with each corrected word replaced by the word searched instead."""
    out = query
    for typed, searched in corrections.items():
        out = re.sub(rf"(?<!\w){re.escape(typed)}(?!\w)", searched, out, flags=re.IGNORECASE)
    return out


def correction_line(query: str, corrections: Mapping[str, str]) -> list[str]:
    """The first line of a search whose words were corrected (none when nothing was)."""
    if not corrections:
        return []
    fixed = term.cut(term.safe(corrected_query(query, corrections)), 40)
    typed = term.cut(term.safe(query), 40)
    return [f'Showing results for "{fixed}" instead of "{typed}".', ""]


def session_hits_text(
    query: str,
    page: SessionSearchPage,
    titles: dict[str, str | None],
    style: Style,
    *,
    match: str = "phrase",
    short_ids: Mapping[str, str] | None = None,
) -> list[str]:
    """``search``: numbered hits with title, workspace, best match and highlighted snippet.

    Every line fits ``style.width`` columns; the snippet takes at most three lines. Sessions
    are named by their short ids when given.
    """
    short_ids = short_ids or {}
    shown = term.cut(term.safe(query), 40)
    if not page.items:
        return [
            *correction_line(query, page.corrections),
            f"No sessions match {shown!r} ({mode_text(match)}).",
        ]
    lines = [
        *correction_line(query, page.corrections),
        f"{len(page.items)} session(s) match {shown!r} ({mode_text(match)}), best first:",
    ]
    for number, hit in enumerate(page.items, start=1):
        h = hit.record.header
        title = term.safe(titles.get(h.id) or "untitled")
        origin = f" [{h.origin}]" if h.origin else ""
        lead = f"{number}. "
        sid = term.cut(term.safe(short_ids.get(h.id, h.id)), style.width - len(lead))
        rest = style.width - len(lead) - term.display_width(sid) - 3
        heading = f"{lead}{style.bold(sid)}"
        if rest > 1:
            heading += " — " + term.cut(title + origin, rest)
        where = f"{term.safe(_or_dash(h.cwd))}"
        created = f" | created {time_text(h.created_at)} UTC"
        where = term.cut_left(where, style.width - 3 - len(created)) + created
        lines += [
            "",
            heading,
            "   " + style.dim(where),
            "   " + _match_line(hit.best_match, style),
            *_snippet(hit.best_match, query, style),
        ]
    if page.next_cursor:
        lines += ["", style.dim("More results exist: raise --limit or add filters.")]
    return lines


def event_hits_json(query: str, page: EventSearchPage) -> dict[str, Any]:
    """``search-events --json``: ``{"query", "session", "items": [hit], "more"}``."""
    return {
        "query": query,
        "session": header_json(page.session),
        "items": [_hit_json(hit) for hit in page.items],
        "more": page.next_cursor is not None,
    }


def event_hits_text(
    query: str, page: EventSearchPage, style: Style, *, match: str = "phrase"
) -> list[str]:
    """``search-events``: matching events of one session with highlighted snippets."""
    sid = term.safe(page.session.id)
    shown = term.cut(term.safe(query), 30)
    if not page.items:
        none = f"No events of {sid} match {shown!r} ({mode_text(match)})."
        return [*correction_line(query, page.corrections), term.cut(none, style.width)]
    heading = f"{len(page.items)} event(s) of {sid} match {shown!r} ({mode_text(match)}):"
    lines = [*correction_line(query, page.corrections), term.cut(heading, style.width)]
    for hit in page.items:
        lines += ["", _match_line(hit, style), *_snippet(hit, query, style)]
    if page.next_cursor:
        lines += ["", style.dim("More results exist: raise --limit or add filters.")]
    return lines
