"""The viewer's list pages: sessions, search results, lineage, and the error page.

Each function takes what the :class:`~sessionquery.web.catalog.Catalog` read and returns a
whole page as :class:`~sessionquery.web.markup.Markup`. Invariants: no page reads anything
itself (the server calls the catalog and passes the results in); session data reaches the
page only as escaped text or as an attribute value; a title that was not read in time is
shown as a placeholder the script fills in (``data-title-pending``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sessionquery.match_modes import SEARCH_MODES
from sessionquery.query.types import LineageNode, LineageTrace, SessionRecord, SessionSearchHit
from sessionquery.web.catalog import NOT_READ, Row
from sessionquery.web.layout import badge, page, session_url, size_text, url
from sessionquery.web.markup import Markup, el, join
from sessionquery.web.timefmt import iso_time

__all__ = [
    "PAGE_SIZE",
    "ListFilters",
    "error_page",
    "lineage_page",
    "search_page",
    "sessions_page",
    "title_cell",
]

PAGE_SIZE = 50
"""Sessions per page of the sessions list."""

Titles = Mapping[str, "str | object | None"]


@dataclass(frozen=True, slots=True)
class ListFilters:
    """The sessions page's filters, as given in its query string."""

    source: str = ""
    cwd: str = ""
    since: str = ""
    until: str = ""
    availability: str = ""
    archived: str = ""
    lineage: str = ""
    page: int = 1

    def params(self, **changes: object) -> dict[str, object]:
        """The query-string parameters of these filters, with ``changes``."""
        values: dict[str, object] = {
            "source": self.source,
            "cwd": self.cwd,
            "from": self.since,
            "to": self.until,
            "avail": self.availability,
            "archived": self.archived,
            "lineage": self.lineage,
            "page": self.page if self.page != 1 else "",
        }
        values.update(changes)
        return values


def title_cell(session_id: str, titles: Titles, record: SessionRecord | None = None) -> Markup:
    """A session's title as a link (a placeholder while it is not read)."""
    title = titles.get(session_id)
    href = session_url(session_id)
    origin = record.header.origin if record is not None else None
    prefix = badge(origin, "origin") if origin else None
    if title is NOT_READ:
        text = el("span", {"class": "pending", "data-title-pending": session_id}, "reading title…")
        return el("a", {"href": href, "class": "title"}, prefix, text)
    shown = title if isinstance(title, str) and title else "untitled"
    css = "title" if isinstance(title, str) and title else "title untitled"
    return el("a", {"href": href, "class": css}, prefix, shown)


def _select(name: str, label: str, options: Sequence[tuple[str, str]], chosen: str) -> Markup:
    items = [
        el("option", {"value": value, "selected": value == chosen}, text) for value, text in options
    ]
    return el("label", None, el("span", None, label), el("select", {"name": name}, items))


def _filters_form(filters: ListFilters, sources: Sequence[str], cwds: Sequence[str]) -> Markup:
    return el(
        "form",
        {"class": "filters", "method": "get", "action": "/"},
        _select("source", "Source", [("", "All"), *((s, s) for s in sources)], filters.source),
        _select("cwd", "Workspace", [("", "All"), *((c, c) for c in cwds)], filters.cwd),
        el(
            "label",
            None,
            el("span", None, "From"),
            el("input", {"type": "date", "name": "from", "value": filters.since}),
        ),
        el(
            "label",
            None,
            el("span", None, "To"),
            el("input", {"type": "date", "name": "to", "value": filters.until}),
        ),
        _select(
            "avail",
            "Availability",
            [("", "Any"), ("live", "Live"), ("persisted", "Persisted")],
            filters.availability,
        ),
        _select(
            "archived",
            "Archived",
            [("", "Include"), ("hide", "Hide"), ("only", "Only")],
            filters.archived,
        ),
        _select(
            "lineage",
            "Lineage",
            [("", "All"), ("roots", "Top-level only"), ("children", "Forks & subagents")],
            filters.lineage,
        ),
        el("button", {"type": "submit"}, "Filter"),
        el("a", {"href": "/", "class": "reset"}, "Reset"),
    )


