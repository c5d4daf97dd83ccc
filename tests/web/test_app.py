"""The viewer's routes answered in-process (no socket, no browser): pages, fragments, polling,
the security rules and the failure answers."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

import pytest

from sessionquery import JsonlPersistence, SessionQuery
from sessionquery.persistence.base import PersistedSession, ReadHandle
from sessionquery.search.sqlite import SqliteSearch
from sessionquery.web import Catalog, Guard, Response, ViewerApp
from sessionquery.web.export import export_session
from sessionquery.web.security import CSP, TOKEN_COOKIE
from sessionquery.web.session_page import FIRST_WINDOW
from web_support import HOSTILE_ID, LONG_EVENTS, LONG_ID, ORPHAN_ID, make_history, parse_tags

PORT = 8765
HOST = {"host": f"127.0.0.1:{PORT}"}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ViewerApp]:
    root = tmp_path_factory.mktemp("history")
    persistence = JsonlPersistence(make_history(root))
    query = SessionQuery(persistence=persistence, search=SqliteSearch(root / "index.sqlite3"))
    catalog = Catalog(query, persistence)
    yield ViewerApp(
        catalog,
        Guard.for_bind("127.0.0.1", PORT),
        export=lambda sid: export_session(query, sid),
    )
    query.close()


def get(app: ViewerApp, target: str, headers: dict[str, str] | None = None) -> Response:
    return app.handle("GET", target, headers if headers is not None else HOST)


def text(response: Response) -> str:
    return response.body.decode("utf-8")


def session_path(session_id: str, suffix: str = "") -> str:
    return f"/s/{quote(session_id, safe='')}{suffix}"


@pytest.mark.parametrize(
    "target",
    [
        "/",
        "/?source=store&lineage=roots&from=2025-03-01&to=2025-03-31&page=1",
        "/search?q=rounding",
        "/search?q=float+round&mode=phrase",
        "/search",
        "/s/billing-rounding",
        "/s/billing-rounding?view=surface",
        "/s/billing-rounding/8?q=rounding",
        "/s/billing-rounding/lineage",
        "/s/billing-rounding-scan/lineage",
        "/s/billing-rounding/31/raw",
        "/s/billing-rounding/export",
        "/api/stamp",
        "/api/titles?id=billing-rounding",
        "/api/s/billing-rounding/state",
        "/api/s/billing-rounding/window?start=0&end=10",
        "/api/s/billing-rounding/replaced/31",
        "/static/viewer.js",
        "/static/viewer.css",
        "/static/favicon.svg",
    ],
)
def test_every_route_answers_with_the_security_headers(app: ViewerApp, target: str) -> None:
    response = get(app, target)
    assert response.status == 200, text(response)
    assert response.headers["Content-Security-Policy"] == CSP
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["X-Frame-Options"] == "DENY"


def test_the_policy_allows_no_inline_script_and_no_other_origin() -> None:
    directives = dict(part.strip().split(" ", 1) for part in CSP.split(";"))
    assert directives["script-src"] == "'self'"
    assert directives["default-src"] == "'none'"
    assert "unsafe-inline" not in CSP and "http" not in CSP


def parsed(body: str) -> list[tuple[str, dict[str, str | None]]]:
    return parse_tags(body)


@pytest.mark.parametrize(
    "target", ["/", "/search?q=script", "/s/billing-rounding", "HOSTILE", "HOSTILE?view=surface"]
)
def test_pages_carry_no_inline_script_style_or_handler(app: ViewerApp, target: str) -> None:
    target = target.replace("HOSTILE", session_path(HOSTILE_ID))
    tags = parsed(text(get(app, target)))
    scripts = [attrs for tag, attrs in tags if tag == "script"]
    assert scripts == [{"src": "/static/viewer.js", "defer": None}]
    assert not any(tag in ("style", "img", "iframe", "svg", "object", "embed") for tag, _ in tags)
    for tag, attrs in tags:
        assert not any(name.startswith("on") or name == "style" for name in attrs), (tag, attrs)
        for name in ("href", "src", "action"):
            value = (attrs.get(name) or "").lower().replace(" ", "")
            assert not value.startswith(("javascript:", "data:", "vbscript:")), (tag, attrs)


def test_a_foreign_host_is_refused_before_anything_is_read(app: ViewerApp) -> None:
    for host in ("evil.example:8765", "127.0.0.1:9999", "localhost.evil.example:8765", ""):
        response = get(app, "/s/billing-rounding", {"host": host})
        assert response.status == 403
        assert "SESSION_QUERY_FORBIDDEN" in text(response)
        assert "billing" not in text(response).split("SESSION_QUERY_FORBIDDEN")[0]
    assert get(app, "/", {}).status == 403  # no Host at all


@pytest.mark.parametrize("host", ["127.0.0.1:8765", "localhost:8765", "[::1]:8765"])
def test_the_loopback_names_of_the_bound_port_are_accepted(app: ViewerApp, host: str) -> None:
    assert get(app, "/", {"host": host}).status == 200


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_only_reads_are_accepted(app: ViewerApp, method: str) -> None:
    response = app.handle(method, "/s/billing-rounding", HOST)
    assert response.status == 405
    assert "SESSION_QUERY_READ_ONLY" in text(response)


def test_a_non_loopback_bind_needs_the_token_then_keeps_it_in_a_cookie(app: ViewerApp) -> None:
    guard = Guard.for_bind("192.0.2.10", PORT)
    assert guard.token and guard.url() == f"http://192.0.2.10:{PORT}/?token={guard.token}"
    remote = ViewerApp(app._routes.catalog, guard)
    host = {"host": f"192.0.2.10:{PORT}"}
    assert remote.handle("GET", "/", host).status == 403
    assert remote.handle("GET", "/?token=wrong", host).status == 403
    first = remote.handle("GET", f"/s/billing-rounding?token={guard.token}&view=surface", host)
    assert first.status == 303
    assert first.headers["Location"] == "/s/billing-rounding?view=surface"
    cookie = first.headers["Set-Cookie"]
    assert cookie.startswith(f"{TOKEN_COOKIE}={guard.token};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    later = remote.handle("GET", "/", {**host, "cookie": cookie.split(";")[0]})
    assert later.status == 200
    assert remote.handle("GET", "/", {"host": f"127.0.0.1:{PORT}"}).status == 403


def test_a_wildcard_bind_accepts_any_host_but_needs_the_token(app: ViewerApp) -> None:
    guard = Guard.for_bind("0.0.0.0", PORT)
    remote = ViewerApp(app._routes.catalog, guard)
    assert remote.handle("GET", "/", {"host": "myhost:8765"}).status == 403
    assert remote.handle("GET", f"/?token={guard.token}", {"host": "myhost:8765"}).status == 303


@pytest.mark.parametrize(
    ("target", "status", "code"),
    [
        ("/nowhere", 404, "SESSION_QUERY_NO_SUCH_PAGE"),
        ("/s/no-such-session", 404, "SESSION_QUERY_SESSION_NOT_FOUND"),
        ("/s/billing-rounding/9999", 404, "SESSION_QUERY_EVENT_NOT_FOUND"),
        ("/s/billing-rounding/x1", 404, "SESSION_QUERY_NO_SUCH_PAGE"),
        ("/s/billing-rounding?view=sideways", 400, "SESSION_QUERY_BAD_REQUEST"),
        ("/?page=0", 400, "SESSION_QUERY_BAD_REQUEST"),
        ("/?from=2025-02-30", 400, "SESSION_QUERY_BAD_REQUEST"),
        ("/search?q=x&mode=fuzzy", 400, "SESSION_QUERY_BAD_REQUEST"),
        ("/search?q=x&cursor=forged", 400, "SESSION_QUERY_INVALID_CURSOR"),
        ("/api/s/no-such-session/state", 404, "SESSION_QUERY_SESSION_NOT_FOUND"),
    ],
)
def test_failures_are_one_typed_line_never_a_traceback(
    app: ViewerApp, target: str, status: int, code: str
) -> None:
    response = get(app, target)
    body = text(response)
    assert response.status == status
    assert code in body
    assert "Traceback" not in body and 'File "' not in body
    if target.startswith("/api/"):
        assert json.loads(body)["error"]["code"] == code


def test_a_session_named_by_the_start_of_its_id_is_redirected(app: ViewerApp) -> None:
    moved = get(app, "/s/billing-rounding-sc/lineage?x=1")
    assert moved.status == 302
    assert moved.headers["Location"] == "/s/billing-rounding-scan/lineage?x=1"
    assert get(app, "/api/s/dashboard-w/state").headers["Location"] == (
        "/api/s/dashboard-websocket/state"
    )
    ambiguous = get(app, "/s/billing-rounding-b")  # -bankers only: unique
    assert ambiguous.status == 302
    response = get(app, "/s/dashboard")
    assert response.status == 400 and "is the start of 2 session ids" in text(response)


def test_the_sessions_page_filters_and_pages(app: ViewerApp) -> None:
    everything = text(get(app, "/"))
    assert "8 sessions" in everything
    roots = text(get(app, "/?lineage=roots"))
    assert "billing-rounding-scan" not in roots and "5 sessions" in roots
    children = text(get(app, "/?lineage=children"))
    assert "3 sessions" in children and 'data-id="billing-rounding-scan"' in children
    workspace = text(get(app, "/?cwd=/home/dev/src/web-dashboard"))
    assert "2 sessions" in workspace
    assert "0 sessions" in text(get(app, "/?to=2020-01-01"))
    assert "No session matches" in text(get(app, "/?avail=live"))


def test_a_session_page_shows_a_window_around_the_target_and_loads_the_rest(
    app: ViewerApp,
) -> None:
    body = text(get(app, session_path(LONG_ID, "/900")))
    seqs = [int(s) for s in re.findall(r'<article id="seq-(\d+)"', body)]
    assert 900 in seqs and len(seqs) == FIRST_WINDOW and seqs == sorted(seqs)
    assert 'class="load earlier"' in body and 'class="load later"' in body
    start, end = seqs[-1] + 1, seqs[-1] + 151
    fragment = text(
        get(
            app,
            session_path(LONG_ID, f"/window?start={start}&end={end}").replace("/s/", "/api/s/", 1),
        )
    )
    more = [int(s) for s in re.findall(r'<article id="seq-(\d+)"', fragment)]
    assert more == list(range(start, min(end, LONG_EVENTS)))


def test_an_incomplete_lineage_is_marked(app: ViewerApp) -> None:
    body = text(get(app, f"/s/{ORPHAN_ID}/lineage"))
    assert "Lineage incomplete" in body and "gone-parent" in body


def test_the_surface_view_shows_only_current_events_in_surface_order(app: ViewerApp) -> None:
    body = text(get(app, "/s/billing-rounding?view=surface"))
    seqs = [int(s) for s in re.findall(r'<article id="seq-(\d+)"', body)]
    assert 31 in seqs and 1 not in seqs and 4 not in seqs  # summary; shadowed; log-only
    full = text(get(app, "/s/billing-rounding"))
    assert 'id="seq-1" class="ev kind-user surface-shadowed' in full
    assert "replaced by" in full


def test_a_permalink_to_a_shadowed_event_opens_the_full_log(app: ViewerApp) -> None:
    body = text(get(app, "/s/billing-rounding/8?view=surface"))
    assert 'data-view="log"' in body and 'id="seq-8"' in body


def test_what_a_summary_replaced_comes_from_trace_event(app: ViewerApp) -> None:
    fragment = text(get(app, "/api/s/billing-rounding/replaced/31"))
    articles = [attrs for tag, attrs in parsed(fragment) if tag == "article"]
    trace = app._routes.catalog.query.trace_event("billing-rounding", 31)
    assert [int(a["data-seq"] or -1) for a in articles] == list(trace.replaced_event_seqs)
    assert "test_invoice_total_rounding fails about once" in fragment
    assert 'id="seq-' not in fragment  # copies carry no anchors of their own


def test_a_search_hit_links_to_its_event_with_the_query(app: ViewerApp) -> None:
    body = text(get(app, "/search?q=heartbeat"))
    found = re.search(r'/s/dashboard-websocket/(\d+)\?q=heartbeat&amp;mode=relevance"', body)
    assert found is not None
    seq = found.group(1)
    page = text(get(app, f"/s/dashboard-websocket/{seq}?q=heartbeat&mode=relevance"))
    assert 'data-hits="' in page and f'data-target="{seq}"' in page


def test_a_corrected_word_is_said_and_highlighted(app: ViewerApp) -> None:
    body = text(get(app, "/search?q=heartbeet"))
    assert "Searched with <del>heartbeet</del> → <strong>heartbeat</strong>" in body
    assert 'data-q="heartbeet heartbeat"' in body and "/s/dashboard-websocket/" in body


def test_polling_sees_appended_events(app: ViewerApp, tmp_path: Path) -> None:
    state = json.loads(text(get(app, "/api/s/billing-rounding/state")))
    assert state["events"] == 47
    stamp = json.loads(text(get(app, "/api/stamp")))["stamp"]
    assert isinstance(stamp, str) and stamp


def test_titles_not_read_in_time_are_served_later(app: ViewerApp) -> None:
    answer = json.loads(text(get(app, "/api/titles?id=billing-rounding&id=dashboard-websocket")))
    assert answer["titles"] == {
        "billing-rounding": "Fix flaky invoice rounding test",
        "dashboard-websocket": "Debug websocket reconnect loop",
    }


def test_the_raw_event_is_json_not_html(app: ViewerApp) -> None:
    response = get(app, session_path(HOSTILE_ID, "/1/raw"))
    assert response.content_type.startswith("application/json")
    assert json.loads(text(response))["data"]["content"][0]["text"].startswith("<script>")


def test_the_export_route_is_a_download(app: ViewerApp) -> None:
    response = get(app, session_path(HOSTILE_ID, "/export"))
    disposition = response.headers["Content-Disposition"]
    assert disposition.startswith('attachment; filename="') and '"<' not in disposition
    assert "<script>window.__pwned" not in text(response)


class _OneArchived:
    """A persistence (our own protocol) whose listing marks one session as archived."""

    def __init__(self, inner: JsonlPersistence, archived: str) -> None:
        self._inner, self._archived = inner, archived

    def list(self) -> list[PersistedSession]:
        return [
            replace(entry, archived=entry.header.id == self._archived)
            for entry in self._inner.list()
        ]

    def stat(self, session_id: str) -> PersistedSession | None:
        return self._inner.stat(session_id)

    def open_read(self, session_id: str) -> ReadHandle:
        return self._inner.open_read(session_id)


def test_archived_sessions_are_marked_and_filtered(tmp_path: Path) -> None:
    persistence = _OneArchived(JsonlPersistence(make_history(tmp_path)), "dashboard-dark-mode")
    with SessionQuery(persistence=persistence) as query:
        archive = ViewerApp(Catalog(query, persistence), Guard.for_bind("127.0.0.1", PORT))
        only = text(get(archive, "/?archived=only"))
        assert "1 session" in only and 'data-id="dashboard-dark-mode"' in only
        assert 'class="badge archived"' in only
        hidden = text(get(archive, "/?archived=hide"))
        assert "7 sessions" in hidden and 'data-id="dashboard-dark-mode"' not in hidden
