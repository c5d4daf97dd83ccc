"""Session file names: injective (also under case-folding), safe, bounded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionquery.model.header import MAX_ID_LENGTH
from sessionquery.persistence._names import (
    MAX_NAME_BYTES,
    SUFFIX,
    is_session_file_name,
    session_file_name,
)

# Valid ids: no control characters or surrogates (SPEC §3.1).
ids = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=MAX_ID_LENGTH
)
short_ids = st.text(alphabet=st.sampled_from("aAbB.~-_/ é\u00c9\u212a0"), min_size=1, max_size=12)

_ALLOWED = set("abcdefghijklmnopqrstuvwxyz0123456789._~-")


def _check_safe(name: str) -> None:
    assert set(name) <= _ALLOWED
    assert len(name.encode("utf-8")) <= MAX_NAME_BYTES
    assert name not in (".", "..")
    assert not name.startswith(".")
    assert name.endswith(SUFFIX)
    assert is_session_file_name(name)


@given(ids, ids)
def test_distinct_ids_get_distinct_names_even_when_casefolded(first: str, second: str) -> None:
    if first == second:
        return
    a, b = session_file_name(first), session_file_name(second)
    assert a != b
    assert a.casefold() != b.casefold()


@given(st.lists(short_ids, min_size=2, max_size=30, unique=True))
def test_names_of_similar_short_ids_never_collide(values: list[str]) -> None:
    names = {session_file_name(value).casefold() for value in values}
    assert len(names) == len(values)


@given(ids)
def test_every_name_is_safe_and_bounded(session_id: str) -> None:
    _check_safe(session_file_name(session_id))


@pytest.mark.parametrize(
    "session_id",
    [".", "..", "../x", "a/b", "/etc/passwd", "..\\..\\x", "~", "~7e", "A", "a", "x" * 512],
)
def test_hostile_ids_name_a_direct_child_of_the_directory(tmp_path: Path, session_id: str) -> None:
    name = session_file_name(session_id)
    _check_safe(name)
    path = os.path.normpath(os.path.join(tmp_path, name))
    assert os.path.dirname(path) == str(tmp_path)


def test_uppercase_and_lowercase_ids_get_different_names() -> None:
    assert session_file_name("Session").casefold() != session_file_name("session").casefold()


def test_long_ids_are_hashed_and_keep_a_readable_prefix() -> None:
    long_id = "session-" + "x" * 500
    name = session_file_name(long_id)
    assert "~~" in name
    assert name.startswith("session-xxx")
    assert session_file_name(long_id[:-1] + "y") != name


def test_store_internal_and_foreign_names_are_not_session_files() -> None:
    for name in (".change-token", ".creating-abc", "notes.txt", ".jsonl", ".x.jsonl"):
        assert not is_session_file_name(name)
