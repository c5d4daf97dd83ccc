"""The viewer's routes: one request in, one :class:`Response` out, no sockets involved.

=========================================  ===============================================
``GET /``                                  sessions (filters, paging)
``GET /search?q=…&mode=…&cwd=…``           search results
``GET /s/<id>[?view=surface&q=…]``         a session as a conversation
``GET /s/<id>/<seq>``                      the same, around one event (permalink)
``GET /s/<id>/<seq>/raw``                  one event's full JSON
``GET /s/<id>/lineage``                    the session's lineage tree
``GET /s/<id>/export``                     the self-contained HTML export (a download)
``GET /api/s/<id>/window?view=&start=&end=``  rendered events (the page loads more)
``GET /api/s/<id>/replaced/<seq>``         what a replace event replaced (``trace_event``)
``GET /api/s/<id>/state``, ``/api/stamp``  change tokens the pages poll
``GET /api/titles?id=…``                   titles not read when a page was made
``GET /static/<file>``                     the script, the stylesheet, the icon
=========================================  ===============================================

Invariants: only ``GET`` and ``HEAD`` are served (anything else is ``405``): no request
changes anything. The Host check and the token (:mod:`sessionquery.web.security`) come
before routing. A failure is answered with its one-line ``CODE: message`` (an HTML page, or
``{"error": …}`` for ``/api/``), never with a traceback; an unexpected exception is logged
by type only and answered ``SESSION_QUERY_INTERNAL``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from importlib import resources
from urllib.parse import parse_qs, quote, unquote, urlsplit

from sessionquery.app import AmbiguousId
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.model import thaw
from sessionquery.web.catalog import Catalog
from sessionquery.web.failures import (
    BAD_REQUEST,
    FORBIDDEN,
    INTERNAL,
    NO_SUCH_PAGE,
    READ_ONLY,
    WebError,
)
from sessionquery.web.markup import Markup
from sessionquery.web.pages import error_page
from sessionquery.web.routes import Request, Routes
from sessionquery.web.security import SECURITY_HEADERS, Guard

__all__ = ["Response", "ViewerApp", "static_file"]

logger = logging.getLogger(__name__)


_STATUS: dict[object, int] = {
    ErrorCode.SESSION_NOT_FOUND: 404,
    ErrorCode.EVENT_NOT_FOUND: 404,
    ErrorCode.INVALID_QUERY: 400,
    ErrorCode.INVALID_FILTER: 400,
    ErrorCode.INVALID_CURSOR: 400,
    ErrorCode.INVALID_LIMIT: 400,
    ErrorCode.STALE_CURSOR: 409,
    ErrorCode.BUSY: 503,
    ErrorCode.INDEX_BUILDING: 503,
}
_STATIC = {
    "viewer.js": "text/javascript; charset=utf-8",
    "viewer.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}


@dataclass(frozen=True, slots=True)
class Response:
    """One HTTP answer."""

    status: int
    body: bytes
    content_type: str = "text/html; charset=utf-8"
    headers: Mapping[str, str] = field(default_factory=dict)


def _html(markup: Markup, status: int = 200) -> Response:
    return Response(status, markup.encode("utf-8"))


def _json(value: object, status: int = 200) -> Response:
    body = json.dumps(value, ensure_ascii=True).encode("ascii")
    return Response(status, body, "application/json")


def static_file(name: str) -> bytes:
    """One of the viewer's bundled assets."""
    return (resources.files("sessionquery.web") / "static" / name).read_bytes()


