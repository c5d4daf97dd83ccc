"""Child program: read one session over and over while another process appends to it.

Usage: ``reader.py ROOT SESSION_ID ROUNDS``. Each round opens the session, reads every event
and checks it against the deterministic stream, then prints ``read <n>``; a mismatch prints
``bad <seq>`` and exits 1; a count that goes backwards prints ``shrank`` and exits 1.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reliability.corpus import event_at
from sessionquery.persistence.jsonl import JsonlPersistence


def main() -> None:
    root, session_id, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = JsonlPersistence(root)
    seen = 0
    for _ in range(rounds):
        with store.open_read(session_id) as handle:
            stored = handle.read()
        for event in stored:
            if event != event_at(session_id, event.seq):
                print(f"bad {event.seq}", flush=True)
                sys.exit(1)
        if len(stored) < seen:
            print("shrank", flush=True)
            sys.exit(1)
        seen = len(stored)
        print(f"read {seen}", flush=True)


if __name__ == "__main__":
    main()
