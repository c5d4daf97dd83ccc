"""The Markdown subset of assistant messages: rendered, safe, bounded."""

from __future__ import annotations

import time

from hypothesis import given
from hypothesis import strategies as st

from sessionquery.web.markdown import INLINE_LINE_MAX, render_markdown
from web_support import parse_tags


def tags(text: str) -> list[tuple[str, dict[str, str | None]]]:
    return parse_tags(render_markdown(text))


ALLOWED = {
    "p",
    "br",
    "code",
    "pre",
    "a",
    "strong",
    "em",
    "ul",
    "ol",
    "li",
    "blockquote",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
}


def test_the_common_subset_renders() -> None:
    out = render_markdown(
        "# Title\n\nSome **bold**, *em* and `code`.\n\n- one\n- two\n\n3. three\n\n"
        "```py\nx = 1 < 2\n```\n> quoted\n\n---\n[link](https://example.org) https://a.example/b"
    )
    assert "<h3>Title</h3>" in out and "<strong>bold</strong>" in out and "<em>em</em>" in out
    assert "<ul><li>one</li><li>two</li></ul>" in out and '<ol start="3">' in out
    assert '<pre class="code" data-lang="py"><code>x = 1 &lt; 2</code></pre>' in out
    assert "<blockquote><p>quoted</p></blockquote>" in out and "<hr>" in out
    assert out.count('rel="noopener noreferrer nofollow"') == 2


@given(st.text(alphabet=st.sampled_from(list("<>\"'`*_[]()#-!:/ \njavascript=onerrorimg"))))
def test_no_input_produces_an_element_or_attribute_outside_the_subset(text: str) -> None:
    for tag, attrs in tags(text):
        assert tag in ALLOWED, (tag, text)
        assert set(attrs) <= {"href", "rel", "class", "data-lang", "start"}, attrs
        href = (attrs.get("href") or "").lower()
        assert not href.replace(" ", "").startswith(("javascript:", "data:")), text


def test_raw_html_is_text() -> None:
    out = render_markdown("<script>alert(1)</script> <img src=x onerror=alert(1)>")
    assert [tag for tag, _ in tags("<script>alert(1)</script>")] == ["p"]
    assert "&lt;script&gt;" in out


def test_a_javascript_link_becomes_inert() -> None:
    ((_, attrs),) = [t for t in tags("[x](javascript:alert(1))") if t[0] == "a"]
    assert attrs["href"] == "#"


def test_hostile_long_lines_render_in_bounded_time() -> None:
    began = time.monotonic()
    render_markdown(("*a`[" * (INLINE_LINE_MAX // 4) + "\n") * 40)
    render_markdown("x" * 3_000_000)
    assert time.monotonic() - began < 30  # a hang or blow-up guard, not a timing claim
