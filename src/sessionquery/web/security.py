"""Who may talk to the viewer: the Host check, the token, and the headers of every answer.

Invariants:

* a request whose ``Host`` header is not one of :attr:`Guard.hosts` is refused (DNS
  rebinding: a page on another site that resolves its own name to 127.0.0.1 still sends its
  own name as ``Host``); a bind to a wildcard address (``0.0.0.0``, ``::``) cannot know its
  names, so it accepts any ``Host`` and relies on the token;
* a bind that is not loopback always needs the token: given once as ``?token=…`` (the URL
  printed at start), it is kept in an ``HttpOnly``, ``SameSite=Strict`` cookie; tokens are
  compared in constant time;
* every answer carries :data:`SECURITY_HEADERS`: a Content-Security-Policy that allows only
  the viewer's own script and stylesheet (no inline script, no other origin), no framing,
  no sniffing, no referrer.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie

__all__ = [
    "CSP",
    "SECURITY_HEADERS",
    "TOKEN_COOKIE",
    "Guard",
    "is_loopback",
]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
"""The viewer's Content-Security-Policy: its own files only, no inline script or style."""

SECURITY_HEADERS: Mapping[str, str] = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}

TOKEN_COOKIE = "sessionquery_token"


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def _with_port(host: str, port: int) -> str:
    name = host.strip("[]")
    return f"[{name}]:{port}" if ":" in name else f"{name}:{port}"


@dataclass(frozen=True, slots=True)
class Guard:
    """The access rules of one running viewer.

    Attributes:
        host: the address it is bound to.
        port: its port.
        token: the token requests must carry, or ``None`` (loopback binds).
    """

    host: str
    port: int
    token: str | None
    hosts: frozenset[str] = field(default=frozenset())

    @classmethod
    def for_bind(cls, host: str, port: int, *, token: str | None = None) -> Guard:
        """The rules for a bind: loopback needs no token, anything else gets one."""
        if not is_loopback(host):
            token = token or secrets.token_urlsafe(24)
        names = {host}
        if is_loopback(host):
            names |= {"localhost", "127.0.0.1", "::1"}
        hosts = frozenset(_with_port(name, port) for name in names)
        if port == 80:  # browsers leave the default port out of Host
            hosts |= {f"[{name}]" if ":" in name else name for name in names}
        return cls(host, port, token, hosts)

    @property
    def any_host(self) -> bool:
        """A wildcard bind, which accepts every ``Host`` (and needs the token)."""
        return _wildcard(self.host)

    def host_allowed(self, value: str | None) -> bool:
        """Whether a request's ``Host`` header names this viewer."""
        if value is None:
            return False
        return self.any_host or value.strip().lower() in self.hosts

    def token_ok(self, given: str | None, cookie_header: str | None) -> bool:
        """Whether the request carries the token (as a parameter or in the cookie)."""
        if self.token is None:
            return True
        candidates = [given] if given else []
        if cookie_header:
            try:
                jar = SimpleCookie(cookie_header)
            except CookieError:
                jar = SimpleCookie()
            if TOKEN_COOKIE in jar:
                candidates.append(jar[TOKEN_COOKIE].value)
        return any(hmac.compare_digest(c.encode(), self.token.encode()) for c in candidates)

    def cookie(self) -> str:
        """The ``Set-Cookie`` value that keeps the token for later requests."""
        assert self.token is not None
        return f"{TOKEN_COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"

    def url(self) -> str:
        """The URL to print at start (with the token when one is needed)."""
        shown = self.host
        if self.any_host:
            shown = "127.0.0.1" if self.host == "0.0.0.0" else "::1"
        base = f"http://{_with_port(shown, self.port)}/"
        return f"{base}?token={self.token}" if self.token else base
