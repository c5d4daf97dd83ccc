"""The SQL pieces of PostgreSQL search (sessionquery.search.postgres.sql)."""

from __future__ import annotations

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from postgres_support import PostgresServer
from sessionquery.search.postgres.sql import holds

# PostgreSQL text holds no NUL; the rest of Unicode, multibyte characters included
_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_TEXT, pattern=_TEXT.filter(bool), at=st.integers(0, 20))
def test_a_text_holds_a_pattern_exactly_where_python_finds_it(
    postgres_server: PostgresServer, text: str, pattern: str, at: int
) -> None:
    placed = text[:at] + pattern + text[at:]
    with psycopg.connect(postgres_server.admin_dsn) as conn:
        found = conn.execute(
            f"SELECT {holds('%(t)s::text', '%(p)s::text')}, {holds('%(u)s::text', '%(p)s::text')}",
            {"t": text, "p": pattern, "u": placed},
        ).fetchone()
    assert found == (pattern in text, True)
