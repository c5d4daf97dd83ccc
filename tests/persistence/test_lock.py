"""Write ownership: the in-process registry and the OS lock."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sessionquery.errors import PersistenceOwned
from sessionquery.persistence import _lock


def test_second_claim_of_one_path_is_refused_until_released(tmp_path: Path) -> None:
    key = str(tmp_path / "x.jsonl")
    _lock.claim(key, "x")
    try:
        with pytest.raises(PersistenceOwned):
            _lock.claim(key, "x")
    finally:
        _lock.release(key)
    _lock.claim(key, "x")
    _lock.release(key)
    _lock.release(key)  # idempotent


def test_os_lock_refuses_a_second_open_file_description(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"")
    first = os.open(path, os.O_RDWR)
    second = os.open(path, os.O_RDWR)
    try:
        _lock.lock_file(first, "x")
        with pytest.raises(PersistenceOwned):
            _lock.lock_file(second, "x")
        os.close(first)
        first = -1
        _lock.lock_file(second, "x")  # closing the owner releases the lock
    finally:
        if first != -1:
            os.close(first)
        os.close(second)
