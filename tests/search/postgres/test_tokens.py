"""Tokens of the PostgreSQL index: what they can hold."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sessionquery.search.postgres.tokens import normal_form, tokens

_RESERVED_BY_COPY = frozenset("\t\n\r\\")


@given(text=st.text() | st.text(alphabet="ab\t\n\r\\ \x00é"))
def test_no_token_holds_a_character_that_copy_text_escapes(text: str) -> None:
    words = tokens(text)
    assert not _RESERVED_BY_COPY.intersection(normal_form(words))
    assert all(words)
