"""One session as one self-contained HTML file, from the viewer's own renderer.

``sessionquery export ID --format html`` writes it. The page holds the whole conversation
(nothing cut), the viewer's stylesheet and its script inline, and no reference to anything
outside the file, so it can be mailed, archived and opened from disk. Invariants:

* the page's Content-Security-Policy (a ``<meta>``) allows exactly the inline script and
  style it carries, by their SHA-256 hashes: no other script, and no network request, can
  run in it, whatever the session holds;
* session data is escaped exactly as on the server (the same :func:`render_item`);
* links to events are ``#seq-N`` anchors; the in-page search (``/``) works from ``file://``
  because it only reads the page itself.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence

from sessionquery.model import TitleSnapshot
from sessionquery.query.filters import ParentIn
from sessionquery.query.service import SessionQuery
from sessionquery.query.types import SessionLog, SessionRecord
from sessionquery.web.app import static_file
from sessionquery.web.conversation import SessionView
from sessionquery.web.layout import help_dialog, size_text
from sessionquery.web.markup import Markup, el, join, raw
from sessionquery.web.render import Links
from sessionquery.web.session_page import window_html
from sessionquery.web.timefmt import iso_time

__all__ = ["export_page", "export_session", "view_of"]


def _hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def _inline(text: str, closing: str) -> str:
    # An asset of our own never holds its closing tag; make sure of it anyway.
    assert closing not in text.lower(), f"a bundled asset contains {closing}"
    return text


def export_page(
    log: SessionLog,
    view: SessionView,
    title: TitleSnapshot | None,
    children: Sequence[SessionRecord] = (),
) -> str:
    """The complete session as one HTML document (a ``str``)."""
    header = log.session
    css = _inline(static_file("viewer.css").decode("utf-8"), "</style")
    script = _inline(static_file("viewer.js").decode("utf-8"), "</script")
    csp = (
        f"default-src 'none'; style-src {_hash(css)}; script-src {_hash(script)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    links = Links(event=lambda seq: f"#seq-{seq}")
    name = title.title if title else "Untitled session"
    meta = [
        el("span", {"class": "sid"}, header.id),
        el("span", None, header.cwd or "no workspace"),
        el("span", None, "created ", iso_time(header.created_at, short=True), " UTC"),
        el("span", None, size_text(None, len(log.events))),
    ]
    if header.parent_session:
        meta.append(
            el(
                "span",
                None,
                f"{header.origin or 'child'} of ",
                el("code", None, header.parent_session),
            )
        )
    if children:
        meta.append(
            el(
                "span",
                None,
                "forks/subagents: ",
                [join(el("code", None, c.id), " ") for c in children],
            )
        )
    top = el(
        "header",
        {"class": "top"},
        el("span", {"class": "brand"}, raw('<span class="logo">◆</span>'), "sessionquery"),
        el(
            "form",
            {"class": "search", "role": "search"},
            el(
                "input",
                {
                    "type": "search",
                    "name": "find",
                    "id": "find",
                    "placeholder": "Find in this session…   /",
                    "aria-label": "Find in this session",
                    "autocomplete": "off",
                },
            ),
            el("span", {"class": "find-count", "aria-live": "polite"}, ""),
        ),
        el("button", {"type": "button", "class": "help-button", "data-help": True}, "?"),
    )
    total = len(log.events)
    conversation = el(
        "div",
        {
            "id": "conversation",
            "data-view": "log",
            "data-start": 0,
            "data-end": total,
            "data-total": total,
            "data-static": "1",
        },
        window_html(view, "log", 0, total, links=links, inherited=log.inherited_event_count),
    )
    body = el(
        "body",
        {"data-page": "export"},
        top,
        el(
            "main",
            None,
            el("h1", None, name),
            el("div", {"class": "meta"}, meta),
            el(
                "p",
                {"class": "viewnote muted"},
                f"Exported from sessionquery: all {total:,} events in seq order; shadowed and "
                "log-only events are marked.",
            ),
            conversation,
        ),
        help_dialog(),
    )
    head = el(
        "head",
        None,
        el("meta", {"charset": "utf-8"}),
        el("meta", {"http-equiv": "Content-Security-Policy", "content": csp}),
        el("meta", {"name": "viewport", "content": "width=device-width, initial-scale=1"}),
        el("meta", {"name": "referrer", "content": "no-referrer"}),
        el("title", None, f"{name} · sessionquery"),
        Markup(f"<style>{css}</style>"),
        Markup(f"<script>{script}</script>"),
    )
    return join(raw("<!DOCTYPE html>\n"), el("html", {"lang": "en"}, head, body)) + "\n"


def export_session(query: SessionQuery, session_id: str) -> str:
    """Read one session through ``query`` and export it (:func:`export_page`).

    Raises:
        SessionQueryError: as :meth:`SessionQuery.read_session`.
    """
    log = query.read_session(session_id)
    (result,) = query.read_title_snapshots([session_id])
    children = query.filter_sessions([ParentIn((session_id,))])
    return export_page(log, view_of(log), result.title, children)


def view_of(log: SessionLog) -> SessionView:
    """The conversation view of a whole log."""
    return SessionView.whole(log)
