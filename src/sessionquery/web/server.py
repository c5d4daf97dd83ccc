"""The viewer's HTTP server: the standard library's threading server over :class:`ViewerApp`.

Why the standard library (docs/viewer.md has the longer answer): the service is synchronous
and thread-safe, the pages are rendered on the server by our own escaping builder, and the
only traffic is one person's browser on this machine, so a thread per connection is all the
concurrency needed; an ASGI stack would add two dependencies and run every call in a worker
thread anyway.

Invariants: the server binds only the address it is given (loopback by default); each
request is answered by :meth:`ViewerApp.handle`, which never raises, and sent inside
:meth:`ViewerApp.serving` (a background listing that falls due waits for it); request lines and
headers are bounded by ``http.server``'s own limits; access logging is off (the browser's
polling would flood the terminal) and failures are logged by :mod:`sessionquery.web.app`.
"""

from __future__ import annotations

import socket
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

from sessionquery.web.app import Response, ViewerApp

__all__ = ["ViewerServer"]


class _Handler(BaseHTTPRequestHandler):
    server: ViewerServer
    protocol_version = "HTTP/1.1"
    server_version = "sessionquery"
    sys_version = ""
    methods: ClassVar[tuple[str, ...]] = (
        "GET",
        "HEAD",
        "POST",
        "PUT",
        "DELETE",
        "PATCH",
        "OPTIONS",
    )

    def _answer(self) -> None:
        headers = {name.lower(): value for name, value in self.headers.items()}
        length = (
            int(headers.get("content-length", "0") or 0)
            if headers.get("content-length", "0").isdigit()
            else 0
        )
        if length:
            self.rfile.read(min(length, 1 << 20))  # drain a body we will not use
        app = self.server.app
        if app is None:
            self._send(Response(503, b"starting", "text/plain; charset=utf-8"))
            return
        with app.serving():  # a listing that falls due waits until the answer is sent
            self._send(app.handle(self.command, self.path, headers))

    def _send(self, response: Response) -> None:
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _answer

    def log_message(self, format: str, *args: Any) -> None:
        del format, args  # no access log


class ViewerServer(ThreadingHTTPServer):
    """A threading HTTP server answering with one :class:`ViewerApp`.

    Args:
        host: the address to bind (an IPv6 address is bound as IPv6).
        port: the port (0: any free port; :attr:`port` tells which).
        app: what answers (may be set later, before :meth:`serve_forever`).
    """

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host: str, port: int, app: ViewerApp | None) -> None:
        self.app = app
        if ":" in host.strip("[]"):
            self.address_family = socket.AF_INET6
        super().__init__((host.strip("[]"), port), _Handler)

    @property
    def port(self) -> int:
        """The port actually bound."""
        return int(self.server_address[1])
