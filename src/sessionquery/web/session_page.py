"""The session page: one session as a conversation, in a window around the requested event.

A session can hold 50,000 events; the page never renders them all. It shows
:data:`FIRST_WINDOW` positions of the chosen view (the log, or the surface) around the
target seq (or from the start), with buttons that load the neighbouring windows (the script presses
them as they scroll into sight) through the fragment endpoint, which renders with the same
:func:`window_html`. Invariants: positions are those of :meth:`SessionView.order`; the
fragment for ``[start, end)`` is exactly what the page would have shown there; the boundary
of an inherited (forked) prefix is marked where it ends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sessionquery.query.outline import LogOutline
from sessionquery.web.catalog import Row
from sessionquery.web.conversation import SessionView, View
from sessionquery.web.layout import badge, page, session_url, size_text
from sessionquery.web.markup import Markup, el, join
from sessionquery.web.pages import title_cell
from sessionquery.web.render import Links, render_item
from sessionquery.web.timefmt import iso_time

__all__ = [
    "CUT_CHARS",
    "FIRST_WINDOW",
    "WINDOW",
    "server_links",
    "session_page",
    "window_bounds",
    "window_html",
]

WINDOW = 150
"""Positions of a view loaded at once while scrolling (each window after the first)."""

FIRST_WINDOW = 60
"""Positions of a view on the first screen: a few screenfuls around the target, so that a
page opens at once however long the session; scrolling loads :data:`WINDOW` more at a time."""

CUT_CHARS = 100_000
"""Characters of one text a page shows before cutting it (the raw event has everything)."""


def server_links(session_id: str, view: View) -> Links:
    """Links for pages served by the viewer."""
    params = {"view": view} if view != "log" else {}
    return Links(
        event=lambda seq: session_url(session_id, f"/{seq}", params),
        raw=lambda seq: session_url(session_id, f"/{seq}/raw"),
        limit=CUT_CHARS,
    )


def window_bounds(total: int, position: int | None) -> tuple[int, int]:
    """The window ``[start, end)`` shown around ``position`` (from the start without one)."""
    if position is None:
        return 0, min(total, FIRST_WINDOW)
    start = max(0, position - FIRST_WINDOW // 3)
    end = min(total, start + FIRST_WINDOW)
    return max(0, min(start, end - FIRST_WINDOW)), end


def window_html(
    view: SessionView, mode: View, start: int, end: int, *, links: Links, inherited: int
) -> Markup:
    """The rendered items at positions ``[start, end)`` of ``mode``."""
    parts: list[Markup] = []
    for item in view.items(mode, start, end):
        if inherited and item.seq == inherited:
            parts.append(
                el(
                    "div",
                    {"class": "boundary"},
                    "This session starts here; the events above were inherited from its parent.",
                )
            )
        parts.append(render_item(item, links))
    return join(parts)


def _load(direction: str, start: int, end: int, text: str) -> Markup:
    return el(
        "button",
        {"type": "button", "class": f"load {direction}", "data-start": start, "data-end": end},
        text,
    )


def _actions(
    row: Row | None, session_id: str, mode: View, neighbours: tuple[Row | None, Row | None]
) -> Markup:
    toggle = el(
        "div",
        {"class": "toggle", "role": "group", "aria-label": "View"},
        el(
            "a",
            {
                "href": session_url(session_id),
                "class": "on" if mode == "log" else None,
                "data-view": "log",
                "title": "Every event in the log (s)",
            },
            "Full log",
        ),
        el(
            "a",
            {
                "href": session_url(session_id, "", {"view": "surface"}),
                "class": "on" if mode == "surface" else None,
                "data-view": "surface",
                "title": "Only what the model sees now (s)",
            },
            "Surface",
        ),
    )
    resume = row.resume if row is not None else None
    copy = (
        el(
            "div",
            {"class": "resume"},
            el(
                "input",
                {
                    "type": "text",
                    "readonly": True,
                    "value": resume,
                    "aria-label": "Resume command",
                    "class": "resume-command",
                },
            ),
            el(
                "button",
                {"type": "button", "class": "copy", "data-copy": resume},
                "Copy resume command",
            ),
        )
        if resume
        else None
    )
    newer, older = neighbours
    return el(
        "div",
        {"class": "actions"},
        toggle,
        el("a", {"href": session_url(session_id, "/lineage"), "class": "button"}, "Lineage"),
        el("a", {"href": session_url(session_id, "/export"), "class": "button"}, "Export HTML"),
        copy,
        el(
            "span",
            {"class": "neighbours"},
            el(
                "a",
                {
                    "href": session_url(newer.id),
                    "rel": "prev",
                    "class": "button",
                    "title": "Newer session ([)",
                },
                "[ Newer",
            )
            if newer
            else None,
            el(
                "a",
                {
                    "href": session_url(older.id),
                    "rel": "next",
                    "class": "button",
                    "title": "Older session (])",
                },
                "Older ]",
            )
            if older
            else None,
        ),
    )


def _hits(query: str, match: str, seqs: Sequence[int], target: int | None) -> Markup | None:
    if not query:
        return None
    if not seqs:
        return el("div", {"class": "hitbar"}, f"No event of this session matches {query!r}.")
    ordered = sorted(seqs)
    here = ordered.index(target) + 1 if target in ordered else 0
    where = f"hit {here} of {len(ordered)}" if here else f"{len(ordered)} hits"
    return el(
        "div",
        {"class": "hitbar", "data-hits": " ".join(map(str, ordered)), "data-mode": match},
        el("span", None, f"{where} for ", el("mark", None, query)),
        el(
            "button",
            {"type": "button", "class": "hit-prev", "title": "Previous hit (N)"},
            "◀ Previous",
        ),
        el("button", {"type": "button", "class": "hit-next", "title": "Next hit (n)"}, "Next ▶"),
    )


def session_page(
    log: LogOutline,
    view: SessionView,
    *,
    mode: View,
    row: Row | None,
    target: int | None,
    titles: Mapping[str, object],
    neighbours: tuple[Row | None, Row | None],
    children: Sequence[Row] = (),
    query: str = "",
    match: str = "",
    hit_seqs: Sequence[int] = (),
    marked: str = "",
) -> Markup:
    """The whole session page (``marked``: the words to highlight, the query's by default)."""
    header = log.session
    session_id = header.id
    total = len(view.order(mode))
    position = view.position(mode, target) if target is not None else None
    start, end = window_bounds(total, position)
    links = server_links(session_id, mode)
    meta = [
        el("span", {"class": "sid"}, session_id),
        badge(row.source, f"src src-{row.source.rstrip('0123456789')}") if row else None,
        el("span", None, header.cwd or "no workspace"),
        el("span", None, "created ", iso_time(header.created_at, short=True), " UTC"),
        el("span", None, size_text(row.size_bytes if row else None, log.event_count)),
    ]
    lineage = []
    if header.parent_session:
        lineage.append(
            el(
                "span",
                None,
                f"{header.origin or 'child'} of ",
                el("a", {"href": session_url(header.parent_session)}, header.parent_session),
            )
        )
    if children:
        lineage.append(
            el(
                "span",
                None,
                f"{len(children)} fork(s)/subagent(s): ",
                [join(title_cell(c.id, titles, c.record), " ") for c in children[:8]],
                "…" if len(children) > 8 else None,
            )
        )
    conversation = el(
        "div",
        {
            "id": "conversation",
            "data-session": session_id,
            "data-view": mode,
            "data-start": start,
            "data-end": end,
            "data-total": total,
            "data-events": log.event_count,
            "data-target": target,
            "data-inherited": log.inherited_event_count,
        },
        _load("earlier", max(0, start - WINDOW), start, f"Load {min(WINDOW, start):,} earlier")
        if start > 0
        else None,
        window_html(view, mode, start, end, links=links, inherited=log.inherited_event_count),
        _load("later", end, min(total, end + WINDOW), "Load more") if end < total else None,
    )
    empty = (
        el("p", {"class": "empty"}, "The surface is empty: nothing is visible to the model.")
        if total == 0
        else None
    )
    body = [
        el("p", {"class": "crumbs"}, el("a", {"href": "/"}, "← Sessions")),
        el("h1", None, title_cell(session_id, titles, row.record if row else None)),
        el("div", {"class": "meta"}, meta),
        el("div", {"class": "meta lineage"}, lineage) if lineage else None,
        _actions(row, session_id, mode, neighbours),
        _hits(query, match, hit_seqs, target),
        el("p", {"class": "viewnote muted"}, _view_note(mode, total, log.event_count)),
        empty,
        conversation,
    ]
    return page(
        f"{titles.get(session_id) if isinstance(titles.get(session_id), str) else session_id}",
        body,
        name="session",
        query="",
        data={"q": marked or query, "session": session_id},
    )


def _view_note(mode: View, shown: int, events: int) -> str:
    if mode == "surface":
        return (
            f"Surface: the {shown:,} events the model sees now, in its order "
            f"({events - shown:,} shadowed or log-only events hidden)."
        )
    return f"Full log: all {events:,} events in seq order; shadowed and log-only events are marked."
