"""Atheris harness: arbitrary tool names, argument texts and callers into the five tools.

Run: ``.venv/bin/python fuzz/fuzz_tools.py -max_total_time=60``. ``SessionQueryTools.call``
must always return a ``ToolResult`` that is never ``SESSION_QUERY_TOOL_FAILED`` (an unexpected
exception inside) and never shows the store's path.
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile

import atheris  # type: ignore[import-untyped]  # no stubs published

with atheris.instrument_imports():
    from sessionquery.model import SessionEvent, SessionHeader, messages
    from sessionquery.persistence.jsonl import JsonlPersistence
    from sessionquery.query.service import SessionQuery
    from sessionquery.search.sqlite import SqliteSearch
    from sessionquery.tools import SessionQueryTools, ToolCaller, ToolResult
    from sessionquery.tools.schemas import TOOL_NAMES

ROOT = tempfile.mkdtemp(prefix="sq-fuzz-tools-")
atexit.register(shutil.rmtree, ROOT, True)
STORE = JsonlPersistence(ROOT)
for number, cwd in enumerate(["/w", "/w/", "/v"]):
    with STORE.create(SessionHeader(id=f"s{number}", created_at=0, cwd=cwd)) as handle:
        data = messages.user_message(f"alpha beta {number}", id="m")
        handle.append([SessionEvent("user/message", 0, 1, data, "append")])
QUERY = SessionQuery(persistence=STORE, search=SqliteSearch(":memory:"))
TOOLS = SessionQueryTools(QUERY, max_search_results=3)
CWDS = [None, "/w", "/w/", "/v", "/x"]
IDS = [None, "s0", "s1", "s2", "nope"]


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    choice = fdp.ConsumeIntInRange(0, len(TOOL_NAMES))
    name = TOOL_NAMES[choice] if choice < len(TOOL_NAMES) else fdp.ConsumeUnicode(8)
    caller = ToolCaller(
        session_id=IDS[fdp.ConsumeIntInRange(0, len(IDS) - 1)],
        cwd=CWDS[fdp.ConsumeIntInRange(0, len(CWDS) - 1)],
        current_step_seq=fdp.ConsumeIntInRange(0, 3) or None,
    )
    arguments = fdp.ConsumeUnicodeNoSurrogates(fdp.remaining_bytes())
    result = TOOLS.call(name, arguments, caller)
    assert isinstance(result, ToolResult)
    assert result.code != "SESSION_QUERY_TOOL_FAILED", (name, arguments, result.text)
    assert ROOT not in result.text


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
