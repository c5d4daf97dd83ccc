"""Child program: append a session's deterministic stream until killed.

Usage: ``crash_writer.py ROOT SESSION_ID SEED [LIMIT]``. Creates the session (or reopens it
for appending, which repairs a torn tail), then appends batches of 1..9 events and flushes,
forever or until ``LIMIT`` events are stored (then it prints ``limit`` and waits for stdin to
close). Progress lines on stdout, each written *after* the fact it reports:

* ``open <n>``: the session is open for writing with ``n`` events stored;
* ``queued <n>``: events up to ``n`` are appended but maybe not durable;
* ``flushed <n>``: ``flush()`` returned, so the first ``n`` events are durable.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reliability.corpus import events, header
from sessionquery.errors import PersistenceNotFound
from sessionquery.persistence.jsonl import JsonlPersistence


def main() -> None:
    root, session_id, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    limit = int(sys.argv[4]) if len(sys.argv) > 4 else None
    rng = random.Random(seed)
    store = JsonlPersistence(root)
    try:
        handle = store.open_write(session_id)
    except PersistenceNotFound:
        handle = store.create(header(session_id))
    count = handle.event_count
    print(f"open {count}", flush=True)
    while limit is None or count < limit:
        batch = rng.randint(1, 9)
        handle.append(events(session_id, count, count + batch))
        count += batch
        print(f"queued {count}", flush=True)
        handle.flush()
        print(f"flushed {count}", flush=True)
    handle.close()
    print("limit", flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