def _row(row: Row, titles: Titles) -> Markup:
    record = row.record
    flags = []
    if record.live:
        flags.append(badge("live", "live"))
    if row.archived:
        flags.append(badge("archived", "archived"))
    return el(
        "tr",
        {"data-id": row.id},
        el(
            "td",
            {"class": "col-title"},
            title_cell(row.id, titles, record),
            flags,
            el("div", {"class": "sid"}, row.id),
        ),
        el(
            "td",
            {"class": "col-source"},
            badge(row.source, f"src src-{row.source.rstrip('0123456789')}"),
        ),
        el("td", {"class": "col-cwd", "title": record.header.cwd or ""}, record.header.cwd or "—"),
        el(
            "td",
            {"class": "col-time"},
            el(
                "time",
                {"datetime": iso_time(record.header.created_at)},
                iso_time(record.header.created_at, short=True),
            ),
        ),
        el("td", {"class": "col-size"}, size_text(row.size_bytes, row.event_count)),
    )


def sessions_page(
    rows: Sequence[Row],
    total: int,
    filters: ListFilters,
    titles: Titles,
    *,
    sources: Sequence[str],
    cwds: Sequence[str],
    stamp: str,
) -> Markup:
    """The sessions list: filters, one page of rows, paging."""
    pages = max(1, -(-total // PAGE_SIZE))
    shown = el(
        "p",
        {"class": "count"},
        f"{total:,} session{'s' if total != 1 else ''}",
        f" · page {filters.page} of {pages}" if pages > 1 else None,
    )
    table = (
        el(
            "table",
            {"class": "sessions"},
            el(
                "thead",
                None,
                el(
                    "tr",
                    None,
                    [
                        el("th", None, h)
                        for h in ("Session", "Source", "Workspace", "Created (UTC)", "Size")
                    ],
                ),
            ),
            el("tbody", None, [_row(row, titles) for row in rows]),
        )
        if rows
        else el("p", {"class": "empty"}, "No session matches these filters.")
    )
    paging = el(
        "nav",
        {"class": "paging"},
        el("a", {"href": url("/", filters.params(page=filters.page - 1)), "rel": "prev"}, "← Newer")
        if filters.page > 1
        else None,
        el("a", {"href": url("/", filters.params(page=filters.page + 1)), "rel": "next"}, "Older →")
        if filters.page < pages
        else None,
    )
    body = [
        el(
            "div",
            {"class": "live-note", "hidden": True},
            "New or changed sessions. ",
            el("a", {"href": url("/", filters.params())}, "Refresh"),
        ),
        el("h1", None, "Sessions"),
        _filters_form(filters, sources, cwds),
        shown,
        table,
        paging,
    ]
    return page("Sessions", body, name="sessions", data={"stamp": stamp})


def search_page(
    query: str,
    mode: str,
    modes: Sequence[str],
    hits: Sequence[SessionSearchHit],
    titles: Titles,
    *,
    cwd: str,
    cwds: Sequence[str],
    next_url: str | None,
    note: str | None = None,
    building: bool = False,
    corrections: Mapping[str, str] | None = None,
) -> Markup:
    """Search results: the form, then each session hit with its best event and snippet
    (``corrections``: typed word → the word searched instead)."""
    labels: dict[str, str] = {mode.name: mode.label for mode in SEARCH_MODES}
    form = el(
        "form",
        {"class": "filters searchform", "method": "get", "action": "/search"},
        el(
            "input",
            {
                "type": "search",
                "name": "q",
                "value": query,
                "aria-label": "Query",
                "class": "q",
                "placeholder": "What are you looking for?",
            },
        ),
        _select("mode", "Match", [(m, labels.get(m, m)) for m in modes], mode),
        _select("cwd", "Workspace", [("", "All"), *((c, c) for c in cwds)], cwd),
        el("button", {"type": "submit"}, "Search"),
    )
    items = []
    for number, hit in enumerate(hits, 1):
        best = hit.best_match
        link = session_url(hit.record.id, f"/{best.seq}", {"q": query, "mode": mode})
        items.append(
            el(
                "li",
                {"class": "hit"},
                el(
                    "div",
                    {"class": "hit-head"},
                    el("span", {"class": "rank"}, f"{number}."),
                    title_cell(hit.record.id, titles, hit.record),
                    el("span", {"class": "sid"}, hit.record.id),
                ),
                el(
                    "div",
                    {"class": "meta"},
                    hit.record.header.cwd or "—",
                    " · ",
                    iso_time(hit.record.header.created_at, short=True),
                    " · ",
                    el("a", {"href": link, "class": "event-link"}, f"seq {best.seq} · {best.type}"),
                    badge(best.surface, best.surface) if best.surface != "current" else None,
                ),
                el("a", {"href": link, "class": "snippet hl"}, best.snippet),
            )
        )
    if not query:
        result: object = el("p", {"class": "empty"}, "Type a few words to search every session.")
    elif building:
        result = el("p", {"class": "notice building", "data-retry": "2000"}, note or "")
    elif not hits:
        result = el("p", {"class": "empty"}, f"No session matches {query!r}.")
    else:
        result = el("ol", {"class": "hits", "data-q": query}, items)
    more = (
        el("nav", {"class": "paging"}, el("a", {"href": next_url, "rel": "next"}, "More results →"))
        if next_url
        else None
    )
    notice = el("p", {"class": "notice"}, note) if note and not building else None
    fixed = None
    if corrections:
        pairs = [
            join(el("del", None, typed), " → ", el("strong", None, used))
            for typed, used in corrections.items()
        ]
        fixed = el(
            "p",
            {"class": "corrected"},
            "Searched with ",
            [join(pair, ", " if i < len(pairs) - 1 else "") for i, pair in enumerate(pairs)],
            " (no session holds the words as typed).",
        )
    marked = " ".join([query, *(corrections or {}).values()])
    body = [el("h1", None, "Search"), form, notice, fixed, result, more]
    return page(
        f"Search: {query}" if query else "Search",
        body,
        name="search",
        query=query,
        data={"q": marked},
    )


def _node(node: LineageNode, titles: Titles) -> Markup:
    return el(
        "li",
        None,
        _lineage_entry(node.record, titles),
        el("ul", None, [_node(child, titles) for child in node.descendants])
        if node.descendants
        else None,
    )


def _lineage_entry(record: SessionRecord, titles: Titles, *, target: bool = False) -> Markup:
    return el(
        "div",
        {"class": "node target" if target else "node"},
        title_cell(record.id, titles, record),
        el("span", {"class": "sid"}, record.id),
        el("span", {"class": "meta"}, iso_time(record.header.created_at, short=True)),
        badge("this session", "here") if target else None,
        el("a", {"class": "tree-link", "href": session_url(record.id, "/lineage")}, "lineage"),
    )


def lineage_page(trace: LineageTrace, titles: Titles) -> Markup:
    """A session's ancestors and descendants as a tree of links."""
    target = trace.target
    chain = list(reversed(trace.ancestors))
    inner = el(
        "li",
        None,
        _lineage_entry(target, titles, target=True),
        el("ul", None, [_node(n, titles) for n in trace.descendants])
        if trace.descendants
        else None,
    )
    for record in reversed(chain):
        inner = el("li", None, _lineage_entry(record, titles), el("ul", None, inner))
    notes = []
    if not trace.complete:
        notes.append(
            el(
                "p",
                {"class": "notice incomplete"},
                "Lineage incomplete: the parent session ",
                el("code", None, trace.unresolved_parent_id or "?"),
                " is not in the selected sources.",
            )
        )
    counts = f"{len(trace.ancestors)} ancestor(s), {_count(trace.descendants)} descendant(s)"
    body = [
        el(
            "p",
            {"class": "crumbs"},
            el("a", {"href": session_url(target.id)}, "← Back to the session"),
        ),
        el("h1", None, "Lineage"),
        el("p", {"class": "muted"}, counts),
        *notes,
        el("ul", {"class": "tree"}, inner),
    ]
    return page("Lineage", body, name="lineage", data={"session": target.id})


def _count(nodes: Sequence[LineageNode]) -> int:
    return sum(1 + _count(node.descendants) for node in nodes)


def error_page(code: str, message: str) -> Markup:
    """A failure, as its one-line ``CODE: message``."""
    body = [
        el("h1", None, "Something is not right"),
        el("p", {"class": "error-line"}, el("code", None, f"{code}: {message}")),
        el("p", None, el("a", {"href": "/"}, "Back to the sessions")),
    ]
    return page("Error", body, name="error")
