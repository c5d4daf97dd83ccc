"""The viewer's own failures: a status and a one-line ``CODE: message``.

The library's :class:`~sessionquery.errors.SessionQueryError` codes are answered as they are;
these codes are the viewer's own, for requests that never reach the library.
"""

from __future__ import annotations

__all__ = ["BAD_REQUEST", "FORBIDDEN", "INTERNAL", "NO_SUCH_PAGE", "READ_ONLY", "WebError"]

FORBIDDEN = "SESSION_QUERY_FORBIDDEN"
"""A request with a foreign ``Host`` or without the token (403)."""
NO_SUCH_PAGE = "SESSION_QUERY_NO_SUCH_PAGE"
"""A path the viewer has no page for (404)."""
BAD_REQUEST = "SESSION_QUERY_BAD_REQUEST"
"""A parameter that cannot be used (400); the message names it."""
READ_ONLY = "SESSION_QUERY_READ_ONLY"
"""A method other than GET or HEAD (405): the viewer changes nothing."""
INTERNAL = "SESSION_QUERY_INTERNAL"
"""Something unexpected failed (500); details are in the server log, never in the page."""


class WebError(Exception):
    """A request the viewer cannot answer: its HTTP status, code and message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
