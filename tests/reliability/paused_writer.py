"""Child program: a writer that stops inside ``flush()`` so a parent can act at that moment.

Usage: ``paused_writer.py ROOT SESSION_ID``. Reopens the session and appends the next six
events of its deterministic stream. Its flush is paused just before the bytes are written:
it prints ``announced`` (the store's change token has already moved) and waits for a line on
stdin, then writes the bytes, prints ``written`` and waits again, still inside ``flush()``,
until the parent kills it. This is the one place the suite injects a pause; the write itself
is the store's own code on a real file.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reliability.corpus import events
from sessionquery.persistence import _files
from sessionquery.persistence.jsonl import JsonlPersistence

_real_write_all = _files.write_all


def _paused_write_all(fd: int, data: bytes, offset: int) -> None:
    if not data.startswith(b"{"):  # the change token's own write
        _real_write_all(fd, data, offset)
        return
    print("announced", flush=True)
    sys.stdin.readline()
    _real_write_all(fd, data, offset)
    print("written", flush=True)
    sys.stdin.readline()


def main() -> None:
    root, session_id = sys.argv[1], sys.argv[2]
    store = JsonlPersistence(root)
    handle = store.open_write(session_id)
    count = handle.event_count
    handle.append(events(session_id, count, count + 6))
    _files.write_all = _paused_write_all
    handle.flush()


if __name__ == "__main__":
    main()
