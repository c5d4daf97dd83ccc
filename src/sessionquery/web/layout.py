"""The frame every viewer page shares: head, top bar, help dialog; and small shared pieces.

Invariants: pages load exactly one script and one stylesheet, both from ``/static/`` (the
server's Content-Security-Policy allows nothing else); no page carries inline script or
style; the help dialog lists every key the script binds (:data:`KEYS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote, urlencode

from sessionquery.web.markup import Markup, el, join, raw

__all__ = [
    "KEYS",
    "badge",
    "help_dialog",
    "page",
    "session_url",
    "size_text",
    "url",
]

KEYS: tuple[tuple[str, str], ...] = (
    ("j / k", "next / previous message (or row of a list)"),
    ("Enter", "open the chosen row"),
    ("n / N", "next / previous search hit in this session"),
    ("/", "search (all sessions; in an exported page, this page)"),
    ("[ / ]", "previous (newer) / next (older) session"),
    ("s", "switch between the full log and the surface"),
    ("g / G", "first / last loaded event"),
    ("?", "show or hide this help"),
    ("Esc", "close this help, leave the search box"),
)
"""Every key the viewer's script binds, with what it does."""


def url(path: str, params: Mapping[str, object] | None = None) -> str:
    """``path`` with the non-empty ``params`` as its query string."""
    kept = {k: str(v) for k, v in (params or {}).items() if v not in (None, "", False)}
    return f"{path}?{urlencode(kept)}" if kept else path


def session_url(
    session_id: str, suffix: str = "", params: Mapping[str, object] | None = None
) -> str:
    """The URL of a session page (``suffix``: ``/<seq>``, ``/lineage``...)."""
    return url(f"/s/{quote(session_id, safe='')}{suffix}", params)


def size_text(size: int | None, events: int | None) -> str:
    """``"1,234 events · 2.1 MB"`` from what is known."""
    parts = []
    if events is not None:
        parts.append(f"{events:,} events")
    if size is not None:
        parts.append(f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{max(1, round(size / 1e3))} KB")
    return " · ".join(parts) or "—"


def badge(text: str, css: str = "") -> Markup:
    """A small label."""
    return el("span", {"class": f"badge {css}".strip()}, text)


def help_dialog() -> Markup:
    """The keyboard help (``?``)."""
    rows = [el("tr", None, el("td", None, el("kbd", None, k)), el("td", None, v)) for k, v in KEYS]
    return el(
        "dialog",
        {"id": "help", "aria-label": "Keyboard shortcuts"},
        el("h2", None, "Keyboard shortcuts"),
        el("table", {"class": "keys"}, rows),
        el(
            "p",
            {"class": "muted"},
            "Press ",
            el("kbd", None, "?"),
            " or ",
            el("kbd", None, "Esc"),
            " to close.",
        ),
    )


def _top(query: str) -> Markup:
    return el(
        "header",
        {"class": "top"},
        el(
            "a", {"class": "brand", "href": "/"}, raw('<span class="logo">◆</span>'), "sessionquery"
        ),
        el("nav", None, el("a", {"href": "/"}, "Sessions")),
        el(
            "form",
            {"class": "search", "action": "/search", "role": "search", "method": "get"},
            el(
                "input",
                {
                    "type": "search",
                    "name": "q",
                    "value": query,
                    "placeholder": "Search every session…   /",
                    "aria-label": "Search every session",
                    "autocomplete": "off",
                },
            ),
        ),
        el(
            "button",
            {"type": "button", "class": "help-button", "data-help": True, "title": "Keys (?)"},
            "?",
        ),
    )


def page(
    title: str,
    body: object,
    *,
    name: str,
    query: str = "",
    data: Mapping[str, object] | None = None,
) -> Markup:
    """A whole viewer page.

    Args:
        title: the document title (before `` · sessionquery``).
        body: the ``<main>`` content.
        name: the page kind (``data-page`` of ``<body>``, which the script reads).
        query: the search box's value.
        data: more ``data-*`` attributes of ``<body>`` for the script.
    """
    attrs: dict[str, object] = {"data-page": name}
    for key, value in (data or {}).items():
        attrs[f"data-{key}"] = value
    head = el(
        "head",
        None,
        el("meta", {"charset": "utf-8"}),
        el("meta", {"name": "viewport", "content": "width=device-width, initial-scale=1"}),
        el("meta", {"name": "referrer", "content": "no-referrer"}),
        el("title", None, f"{title} · sessionquery"),
        el("link", {"rel": "stylesheet", "href": "/static/viewer.css"}),
        el("link", {"rel": "icon", "href": "/static/favicon.svg", "type": "image/svg+xml"}),
        el("script", {"src": "/static/viewer.js", "defer": True}),
    )
    return join(
        raw("<!DOCTYPE html>\n"),
        el(
            "html",
            {"lang": "en"},
            head,
            el("body", attrs, _top(query), el("main", None, body), help_dialog()),
        ),
    )
