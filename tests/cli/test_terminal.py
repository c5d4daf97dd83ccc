"""Terminal-safe text: controls and bidi overrides shown escaped, cuts within the width."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sessionquery.cli import _terminal as term


def test_safe_escapes_controls_and_bidi_overrides_but_keeps_text() -> None:
    assert term.safe("ok\x1b[31mred\x9b\u202e\ud800") == "ok\\x1b[31mred\\x9b\\u202e\\ud800"
    assert term.safe("tab\there") == "tab here"
    assert term.safe("naïve 日本") == "naïve 日本"


@settings(max_examples=50)
@given(st.text(), st.integers(min_value=2, max_value=120))
def test_cut_never_exceeds_the_width_and_marks_a_cut(text: str, width: int) -> None:
    clean = term.safe(text)
    for cut in (term.cut(clean, width), term.cut_left(clean, width)):
        assert term.display_width(cut) <= width
        assert cut == clean or "…" in cut
