"""Child of ``test_huge_events.py``: a store with one huge single-line event, searched through
the tools under a short deadline; prints one JSON line of figures.

Usage: ``huge_event.py <dir> <line MiB> <timeout ms> <max calls>``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from sessionquery import JsonlPersistence, SessionQuery, SessionQueryTools, ToolCaller
from sessionquery.model import SessionEvent, SessionHeader, messages
from sessionquery.query.cancel import CancelToken
from sessionquery.search.sqlite import SqliteSearch

_PIECE = 'logline \\"error\\" at {\\"frame\\": 17} in worker-3\\n '


def rss_mib() -> int:
    """This process's resident set size in MiB (Linux)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    raise RuntimeError("no VmRSS")


def write_store(root: Path, line_mib: int) -> JsonlPersistence:
    """A small session saying ``needle`` and a session whose one event is ``line_mib`` MiB."""
    store = JsonlPersistence(root)
    with store.create(SessionHeader(id="small", created_at=1, cwd="/w")) as writer:
        asked = messages.user_message("find the needle here", id="m0")
        writer.append([SessionEvent("user/message", 0, 1, asked, surface_op="append")])
    with store.create(SessionHeader(id="huge", created_at=2, cwd="/w")):
        pass
    head = (
        '{"type":"user/message","seq":0,"time":2,"data":{"id":"m0","role":"user",'
        '"content":[{"type":"text","text":"headword '
    )
    tail = ' tailword"}],"source":{"kind":"user"}},"surfaceOp":"append"}\n'
    block = (_PIECE * ((1 << 20) // len(_PIECE))).encode()
    with open(store.path_of("huge"), "ab") as file:
        file.write(head.encode())
        for _ in range(line_mib):
            file.write(block)
        file.write(tail.encode())
    return store


def main() -> None:
    base, line_mib, timeout_ms, max_calls = Path(sys.argv[1]), *map(int, sys.argv[2:5])
    store = write_store(base / "store", line_mib)
    caller = ToolCaller(cwd="/w")
    figures: dict[str, object] = {"rss_start": rss_mib()}
    seconds: list[float] = []
    rss: list[int] = []
    with SessionQuery(persistence=store, search=SqliteSearch(base / "index.sqlite3")) as query:
        tools = SessionQueryTools(query, search_timeout_ms=timeout_ms)
        answered = None
        for call in range(1, max_calls + 1):
            started = time.monotonic()
            result = tools.call("session_search", {"query": "needle"}, caller)
            seconds.append(time.monotonic() - started)
            rss.append(rss_mib())
            if not result.is_error and "Session small " in result.text:
                answered = call
                break
        for _ in range(5):  # searchable from now on, in bounded memory
            started = time.monotonic()
            result = tools.call("session_search", {"query": "needle"}, caller)
            seconds.append(time.monotonic() - started)
            rss.append(rss_mib())
            assert "Session small " in result.text, result.text
        # A hit on the huge session, once the build has reached it (until then the tools
        # answer from the indexed part): its title is read in bounded memory.
        reached, hits = None, 0
        for call in range(1, max_calls + 1):
            started = time.monotonic()
            result = tools.call("session_search", {"query": "headword"}, caller)
            seconds.append(time.monotonic() - started)
            rss.append(rss_mib())
            if "Session huge " in result.text:
                reached = reached or call
                hits += 1
                if hits == 3:
                    break
            else:
                assert reached is None, result.text  # once found, always found
        assert hits == 3, result.text
        token = CancelToken(deadline=time.monotonic() + timeout_ms / 1000)
        head = [hit.record.id for hit in query.search_sessions("headword", cancel=token).items]
        tail = [hit.record.id for hit in query.search_sessions("tailword").items]
    figures.update(
        calls_until_searchable=answered,
        calls_until_huge_found=reached,
        seconds_max=round(max(seconds), 3),
        seconds=[round(s, 3) for s in seconds],
        rss=rss,
        head_hits=head,
        tail_hits=tail,
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
