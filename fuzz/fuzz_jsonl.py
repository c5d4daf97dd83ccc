"""Atheris harness: arbitrary bytes as a session file, read through every read path.

Run: ``.venv/bin/python fuzz/fuzz_jsonl.py -max_total_time=60``. Only ``PersistenceError`` or
``ValueError`` may come out of the store, only ``SessionQueryError`` out of the service, and
the file must be unchanged afterwards.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

import atheris  # type: ignore[import-untyped]  # no stubs published

with atheris.instrument_imports():
    from sessionquery.errors import PersistenceError, SessionQueryError
    from sessionquery.persistence.jsonl import JsonlPersistence
    from sessionquery.query.service import SessionQuery

ROOT = tempfile.mkdtemp(prefix="sq-fuzz-jsonl-")
atexit.register(shutil.rmtree, ROOT, True)
STORE = JsonlPersistence(ROOT)
PATH = STORE.path_of("f")
HEADER = (
    b'{"type":"session","version":3,"id":"f","createdAt":0,"isSeeded":false,"delegationDepth":0}\n'
)


def test_one_input(data: bytes) -> None:
    body = HEADER + data[1:] if data[:1] == b"h" else data
    with open(PATH, "wb") as file:
        file.write(body)
    try:
        STORE.list()
        with STORE.open_read("f") as handle:
            handle.read()
    except (PersistenceError, ValueError):
        pass
    STORE.verify()
    with SessionQuery(persistence=STORE) as query:
        try:
            query.read_session("f")
        except SessionQueryError:
            pass
    with open(PATH, "rb") as file:
        assert file.read() == body, "a read modified the file"
    os.unlink(PATH)


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
