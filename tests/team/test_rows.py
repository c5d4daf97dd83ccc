"""The rows a push writes: ``COPY`` text formatted by a reader process reads back in a real
PostgreSQL as the values it was made from, and a reader's own statistics add up to what
counting its rows one by one gives."""

from __future__ import annotations

from collections import Counter
from typing import Any

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import log, summary
from sessionquery.team.rows import (
    Delta,
    Docs,
    copy_field,
    copy_lines,
    documents,
    index_rows,
    own_docs,
)

# PostgreSQL text holds no NUL and the wire holds no lone surrogate.
_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\x00"))
_ROW = st.tuples(
    st.none() | _TEXT, st.none() | st.booleans(), st.none() | st.integers(-(2**62), 2**62)
)
_SID = "0000000a-0000-4000-8000-000000000000"


def _copied(conn: psycopg.Connection[tuple[Any, ...]], text: str) -> list[tuple[object, ...]]:
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS copied (n serial, t text, b boolean, i bigint)")
    conn.execute("TRUNCATE copied")
    with conn.cursor() as cur, cur.copy("COPY copied (t, b, i) FROM STDIN") as copy:
        copy.write(text)
    return conn.execute("SELECT t, b, i FROM copied ORDER BY n").fetchall()


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(_ROW, max_size=8))
def test_copy_lines_read_back_in_postgresql_as_the_values_they_were_made_from(
    postgres_dsn: str, rows: list[tuple[str | None, bool | None, int | None]]
) -> None:
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        assert _copied(conn, copy_lines(rows)) == rows


def test_copy_field_escapes_what_the_copy_text_format_reserves() -> None:
    assert copy_field("a\\b\tc\nd\re") == "a\\\\b\\tc\\nd\\re"
    assert copy_field("plain") == "plain"
    assert (copy_field(None), copy_field(True), copy_field(False), copy_field(7)) == (
        "\\N",
        "t",
        "f",
        "7",
    )


def _docs() -> Docs:
    events = [
        *log("fix the login test", "the login\ttest\\ fails\non CI", "retry the login"),
        summary(3, "we fixed the login test", 0, 2),
    ]
    return documents(events)


def test_a_readers_own_documents_are_the_rows_and_statistics_of_the_documents_one_by_one() -> None:
    docs = _docs()
    rows = index_rows(_SID, docs)
    own = own_docs(_SID, docs)
    assert own.copy == copy_lines(row for row, _terms in rows)
    assert own.documents == len(rows) > 2
    assert own.tokens == sum(int(row[9]) for row, _terms in rows)
    assert own.terms == Counter(term for _row, terms in rows for term in terms)
    assert own.terms["login"] >= 2


@settings(max_examples=80)
@given(texts=st.lists(_TEXT, min_size=1, max_size=5))
def test_a_readers_own_rows_are_the_copy_text_of_the_rows_whatever_the_text_holds(
    texts: list[str],
) -> None:
    docs = documents(log(*texts))
    assert own_docs(_SID, docs).copy == copy_lines(row for row, _terms in index_rows(_SID, docs))


def test_a_delta_merges_a_readers_counts_with_rows_counted_in_and_out() -> None:
    docs = _docs()
    rows = index_rows(_SID, docs)
    one_by_one, merged = Delta(), Delta()
    for row, terms in rows:
        one_by_one.add(int(row[9]), terms, 1)
    merged.add_own(own_docs(_SID, docs))
    gone, gone_terms = rows[0]
    for delta in (one_by_one, merged):
        delta.add(int(gone[9]), gone_terms, -1)
    assert (merged.documents, merged.tokens) == (one_by_one.documents, one_by_one.tokens)
    assert merged.terms == one_by_one.terms
    assert merged.documents == len(rows) - 1
