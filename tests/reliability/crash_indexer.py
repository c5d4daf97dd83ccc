"""Child program: reconcile a search index over a JSONL store until killed.

Usage: ``crash_indexer.py ROOT INDEX_PATH``. Opens the (shared) index and runs
one reconciliation, printing ``progress <done> <total>`` from the progress callback (so a
parent can kill it in the middle of indexing), then ``done`` and waits for stdin to close.
"""

from __future__ import annotations

import sys

from sessionquery.persistence.jsonl import JsonlPersistence
from sessionquery.query.service import SessionQuery
from sessionquery.search.sqlite import SqliteSearch


def _progress(done: int, total: int) -> None:
    print(f"progress {done} {total}", flush=True)


def main() -> None:
    root, index_path = sys.argv[1], sys.argv[2]
    search = SqliteSearch(index_path)
    query = SessionQuery(persistence=JsonlPersistence(root), search=search)
    print("open", flush=True)
    search.update(query.corpus, progress=_progress)
    print("done", flush=True)
    sys.stdin.read()  # hold the index until the parent lets go
    query.close()


if __name__ == "__main__":
    main()
