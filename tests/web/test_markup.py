"""Escaping by construction: text is always text, URLs are filtered, markup is explicit."""

from __future__ import annotations

import html

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionquery.web.markup import Markup, el, escape, join, safe_url, visible


@given(st.text())
def test_any_text_is_escaped_into_inert_html(text: str) -> None:
    out = escape(text)
    assert "<" not in out and ">" not in out and '"' not in out and "'" not in out
    assert html.unescape(out) == visible(text)


@given(st.text(), st.text())
def test_attribute_values_and_children_cannot_break_out(value: str, child: str) -> None:
    out = el("span", {"title": value, "data-x": value}, child)
    assert out.startswith('<span title="') and out.endswith("</span>")
    assert out.count("<") == 2 and out.count('"') == 4


def test_markup_passes_through_and_lists_are_flattened() -> None:
    inner = el("b", None, "<x>")
    assert join("a", [inner, None, ["c", 1]]) == "a<b>&lt;x&gt;</b>c1"
    assert isinstance(join(), Markup)


def test_boolean_attributes_and_void_elements() -> None:
    assert el("input", {"readonly": True, "hidden": False, "value": None}) == "<input readonly>"


@pytest.mark.parametrize("name", ["on click", 'x"y', "", "1a", "a>b"])
def test_an_unsafe_attribute_name_is_refused(name: str) -> None:
    with pytest.raises(ValueError):
        el("span", {name: "v"})


@pytest.mark.parametrize(
    ("url", "kept"),
    [
        ("/s/x", True),
        ("#seq-4", True),
        ("?q=a", True),
        ("https://example.org/a?b", True),
        ("http://example.org", True),
        ("mailto:a@example.org", True),
        ("docs/page.html", True),
        ("javascript:alert(1)", False),
        ("JaVaScRiPt:alert(1)", False),
        ("java\tscript:alert(1)", False),
        (" javascript:alert(1)", False),
        ("\x01javascript:alert(1)", False),
        ("data:text/html,<script>", False),
        ("vbscript:x", False),
        ("file:///etc/passwd", False),
    ],
)
def test_only_relative_and_safe_scheme_urls_survive(url: str, kept: bool) -> None:
    assert (safe_url(url) == url) is kept
    assert (el("a", {"href": url}) == el("a", {"href": "#"})) is not kept


@pytest.mark.slow
def test_control_and_bidi_characters_are_shown_as_escapes() -> None:
    assert visible("a\x1b[2Jb\u202ec\ud800\tz\n") == "a\\x1b[2Jb\\u202ec\\ud800\tz\n"
