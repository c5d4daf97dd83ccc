"""Measurement workers: each runs in its own subprocess and prints one JSON line.

``python benchmarks/workers.py NAME ARGS_JSON`` runs worker ``NAME`` and prints
``{"ok": true, "result": {...}, "maxrss_kb": ...}`` (or ``{"ok": false, "error": ...}``) as the
last line of stdout. A fresh process per measurement gives every system its own peak RSS
(``ru_maxrss`` of that process) and a cold in-process cache.

Comparators are built from the **same documents** as sessionquery's index: every event line of
every session file whose semantic text (SPEC §3.7, re-implemented here over plain dicts so the
floor pays no model overhead) is non-empty.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw

MARK = "\x01"
"""Highlight marker of the raw FTS5 ranking (one character per match span)."""

# --------------------------------------------------------------------------- documents


def _blocks(blocks: Any) -> Iterator[Any]:
    for block in blocks if isinstance(blocks, list) else ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            yield block.get("text")
        elif kind == "tool-call":
            yield block.get("name")
            yield block.get("arguments")
        elif kind == "tool-result":
            yield from _blocks(block.get("content"))


def _parts(kind: str, data: Any) -> Iterator[Any]:
    if not isinstance(data, dict):
        return
    if kind == "user/message":
        yield from _blocks(data.get("content"))
    elif kind in ("assistant/message", "tool/result"):
        yield from _blocks((data.get("message") or {}).get("content"))
        if kind == "tool/result":
            error = data.get("error") or {}
            yield error.get("name")
            yield error.get("code")
    elif kind == "tool/call":
        yield data.get("name")
        yield data.get("arguments")
    elif kind == "todo/write":
        for todo in data.get("todos") or ():
            yield todo.get("status")
            yield todo.get("content")
    elif kind == "turn/end":
        reason = (data.get("reason") or {}).get("kind")
        if reason == "error":
            yield "error"
            yield ((data.get("reason") or {}).get("error") or {}).get("message")
        elif reason in ("aborted", "max-tokens", "interrupted"):
            yield reason


def raw_text(kind: str, data: Any) -> str:
    """SPEC §3.7 semantic text over a plain decoded event."""
    out = []
    for part in _parts(kind, data):
        if isinstance(part, str):
            stripped = part.strip()
            if stripped:
                out.append(stripped)
    return "\n".join(out)


Doc = tuple[str, str, int, str, int, str, int]  # text, session, seq, type, time, cwd, length


def documents(root: str) -> Iterator[Doc]:
    """Every searchable document of every session file under ``root``, file by file."""
    loads = json.loads
    for name in sorted(os.listdir(root)):
        if not name.endswith(".jsonl") or name.startswith("."):
            continue
        with open(os.path.join(root, name), "rb") as file:
            lines = file.read().split(b"\n")
        header = loads(lines[0])
        sid, cwd = header["id"], header.get("cwd")
        for line in lines[1:]:
            if not line:
                continue
            event = loads(line)
            text = raw_text(event["type"], event["data"])
            if text:
                yield (text, sid, event["seq"], event["type"], event["time"], cwd, len(text))


# --------------------------------------------------------------------------- helpers


BUDGET_S = 20.0
"""Repetitions of one measurement stop early once they have taken this long (at least 3 run)."""


def _timed(fn: Callable[[], Any], reps: int) -> tuple[list[float], Any]:
    samples = []
    result = None
    spent = 0.0
    for index in range(reps):
        started = time.perf_counter()
        result = fn()
        elapsed = time.perf_counter() - started
        samples.append(elapsed * 1000)
        spent += elapsed
        if spent > BUDGET_S and index >= 2:
            break
    return samples, result


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]
    return {
        "p50": statistics.median(ordered),
        "p95": p95,
        "min": ordered[0],
        "n": len(ordered),
    }


def _dir_bytes(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for base, _dirs, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(base, f)) for f in files)
    return total


def _query_service(root: str, index: str) -> tuple[Any, Any]:
    from sessionquery import JsonlPersistence, SessionQuery
    from sessionquery.search.sqlite import SqliteSearch

    search = SqliteSearch(index)
    service = SessionQuery(persistence=JsonlPersistence(root), search=search)
    return service, search


# --------------------------------------------------------------------------- builds


def build_sq(args: dict[str, Any]) -> dict[str, Any]:
    """Full index build: a new SqliteSearch reconciles the whole store once."""
    service, search = _query_service(args["root"], args["index"])
    try:
        started = time.perf_counter()
        update = search.update(service.corpus)
        seconds = time.perf_counter() - started
    finally:
        service.close()
        search.close()
    return {
        "seconds": seconds,
        "documents": update.documents_written,
        "sessions": update.persisted_indexed,
        "bytes": _dir_bytes(args["index"]),
    }


_FTS_SCHEMA = (
    "CREATE VIRTUAL TABLE docs USING fts5(text, session_id UNINDEXED, seq UNINDEXED, "
    "type UNINDEXED, time UNINDEXED, cwd UNINDEXED, length UNINDEXED, tokenize='unicode61')"
)


def build_fts(args: dict[str, Any]) -> dict[str, Any]:
    """The floor: read the same files, insert the same documents into one plain FTS5 table."""
    path = args["index"]
    started = time.perf_counter()
    conn = apsw.Connection(path)  # the SQLite the index itself runs on
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(_FTS_SCHEMA)
        conn.execute("BEGIN")
        count = 0
        batch: list[Doc] = []
        for doc in documents(args["root"]):
            batch.append(doc)
            if len(batch) >= 5000:
                conn.executemany("INSERT INTO docs VALUES (?,?,?,?,?,?,?)", batch)
                count += len(batch)
                batch = []
        conn.executemany("INSERT INTO docs VALUES (?,?,?,?,?,?,?)", batch)
        count += len(batch)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return {
        "seconds": time.perf_counter() - started,
        "documents": count,
        "bytes": _dir_bytes(path),
    }


def _tantivy_schema() -> Any:
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("text", stored=True)
    builder.add_text_field("session_id", stored=True, tokenizer_name="raw")
    builder.add_integer_field("seq", stored=True, fast=True)
    builder.add_text_field("type", stored=True, tokenizer_name="raw")
    builder.add_integer_field("time", stored=True, fast=True)
    builder.add_text_field("cwd", stored=True, tokenizer_name="raw")
    return builder.build()


def build_tantivy(args: dict[str, Any]) -> dict[str, Any]:
    """Tantivy over the same documents (text indexed with positions, metadata as fields)."""
    import tantivy

    path = args["index"]
    os.makedirs(path, exist_ok=True)
    started = time.perf_counter()
    index = tantivy.Index(_tantivy_schema(), path=path)
    writer = index.writer(heap_size=256_000_000, num_threads=2)
    count = 0
    for text, sid, seq, kind, at, cwd, _length in documents(args["root"]):
        doc = tantivy.Document(
            text=text, session_id=sid, seq=seq, type=kind, time=at, cwd=cwd or ""
        )
        writer.add_document(doc)
        count += 1
    writer.commit()
    writer.wait_merging_threads()
    return {
        "seconds": time.perf_counter() - started,
        "documents": count,
        "bytes": _dir_bytes(path),
    }


# --------------------------------------------------------------------------- searches


def _filters(query: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    from sessionquery import CwdIn, TypeIn

    if not query.get("cwd"):
        return [], []
    return [CwdIn((query["cwd"],))], [TypeIn(tuple(query["types"]))]


def search_sq(args: dict[str, Any]) -> dict[str, Any]:
    """No-change ``search_sessions`` latency per query class on an already built index."""
    service, search = _query_service(args["root"], args["index"])
    out: dict[str, Any] = {"classes": {}}
    try:
        started = time.perf_counter()
        service.search_sessions(args["queries"][0]["text"])
        out["first_ms"] = (time.perf_counter() - started) * 1000
        for query in args["queries"]:
            sessions, events = _filters(query)

            def run(query: dict[str, Any] = query, s: Any = sessions, e: Any = events) -> Any:
                return service.search_sessions(
                    query["text"], session_filters=s, event_filters=e, limit=20
                )

            run()  # warm the statement cache
            samples, page = _timed(run, args["reps"])
            out["classes"][query["name"]] = {
                **_summary(samples),
                "top": [hit.record.header.id for hit in page.items],
            }
    finally:
        service.close()
        search.close()
    return out


def _raw_sql(filtered: bool, types: int) -> str:
    where = ""
    if filtered:
        marks = ",".join("?" * types)
        where = f" AND cwd = ? AND type IN ({marks})"
    # MATERIALIZED, as in sessionquery: otherwise SQLite computes the count twice per match.
    return (
        "WITH cand AS MATERIALIZED (SELECT rowid AS rid, session_id, seq, time, length, "
        "raw_instances(docs) AS mc FROM docs "
        f"WHERE docs MATCH ?{where}), "
        "ranked AS (SELECT *, row_number() OVER (PARTITION BY session_id "
        "ORDER BY mc DESC, length ASC, time DESC, seq DESC) AS rn FROM cand) "
        "SELECT rid, session_id FROM ranked WHERE rn = 1 "
        "ORDER BY mc DESC, length ASC, time DESC, session_id ASC, seq DESC LIMIT 21"
    )


def search_fts(args: dict[str, Any]) -> dict[str, Any]:
    """The same ranked query on the raw FTS5 table, with a snippet per returned hit."""
    conn = apsw.Connection(args["index"])
    # The floor counts spans the plain way the binding offers: FTS5's instance count (equal
    # to the span count for these queries, whose phrases repeat no word).
    conn.register_fts5_function("raw_instances", lambda api, *_args: api.inst_count)
    out: dict[str, Any] = {"classes": {}}
    try:
        for query in args["queries"]:
            phrase = '"' + query["text"].replace('"', '""') + '"'
            filtered = bool(query.get("cwd"))
            sql = _raw_sql(filtered, len(query.get("types", ())))
            params: list[Any] = [phrase]
            if filtered:
                params += [query["cwd"], *query["types"]]

            def run(sql: str = sql, params: list[Any] = params, phrase: str = phrase) -> Any:
                rows = conn.execute(sql, params).fetchall()
                for rid, _sid in rows[:20]:
                    conn.execute(
                        "SELECT highlight(docs, 0, ?, '') FROM docs "
                        "WHERE docs MATCH ? AND rowid = ?",
                        (MARK, phrase, rid),
                    ).fetchone()
                return rows

            run()
            samples, rows = _timed(run, args["reps"])
            count_sql = "SELECT count(*) FROM docs WHERE docs MATCH ?" + (
                sql[sql.index(" AND cwd") : sql.index("), ranked")] if filtered else ""
            )
            counted = conn.execute(count_sql, params).fetchone()
            matches = counted[0] if counted else 0
            out["classes"][query["name"]] = {
                **_summary(samples),
                "top": [sid for _rid, sid in rows[:20]],
                "matches": matches,
            }
    finally:
        conn.close()
    return out


def search_tantivy(args: dict[str, Any]) -> dict[str, Any]:
    """Tantivy: top 20 documents by its own BM25 ranking (no per-session grouping)."""
    import tantivy

    index = tantivy.Index.open(args["index"])
    index.reload()
    searcher = index.searcher()
    schema = _tantivy_schema()
    out: dict[str, Any] = {"classes": {}}
    for query in args["queries"]:
        words = query["text"].lower().split()
        text_query = (
            tantivy.Query.term_query(schema, "text", words[0])
            if len(words) == 1
            else tantivy.Query.phrase_query(schema, "text", words)
        )
        if query.get("cwd"):
            types = tantivy.Query.boolean_query(
                [
                    (tantivy.Occur.Should, tantivy.Query.term_query(schema, "type", kind))
                    for kind in query["types"]
                ]
            )
            text_query = tantivy.Query.boolean_query(
                [
                    (tantivy.Occur.Must, text_query),
                    (tantivy.Occur.Must, tantivy.Query.term_query(schema, "cwd", query["cwd"])),
                    (tantivy.Occur.Must, types),
                ]
            )

        def run(q: Any = text_query) -> Any:
            result = searcher.search(q, 20)
            return [searcher.doc(address) for _score, address in result.hits]

        run()
        samples, _docs = _timed(run, args["reps"])
        out["classes"][query["name"]] = _summary(samples)
    return out


def search_rg(args: dict[str, Any]) -> dict[str, Any]:
    """``rg`` listing the session files that contain the query (case-insensitive, literal)."""
    rg = shutil.which("rg")
    if rg is None:
        raise RuntimeError("rg is not installed")
    out: dict[str, Any] = {"classes": {}}
    for query in args["queries"]:
        if query.get("cwd"):
            continue  # rg has no metadata filter: reported as not measured

        def run(text: str = query["text"]) -> Any:
            done = subprocess.run(
                [rg, "-F", "-i", "-l", "--no-messages", "--", text, args["root"]],
                capture_output=True,
                check=False,
            )
            if done.returncode not in (0, 1):
                raise RuntimeError(f"rg failed: {done.stderr.decode(errors='replace')}")
            return done.stdout

        run()
        samples, _out = _timed(run, args["reps"])
        out["classes"][query["name"]] = _summary(samples)
    return out


# --------------------------------------------------------------------------- exact reads


def reads(args: dict[str, Any]) -> dict[str, Any]:
    """``read_event`` / ``trace_event`` on the big session (cold, then cached)."""
    from sessionquery import JsonlPersistence, SessionQuery

    sid, seq, reps = args["session"], args["seq"], args["reps"]
    out: dict[str, Any] = {}
    for name in ("read_event", "trace_event"):
        service = SessionQuery(persistence=JsonlPersistence(args["root"]))
        try:
            if name == "read_event":

                def call(s: Any = service) -> Any:
                    return s.read_event(sid, seq, before=5, after=5)
            else:

                def call(s: Any = service) -> Any:
                    return s.trace_event(sid, seq)

            cold, _ = _timed(call, 1)
            samples, _ = _timed(call, reps)
            out[name] = {"cold_ms": cold[0], "cached": _summary(samples)}
        finally:
            service.close()
    return out


def listing(args: dict[str, Any]) -> dict[str, Any]:
    """``list_sessions`` on a new service (headers read), then with headers cached."""
    from sessionquery import JsonlPersistence, SessionQuery

    service = SessionQuery(persistence=JsonlPersistence(args["root"]))
    try:
        cold, records = _timed(service.list_sessions, 1)
        samples, _ = _timed(service.list_sessions, args["reps"])
    finally:
        service.close()
    return {"cold_ms": cold[0], "cached": _summary(samples), "sessions": len(records)}


def _ten_events(first_seq: int, turn: int, at: int) -> list[Any]:
    from sessionquery import SessionEvent
    from sessionquery.model import messages

    def ev(kind: str, data: Any, surface: bool = False, sources: Any = None) -> Any:
        seq = first_seq + len(events)
        return SessionEvent(kind, seq, at + seq, data, "append" if surface else None, sources)

    events: list[Any] = []
    events.append(ev("turn/start", messages.turn_start(turn)))
    text = "please rerun the flaky benchmark zyxwvut"
    events.append(ev("user/message", messages.user_message(text, id=f"bench-{first_seq}"), True))
    events.append(ev("step/start", messages.step_start(turn, 0)))
    arguments = '{"command": "make bench"}'
    calls = [messages.tool_call_block(f"b{first_seq}-{i}", "bash", arguments) for i in (0, 1)]
    answer = messages.assistant_message("Running it.", turn=turn, step=0, tool_calls=calls)
    events.append(ev("assistant/message", answer, True))
    for call in calls:
        call_seq = first_seq + len(events)
        events.append(ev("tool/call", messages.tool_call(call, turn=turn, step=0)))
        result = messages.tool_result("ok zyxwvut done", call_id=call["id"], turn=turn, step=0)
        events.append(ev("tool/result", result, True, [call_seq]))
    events.append(ev("step/end", messages.step_end(turn, 0)))
    events.append(ev("turn/end", messages.turn_end(turn)))
    return events


def incremental(args: dict[str, Any]) -> dict[str, Any]:
    """Append 10 events to one session, then time the reconcile and a plain re-read.

    The session file is cut back to its original bytes afterwards, so the corpus is unchanged
    (its revision changes, which the next index open picks up).
    """
    from sessionquery import JsonlPersistence

    root, sid, rounds = args["root"], args["session"], args["rounds"]
    store = JsonlPersistence(root)
    path = store.path_of(sid)
    original = os.path.getsize(path)
    service, search = _query_service(root, args["index"])
    reconcile_ms: list[float] = []
    reread_ms: list[float] = []
    nochange_ms: list[float] = []
    try:
        search.update(service.corpus)  # establish the in-memory state (listing only)
        for _ in range(rounds):
            with store.open_read(sid) as handle:
                stored = handle.read()
            turn = 1 + max(e.data["turn"] for e in stored if e.type == "turn/end")
            with store.open_write(sid) as writer:
                writer.append(_ten_events(len(stored), turn, stored[-1].time))
                writer.flush()
            started = time.perf_counter()
            update = search.update(service.corpus)
            reconcile_ms.append((time.perf_counter() - started) * 1000)
            if update.persisted_indexed != 1:
                raise RuntimeError(f"expected one session reindexed, got {update}")
            started = time.perf_counter()
            with JsonlPersistence(root).open_read(sid) as handle:
                handle.read()
            reread_ms.append((time.perf_counter() - started) * 1000)
            samples, _ = _timed(lambda: search.update(service.corpus), 3)
            nochange_ms.extend(samples)
        hits = service.search_sessions("zyxwvut").items
        found = [hit.record.header.id for hit in hits]
    finally:
        service.close()
        search.close()
        os.truncate(path, original)
    return {
        "reconcile": _summary(reconcile_ms),
        "reread": _summary(reread_ms),
        "nochange_update": _summary(nochange_ms),
        "found": found,
    }


# --------------------------------------------------------------------------- profiles


def profile(args: dict[str, Any]) -> dict[str, Any]:
    """cProfile excerpts of a full build and of the common-word search (top functions)."""
    import cProfile
    import io
    import pstats

    def top(prof: cProfile.Profile, count: int) -> str:
        stream = io.StringIO()
        stats = pstats.Stats(prof, stream=stream)
        stats.sort_stats("tottime").print_stats(count)
        lines = [line for line in stream.getvalue().splitlines() if line.strip()]
        start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
        return "\n".join(lines[start - 1 : start + count + 1]).replace(
            str(Path(__file__).resolve().parents[1]) + "/", ""
        )

    service, search = _query_service(args["root"], args["index"])
    try:
        prof = cProfile.Profile()
        prof.enable()
        search.update(service.corpus)
        prof.disable()
        build = top(prof, 12)
        for query in args["queries"]:
            service.search_sessions(query["text"])
        out: dict[str, Any] = {"build": build, "search": {}}
        for query in args["queries"]:
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(5):
                service.search_sessions(query["text"])
            prof.disable()
            out["search"][query["name"]] = top(prof, 6)
    finally:
        service.close()
        search.close()
    return out


WORKERS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "build_sq": build_sq,
    "build_fts": build_fts,
    "build_tantivy": build_tantivy,
    "search_sq": search_sq,
    "search_fts": search_fts,
    "search_tantivy": search_tantivy,
    "search_rg": search_rg,
    "reads": reads,
    "listing": listing,
    "incremental": incremental,
    "profile": profile,
}


def main() -> int:
    """``workers.py NAME ARGS_JSON``: run one worker, print its JSON result line."""
    name, raw = sys.argv[1], sys.argv[2]
    try:
        result = WORKERS[name](json.loads(raw))
        line = {"ok": True, "result": result}
    except Exception as exc:  # reported to the runner as "not measured", with the reason
        traceback.print_exc()
        line = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    line["maxrss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # rg runs as a child process: its own peak is the one that matters.
    line["children_maxrss_kb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(json.dumps(line))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
