"""File-system helpers of the JSONL store: only regular files are opened, never blocking."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sessionquery.persistence import _files


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "s.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(_files.NotRegularFile) as caught:
        _files.open_regular(str(fifo), os.O_RDONLY)  # a blocking open would never return
    assert caught.value.what == "a FIFO"
    with pytest.raises(_files.NotRegularFile):
        _files.open_regular(str(fifo), os.O_RDWR)


def test_a_symlink_is_refused_even_to_a_regular_file(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("{}\n")
    link = tmp_path / "s.jsonl"
    link.symlink_to(target)
    with pytest.raises(_files.NotRegularFile) as caught:
        _files.open_regular(str(link), os.O_RDONLY)
    assert caught.value.what == "a symbolic link"


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(_files.NotRegularFile) as caught:
        _files.open_regular(str(tmp_path), os.O_RDONLY)
    assert caught.value.what == "a directory"


def test_a_missing_file_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        _files.open_regular(str(tmp_path / "missing.jsonl"), os.O_RDONLY)


def test_a_regular_file_opens_and_reads_whole(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"x" * 200_000)
    fd = _files.open_regular(str(path), os.O_RDONLY)
    try:
        assert _files.read_from(fd, 5) == b"x" * 199_995
    finally:
        os.close(fd)


def test_new_directories_are_private_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        _files.ensure_dir(tmp_path / "a" / "b")
    finally:
        os.umask(old)
    assert (tmp_path / "a").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "a" / "b").stat().st_mode & 0o777 == 0o700