class ViewerApp:
    """Answers viewer requests over one catalog.

    Args:
        catalog: what the pages read.
        guard: the Host and token rules.
        export: renders the HTML export of one session id (the ``/s/<id>/export`` route).
    """

    def __init__(
        self,
        catalog: Catalog,
        guard: Guard,
        *,
        export: Callable[[str], str] | None = None,
    ) -> None:
        self.guard = guard
        self._routes = Routes(catalog, export=export)

    def serving(self) -> AbstractContextManager[None]:
        """Marks one request being answered and sent (:meth:`Catalog.serving`: background
        listings wait for it)."""
        return self._routes.catalog.serving()

    def handle(self, method: str, target: str, headers: Mapping[str, str]) -> Response:
        """Answer one request (``headers`` keyed by lower-case name)."""
        api = target.startswith("/api/")
        try:
            response = self._checked(method, target, headers)
        except WebError as error:
            response = self._failure(error.status, error.code, error.message, api=api)
        except SessionQueryError as error:
            status = _STATUS.get(error.code, 500)
            response = self._failure(status, error.code.value, error.message, api=api)
        except Exception as error:  # the request's top level: never a traceback
            logger.error("%s %s failed: %s", method, urlsplit(target).path, type(error).__name__)
            response = self._failure(
                500, INTERNAL, "unexpected failure; see the server log", api=api
            )
        merged = {**SECURITY_HEADERS, "Cache-Control": "no-store", **response.headers}
        return Response(response.status, response.body, response.content_type, merged)

    def _failure(self, status: int, code: str, message: str, *, api: bool) -> Response:
        line = " ".join(message.split())
        if api:
            return _json({"error": {"code": code, "message": line}}, status)
        return _html(error_page(code, line), status)

    def _checked(self, method: str, target: str, headers: Mapping[str, str]) -> Response:
        if not self.guard.host_allowed(headers.get("host")):
            raise WebError(
                403,
                FORBIDDEN,
                "this viewer only answers requests addressed to "
                f"{self.guard.url().split('?')[0]} (Host header refused)",
            )
        if method not in ("GET", "HEAD"):
            raise WebError(405, READ_ONLY, f"the viewer is read-only: {method} is not accepted")
        parts = urlsplit(target)
        query = dict(parse_qs(parts.query, keep_blank_values=True))
        given = query.pop("token", [None])[0]
        if not self.guard.token_ok(given, headers.get("cookie")):
            raise WebError(
                403,
                FORBIDDEN,
                "this viewer needs the token printed when it started (open the URL it printed)",
            )
        if given is not None and self.guard.token is not None:
            return Response(
                303,
                b"",
                headers={
                    "Location": _without_token(parts.path, query),
                    "Set-Cookie": self.guard.cookie(),
                },
            )
        segments = [unquote(s) for s in parts.path.split("/")[1:]]
        if len(segments) >= 2 and segments[0] in ("s", "api") and segments[1]:
            moved = self._canonical(segments, parts.query)
            if moved is not None:
                return Response(302, b"", headers={"Location": moved})
        return self._route(segments, Request(query))

    def _canonical(self, segments: list[str], query: str) -> str | None:
        """Where a URL naming a session by the start of its id belongs (``None``: here)."""
        where = 2 if segments[0] == "api" else 1
        if segments[0] == "api" and (len(segments) < 3 or segments[1] != "s"):
            return None
        typed = segments[where]
        try:
            full = self._routes.catalog.resolve(typed)
        except AmbiguousId as error:
            raise WebError(400, BAD_REQUEST, error.message) from None
        except SessionQueryError:
            return None  # not listed (yet): the page reads it, or says it is not found
        if full == typed:
            return None
        moved = [*segments[:where], full, *segments[where + 1 :]]
        path = "/" + "/".join(quote(s, safe="") for s in moved)
        return f"{path}?{query}" if query else path

    def _route(self, segments: list[str], request: Request) -> Response:
        routes = self._routes
        match segments:
            case [""]:
                return _html(routes.sessions(request))
            case ["search"]:
                return _html(routes.search(request))
            case ["static", name] if name in _STATIC:
                return Response(200, static_file(name), _STATIC[name])
            case ["favicon.ico"]:
                return Response(200, static_file("favicon.svg"), _STATIC["favicon.svg"])
            case ["s", session_id]:
                return _html(routes.session(session_id, None, request))
            case ["s", session_id, "lineage"]:
                return _html(routes.lineage(session_id))
            case ["s", session_id, "export"]:
                body, filename = routes.export(session_id)
                disposition = f'attachment; filename="{filename}"'
                return Response(
                    200, body.encode("utf-8"), headers={"Content-Disposition": disposition}
                )
            case ["s", session_id, seq]:
                return _html(routes.session(session_id, _seq(seq), request))
            case ["s", session_id, seq, "raw"]:
                event = routes.raw_event(session_id, _seq(seq))
                body = json.dumps(thaw(event), ensure_ascii=False, indent=2)
                return Response(200, body.encode("utf-8"), "application/json; charset=utf-8")
            case ["api", "stamp"]:
                return _json({"stamp": routes.catalog.stamp()})
            case ["api", "titles"]:
                return _json(routes.titles(request))
            case ["api", "s", session_id, "state"]:
                return _json(routes.state(session_id, request))
            case ["api", "s", session_id, "window"]:
                return _html(routes.window(session_id, request))
            case ["api", "s", session_id, "replaced", seq]:
                return _html(routes.replaced(session_id, _seq(seq)))
        raise WebError(404, NO_SUCH_PAGE, "no page at /" + "/".join(segments))


def _seq(text: str) -> int:
    if not text.isdigit() or len(text) > 12:
        raise WebError(404, NO_SUCH_PAGE, f"not an event number: {text!r}")
    return int(text)


def _without_token(path: str, query: Mapping[str, list[str]]) -> str:
    from urllib.parse import urlencode

    rest = urlencode([(k, v) for k, values in query.items() for v in values])
    return f"{path}?{rest}" if rest else path
