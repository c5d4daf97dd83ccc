"""HTML built by construction: every string is escaped unless it is already :class:`Markup`.

The viewer never formats HTML with f-strings over data. Pages are built from :func:`el`
(an element with attributes and children) and :func:`join`; a plain ``str`` anywhere in that
tree is text and is escaped, attribute values included. Only this module and the static
assets produce trusted markup. Invariants:

* ``Markup`` values come only from :func:`el`, :func:`join`, :func:`raw` (for literal
  constants of our own, never for data) and :func:`escape`;
* an attribute name is one of a fixed set of safe characters, and attributes whose value is a
  URL (``href``, ``src``, ``action``) pass through :func:`safe_url`, which only lets
  relative links, ``#anchors`` and ``http(s):`` / ``mailto:`` through; anything else
  (``javascript:``, ``data:``, ``vbscript:``, obfuscated schemes) becomes ``#``;
* control characters that HTML cannot carry are written as visible escapes (``\\x1b``), so
  session text can never smuggle a raw ``\\0`` or a bidirectional override into a page.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping

__all__ = ["Markup", "el", "escape", "join", "raw", "safe_url", "visible"]


class Markup(str):
    """A string of trusted HTML (inserted as is)."""

    __slots__ = ()


_INVISIBLE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_VOID = frozenset({"br", "hr", "img", "input", "link", "meta", "wbr", "col", "source"})
_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_URL_ATTRIBUTES = frozenset({"href", "src", "action", "formaction", "cite", "poster"})
_SAFE_SCHEMES = ("http:", "https:", "mailto:")


def _visible_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with control, bidirectional-override and lone-surrogate characters shown as
    escapes (tabs and newlines are kept)."""
    return _INVISIBLE.sub(_visible_char, text)


def escape(value: object) -> Markup:
    """``value`` as HTML text: markup passes through, anything else is escaped."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape(visible(str(value)), quote=True))


def raw(literal: str) -> Markup:
    """Trust ``literal`` as HTML. Only for constants written in this package, never data."""
    return Markup(literal)


def safe_url(url: str) -> str:
    """``url`` if it is relative or uses a safe scheme, else ``"#"``.

    Browsers ignore ASCII whitespace and control characters inside a scheme
    (``java\\tscript:``), so those are removed before the scheme is looked at.
    """
    probe = re.sub(r"[\x00-\x20\x7f]", "", url).lower()
    if probe.startswith(("/", "#", "?", "./", "../")) and not probe.startswith("//"):
        return url
    scheme = re.match(r"^[a-z][a-z0-9+.\-]*:", probe)
    if scheme is None:
        return url if ":" not in probe.split("/", 1)[0] else "#"
    return url if scheme.group() in _SAFE_SCHEMES else "#"


def _children(children: Iterable[object]) -> Iterable[Markup]:
    for child in children:
        if child is None or child is False:
            continue
        if isinstance(child, str | int):
            yield escape(child)
        else:
            assert isinstance(child, Iterable), f"not an HTML child: {type(child).__name__}"
            yield from _children(child)


def join(*children: object) -> Markup:
    """The children (text, markup, lists of them) concatenated as markup."""
    return Markup("".join(_children(children)))


def el(tag: str, attrs: Mapping[str, object] | None = None, *children: object) -> Markup:
    """One element: ``el("a", {"href": url, "class": "x"}, "text")``.

    Attribute values are escaped (``True`` writes the bare attribute, ``None``/``False``
    omit it); URL attributes are filtered by :func:`safe_url`.
    """
    if not _NAME.match(tag):
        raise ValueError(f"not an element name: {tag!r}")
    parts = [f"<{tag}"]
    for name, value in (attrs or {}).items():
        if value is None or value is False:
            continue
        if not _NAME.match(name):
            raise ValueError(f"not an attribute name: {name!r}")
        if value is True:
            parts.append(f" {name}")
            continue
        text = str(value)
        if name in _URL_ATTRIBUTES:
            text = safe_url(text)
        parts.append(f' {name}="{escape(text)}"')
    parts.append(">")
    if tag in _VOID:
        return Markup("".join(parts))
    return Markup("".join(parts) + join(children) + f"</{tag}>")
