"""Team history at size: many machines push into one PostgreSQL database; searches and
listings with 20 concurrent clients, beside the SQLite backend over the same sessions.

    python benchmarks/team_bench.py                          # 10 machines x 2,000 sessions
    python benchmarks/team_bench.py --machines 4 --sessions 300 --output benchmarks/RESULTS.md
    python benchmarks/team_bench.py --machines 50 --sessions 2000 --output benchmarks/RESULTS.md \
        --section "## Team history at 100,000 sessions"

Each machine's history is the benchmark corpus generator's (``corpus.py``, its own seed), its
sessions renamed ``m<NN>-<id>`` and its eight project folders made git checkouts of eight
shared repositories (``github.com/bench/<project>``), so every repository is one team
workspace across all machines. Steps, with the load average beside each:

1. every machine pushes its history (``push_sessions``, as a pushing role under row-level
   security), one after the other, then two at once; MB/s is event JSON written per second;
2. ``VACUUM ANALYZE`` (what autovacuum does after a bulk load; it also merges the full-text
   index's pending list, which a pushing role may not do itself);
3. search latency, ``relevance`` and ``phrase``, for a rare word, the most common word and a
   two-word phrase, with 20 client threads each on its own connection (in a process started
   for them, whose heap is the clients' own), for a role that sees everything (``*``) and a
   role granted two of the eight repositories; then one client;
4. listing: ``list_page(limit=50)``, the newest page and the next one (keyset-paged by the
   store's listing index), ``list_sessions()`` (every visible session), once and again (a
   server lists again and again; headers unchanged since are not parsed again), and the
   newest 50 of the search index's own table (one query, ``sqi_sessions`` by its index);
5. the same searches and listing on the SQLite backend (``SqliteSearch`` over the machines'
   sessions in one JSONL store, after a full build), same machine, same moment;
6. a push of a Claude Code history whose events have realistic sizes, through the importer
   and redaction (the generator's events are small: MB/s of step 1 understates bytes).

Searches are also given as CPU time (the client process's plus the database server's, from
``/proc``), which the shared machine's load inflates far less than wall time: for the 20
clients, the mean CPU of one search, and what it allows on this machine's cores (20 clients
keep every core busy, so a search waits for about 20 / cores searches' CPU).

The section is printed; ``--output FILE`` also replaces the ``## Team history`` section,
with the figures that section held before beside the new ones (``--before FILE`` takes them
from another file).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from corpus import CorpusManifest, CorpusSpec, generate  # noqa: E402
from postgres import backend_cpu  # noqa: E402

from sessionquery import JsonlPersistence, SessionQuery  # noqa: E402
from sessionquery.model import SessionEvent, SessionHeader  # noqa: E402
from sessionquery.persistence.base import PersistedSession  # noqa: E402
from sessionquery.query.backend import SearchMatch  # noqa: E402

SECTION = "## Team history"
CLIENTS = 20
ROUNDS = 5


class _Renamed:
    """One machine's store with ids prefixed and cwds moved into shared checkouts."""

    def __init__(self, inner: JsonlPersistence, prefix: str, cwds: dict[str, str]) -> None:
        self._inner, self._prefix, self._cwds = inner, prefix, cwds

    def _header(self, header: SessionHeader) -> SessionHeader:
        parent = header.parent_session
        return dataclasses.replace(
            header,
            id=self._prefix + header.id,
            cwd=self._cwds.get(header.cwd or "", header.cwd),
            parent_session=None if parent is None else self._prefix + parent,
        )

    def list(self) -> list[PersistedSession]:
        return [dataclasses.replace(e, header=self._header(e.header)) for e in self._inner.list()]

    def stat(self, session_id: str) -> PersistedSession | None:
        entry = self._inner.stat(session_id.removeprefix(self._prefix))
        return (
            None if entry is None else dataclasses.replace(entry, header=self._header(entry.header))
        )

    def open_read(self, session_id: str) -> Any:
        outer = self

        class Handle:
            def __init__(self) -> None:
                self._h = outer._inner.open_read(session_id.removeprefix(outer._prefix))
                self.header = outer._header(self._h.header)
                self.inherited_event_count = self._h.inherited_event_count

            def read(self, offset: int = 0, length: int | None = None) -> list[SessionEvent]:
                return self._h.read(offset, length)

            def close(self) -> None:
                self._h.close()

            def __enter__(self) -> Handle:
                return self

            def __exit__(self, *exc: object) -> None:
                self.close()

        return Handle()


def _cluster_cpu(dsn: str) -> float:
    """CPU seconds the whole server has used so far: the postmaster's, its live children's,
    and those of the children it has reaped (a backend of a client that hung up is counted in
    the postmaster's ``cutime``/``cstime``)."""
    import psycopg

    tick = os.sysconf("SC_CLK_TCK")

    def stat(pid: int | str) -> list[str]:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        # read while the connection is open: its backend ends when it closes
        postmaster = int(stat(row[0])[1])  # the backend's parent
    fields = stat(postmaster)
    total = sum(int(fields[k]) for k in (11, 12, 13, 14))
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            child = stat(entry.name)
        except OSError:
            continue
        if int(child[1]) == postmaster:
            total += int(child[11]) + int(child[12])
    return total / tick


def _step_key(label: str) -> str:
    """A row's step without what varies between runs (loads, counts in parentheses)."""
    label = re.sub(r",? load [0-9.]+", "", label)
    return re.sub(r"\s+", " ", re.sub(r"\([^)]*\)", "", label)).strip()


def _before(path: Path | None, section_name: str = SECTION) -> tuple[str, dict[str, str]]:
    """The PostgreSQL column of the ``section_name`` section of ``path`` by step, and the
    date it was measured on."""
    if path is None or not path.exists():
        return "", {}
    text = path.read_text()
    start = text.find(section_name + "\n")
    if start < 0:
        return "", {}
    end = text.find("\n## ", start + len(section_name))
    section = text[start : None if end < 0 else end]
    when = re.search(r"on (\d{4}-\d\d-\d\d \d\d:\d\d UTC)", section)
    rows: dict[str, str] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and not cells[0].startswith(("step", "---")):
            rows[_step_key(cells[0])] = cells[2] if len(cells) >= 4 else cells[1]
    return (when.group(1) if when else ""), rows


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def _pct(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _fmt(ms: float) -> str:
    return f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms"


def _machines(base: Path, count: int, sessions: int) -> tuple[list[_Renamed], CorpusManifest]:
    stores: list[_Renamed] = []
    manifest: CorpusManifest | None = None
    for n in range(count):
        root = base / f"m{n:02d}"
        made = generate(
            root / "store", CorpusSpec(sessions=sessions, events=14 * sessions, seed=100 + n)
        )
        manifest = manifest or made
        cwds: dict[str, str] = {}
        for cwd in made.workspaces:
            project = Path(cwd).name
            checkout = root / "checkouts" / project
            (checkout / ".git").mkdir(parents=True, exist_ok=True)
            (checkout / ".git" / "config").write_text(
                f'[remote "origin"]\n\turl = git@github.com:bench/{project}.git\n'
            )
            cwds[cwd] = str(checkout)
        stores.append(_Renamed(JsonlPersistence(root / "store"), f"m{n:02d}-", cwds))
    assert manifest is not None
    return stores, manifest


Clients = tuple[str, str, str]
"""How the client process opens a client: ``("postgres", dsn, "")`` (both the store and the
index on that database) or ``("sqlite", JSONL store root, index file)``."""


def _open_client(clients: Clients) -> SessionQuery:
    kind, first, second = clients
    if kind == "postgres":
        from sessionquery.persistence.postgres import PostgresPersistence
        from sessionquery.search.postgres import PostgresSearch

        return SessionQuery(persistence=PostgresPersistence(first), search=PostgresSearch(first))
    from sessionquery.search.sqlite import SqliteSearch

    return SessionQuery(persistence=JsonlPersistence(Path(first)), search=SqliteSearch(second))


def _run_clients(
    clients: Clients, queries: list[tuple[str, str]], dsn: str | None
) -> tuple[dict[str, list[float]], float]:
    """In the client process: every query ROUNDS times from CLIENTS threads at once; the
    latencies (ms) by match mode and the CPU seconds of their searches (this process's and
    the server's serving ``dsn``: counted from when every client is connected and warm to
    when the last one is done, before any disconnects)."""
    samples: dict[str, list[float]] = {"relevance": [], "phrase": []}
    lock = threading.Lock()
    start, done = threading.Barrier(CLIENTS + 1), threading.Barrier(CLIENTS + 1)
    errors: list[BaseException] = []

    def client(k: int) -> None:
        try:
            with _open_client(clients) as query:
                query.search_sessions(queries[0][0], match="relevance")  # connect, warm
                start.wait(timeout=300)
                mine: list[tuple[str, float]] = []
                for r in range(ROUNDS):
                    for i in range(len(queries)):
                        text, mode = queries[(i + k + r) % len(queries)]
                        started = time.perf_counter()
                        query.search_sessions(text, match=_mode(mode))
                        mine.append((mode, (time.perf_counter() - started) * 1000))
                done.wait(timeout=600)
            with lock:
                for mode, ms in mine:
                    samples[mode].append(ms)
        except BaseException as exc:  # reported below
            errors.append(exc)
            start.abort()
            done.abort()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
    for t in threads:
        t.start()
    used = 0.0
    try:
        start.wait(timeout=300)
        server, cpu = (_cluster_cpu(dsn) if dsn else 0.0), time.process_time()
        done.wait(timeout=600)
        used = time.process_time() - cpu + (_cluster_cpu(dsn) - server if dsn else 0.0)
    except threading.BrokenBarrierError:
        pass  # a client failed: its error is raised
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return samples, used


def _concurrent(
    clients: Clients, queries: list[tuple[str, str]], dsn: str | None = None
) -> dict[str, list[float]]:
    """Latencies (ms) by match mode of every query, ROUNDS times, from CLIENTS threads at
    once; ``"cpu"``: the mean CPU milliseconds of one search (the client process's, plus the
    server's serving ``dsn``).

    The clients run in a process of their own, started for them: in this one, the objects
    the steps before left (the pushes' and the stores') made every garbage collection of
    the clients' threads walk a large heap while holding the interpreter lock (relevance p50
    92 -> 113 ms with three million such objects beside the same clients, measured)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        samples, used = pool.submit(_run_clients, clients, queries, dsn).result()
    searches = CLIENTS * ROUNDS * len(queries)
    return {**samples, "cpu": [used * 1000 / searches]}


def _mode(name: str) -> SearchMatch:
    return "phrase" if name == "phrase" else "relevance"


def _single(
    query: SessionQuery, text: str, mode: str, dsn: str | None = None
) -> tuple[list[float], float]:
    """Wall milliseconds of ROUNDS searches, and their mean CPU milliseconds (this process's
    plus the server's serving ``dsn``)."""
    query.search_sessions(text, match=_mode(mode))
    out = []
    server = backend_cpu(dsn) if dsn else 0.0
    cpu = time.process_time()
    for _ in range(ROUNDS):
        started = time.perf_counter()
        query.search_sessions(text, match=_mode(mode))
        out.append((time.perf_counter() - started) * 1000)
    used = time.process_time() - cpu + (backend_cpu(dsn) - server if dsn else 0.0)
    return out, used * 1000 / ROUNDS


@contextmanager
def _server() -> Iterator[Any]:
    from postgres_support import running_server

    with running_server() as server:
        yield server


def with_role(dsn: str, role: str) -> str:
    """``dsn`` connecting as ``role``."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(dsn)
    params["user"] = role
    return make_conninfo("", **params)


def team_database(dsn: str, roles: Sequence[str]) -> Any:
    """Make the database at ``dsn`` a team database (store, index, ``init_team``) with the
    login ``roles`` created afresh; the ``TeamSetup``."""
    import psycopg

    from sessionquery.persistence.postgres import PostgresPersistence
    from sessionquery.search.postgres import PostgresSearch
    from sessionquery.team import init_team

    PostgresPersistence(dsn).close()
    PostgresSearch(dsn).close()
    with psycopg.connect(dsn, autocommit=True) as conn:
        setup = init_team(conn)
        for role in roles:
            conn.execute(f"DROP ROLE IF EXISTS {role}")
            conn.execute(f"CREATE ROLE {role} LOGIN")
    return setup


def run(
    machines: int, sessions: int, before: Path | None = None, section_name: str = SECTION
) -> str:
    import psycopg

    from sessionquery.persistence.postgres import PostgresPersistence
    from sessionquery.search.postgres import PostgresSearch
    from sessionquery.search.sqlite import SqliteSearch
    from sessionquery.team import grant, push_sessions

    base = Path(tempfile.mkdtemp(prefix="sq-team-bench-"))
    lines: list[str] = []
    try:
        started = time.perf_counter()
        stores, manifest = _machines(base, machines, sessions)
        generated = time.perf_counter() - started
        local_bytes = sum(f.stat().st_size for f in base.rglob("*.jsonl") if f.is_file())
        with _server() as server:
            dsn = server.new_database()

            def as_role(role: str) -> str:
                return with_role(dsn, role)

            setup = team_database(dsn, ("bench_push", "bench_all", "bench_two"))
            with psycopg.connect(dsn, autocommit=True) as conn:
                grant(conn, "bench_push", "*", push=True)
                grant(conn, "bench_all", "*")
                for project in [Path(w).name for w in manifest.workspaces[:2]]:
                    grant(conn, "bench_two", f"github.com/bench/{project}")
            push_rates, push_seconds, written, events = [], 0.0, 0, 0
            load_push = _load()
            for n, store in enumerate(stores[:-2]):
                report = push_sessions(store, as_role("bench_push"), machine=f"m{n:02d}")
                push_rates.append(report.bytes / report.seconds / 1e6)
                push_seconds += report.seconds
                written += report.bytes
                events += report.events
            pair: list[Any] = []
            pair_start = time.perf_counter()
            threads = [
                threading.Thread(
                    target=lambda s=store, k=k: pair.append(
                        push_sessions(s, as_role("bench_push"), machine=f"m{k:02d}")
                    )
                )
                for k, store in list(enumerate(stores))[-2:]
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            pair_seconds = time.perf_counter() - pair_start
            pair_bytes = sum(r.bytes for r in pair)
            events += sum(r.events for r in pair)
            written += pair_bytes
            vacuum_start = time.perf_counter()
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("VACUUM ANALYZE")
                (db_size,) = conn.execute(
                    "SELECT pg_size_pretty(pg_database_size(current_database()))"
                ).fetchone() or ("?",)
                (docs,) = conn.execute("SELECT count(*) FROM sqi_docs").fetchone() or (0,)
                (n_sessions,) = conn.execute("SELECT count(*) FROM sq_sessions").fetchone() or (0,)
            vacuum = time.perf_counter() - vacuum_start
            queries = [
                (manifest.rare_word, "relevance"),
                (manifest.rare_word, "phrase"),
                (manifest.common_word, "relevance"),
                (manifest.common_word, "phrase"),
                (manifest.phrase, "relevance"),
                (manifest.phrase, "phrase"),
            ]

            def pg(role: str) -> Callable[[], SessionQuery]:
                return lambda: SessionQuery(
                    persistence=PostgresPersistence(as_role(role)),
                    search=PostgresSearch(as_role(role)),
                )

            results: dict[str, dict[str, Any]] = {}
            for role in ("bench_all", "bench_two"):
                load = _load()
                samples = _concurrent(("postgres", as_role(role), ""), queries, dsn)
                with pg(role)() as query:
                    single = {q: _single(query, *q, dsn=dsn) for q in queries}
                    t0 = time.perf_counter()
                    listed = len(query.list_sessions())
                    list_ms = (time.perf_counter() - t0) * 1000
                    t0 = time.perf_counter()
                    query.list_sessions()
                    again_ms = (time.perf_counter() - t0) * 1000
                    first_ms, next_ms = [], []
                    for _ in range(ROUNDS):
                        t0 = time.perf_counter()
                        page = query.list_page(limit=50)
                        first_ms.append((time.perf_counter() - t0) * 1000)
                        t0 = time.perf_counter()
                        query.list_page(limit=50, cursor=page.next_cursor)
                        next_ms.append((time.perf_counter() - t0) * 1000)
                with psycopg.connect(as_role(role), autocommit=True) as conn:
                    newest = []
                    for _ in range(ROUNDS):
                        t0 = time.perf_counter()
                        conn.execute(
                            "SELECT id, header_json FROM sqi_sessions ORDER BY created_at DESC, "
                            "id LIMIT 50"
                        ).fetchall()
                        newest.append((time.perf_counter() - t0) * 1000)
                results[role] = {
                    "samples": samples,
                    "single": single,
                    "list": (listed, list_ms, again_ms),
                    "pages": (statistics.median(first_ms), statistics.median(next_ms)),
                    "newest": statistics.median(newest),
                    "load": load,
                }
        print(f"postgres done at load {_load()}", file=sys.stderr, flush=True)
        # SQLite over the same sessions, copied into one JSONL store (whose change token makes
        # a no-change search O(1), as a person's own store is).
        local = JsonlPersistence(base / "all")
        for store in stores:
            for entry in store.list():
                with store.open_read(entry.header.id) as reader:
                    inherited, log = reader.inherited_event_count, reader.read()
                with local.create(entry.header, inherited_event_count=inherited) as writer:
                    writer.append(log)
        index = base / "index.sqlite3"
        load_sqlite = _load()
        t0 = time.perf_counter()
        with SessionQuery(persistence=local, search=SqliteSearch(index)) as query:
            query.search_sessions(manifest.rare_word)
            build = time.perf_counter() - t0
            sqlite_single = {q: _single(query, *q) for q in queries}
            t0 = time.perf_counter()
            sqlite_listed = len(query.list_sessions())
            sqlite_list_ms = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()
            query.list_page(limit=50)
            sqlite_page_ms = (time.perf_counter() - t0) * 1000
        sqlite_samples = _concurrent(("sqlite", str(base / "all"), str(index)), queries)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    total = machines * sessions
    measured_before, old = _before(before, section_name)
    then = f"before ({measured_before})" if measured_before else "before"

    def row(step: str, now: str, sqlite: str) -> str:
        return f"| {step} | {old.get(_step_key(step), '—')} | {now} | {sqlite} |"

    lines += [
        section_name,
        "",
        "Measured by `python benchmarks/team_bench.py "
        f"--machines {machines} --sessions {sessions}` "
        f"on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {machines} machines x "
        f"{sessions:,} sessions = {n_sessions:,} sessions, {events:,} events "
        f"({docs:,} index documents), {local_bytes / 1e6:.0f} MB of JSONL on the machines, "
        f"{db_size} in PostgreSQL 15 (throwaway cluster, `fsync=off`), generated in "
        f"{generated:.0f} s. Two cores shared with other work: the load average is given "
        "beside each step. Team set-up: "
        + ("full-text operator leakproof" if setup.leakproof else "NOT leakproof")
        + ".",
        "",
        f"| step | PostgreSQL team database, {then} | PostgreSQL team database, now | "
        "SQLite backend (same sessions), now |",
        "|---|---:|---:|---:|",
        row(
            f"push, one machine at a time (load {load_push})",
            f"{statistics.median(push_rates):.1f} MB/s median, "
            f"{sum(r for r in push_rates) / len(push_rates):.1f} MB/s mean "
            f"({written / 1e6:.0f} MB, {events:,} events in {push_seconds + pair_seconds:.0f} s)",
            f"full index build {build:.0f} s ({events / build:,.0f} events/s, load {load_sqlite})",
        ),
        row(
            "push, two machines at once",
            f"{pair_bytes / pair_seconds / 1e6:.1f} MB/s together",
            "—",
        ),
        row("VACUUM ANALYZE after the load", f"{vacuum:.0f} s", "—"),
    ]
    for role, label in (
        ("bench_all", "role granted `*`"),
        ("bench_two", "role granted 2 of 8 repositories"),
    ):
        r = results[role]
        for mode in ("relevance", "phrase"):
            ours, theirs = r["samples"][mode], sqlite_samples[mode]
            lines.append(
                row(
                    f"{mode} search, {CLIENTS} clients at once, {label} (load {r['load']})",
                    f"p50 {_fmt(_pct(ours, 0.5))}, p99 {_fmt(_pct(ours, 0.99))}",
                    f"p50 {_fmt(_pct(theirs, 0.5))}, p99 {_fmt(_pct(theirs, 0.99))}"
                    if role == "bench_all"
                    else "—",
                )
            )
        cpu = r["samples"]["cpu"][0]
        cores = os.cpu_count() or 1
        lines.append(
            row(
                f"mean CPU of one search of that mix ({CLIENTS} clients), {label}",
                f"{_fmt(cpu)} (client + server): with {cores} cores busy, a search waits "
                f"about {_fmt(cpu * CLIENTS / cores)}",
                f"{_fmt(sqlite_samples['cpu'][0])}" if role == "bench_all" else "—",
            )
        )
        for q in queries:
            single, single_cpu = r["single"][q]
            sq = sqlite_single[q] if role == "bench_all" else None
            name = {
                manifest.rare_word: "rare word",
                manifest.common_word: "most common word",
                manifest.phrase: "two-word phrase",
            }[q[0]]
            lines.append(
                row(
                    f"one client, {name}, {q[1]}, {label}",
                    f"p50 {_fmt(statistics.median(single))} (CPU {_fmt(single_cpu)})",
                    f"p50 {_fmt(statistics.median(sq[0]))} (CPU {_fmt(sq[1])})" if sq else "—",
                )
            )
        listed, list_ms, again_ms = r["list"]
        first_ms, next_ms = r["pages"]
        lines.append(
            row(
                f"`list_page(limit=50)`, the newest page, {label} (median of {ROUNDS})",
                _fmt(first_ms),
                f"{_fmt(sqlite_page_ms)} (listed whole and cut)" if role == "bench_all" else "—",
            )
        )
        lines.append(row(f"`list_page` of the next 50 (its cursor), {label}", _fmt(next_ms), "—"))
        lines.append(
            row(
                f"`list_sessions()`, {label} ({listed:,} sessions: the whole listing)",
                _fmt(list_ms),
                f"{_fmt(sqlite_list_ms)} ({sqlite_listed:,})" if role == "bench_all" else "—",
            )
        )
        lines.append(
            row(
                f"`list_sessions()` again, same process, {label} (headers already parsed)",
                _fmt(again_ms),
                "—",
            )
        )
        lines.append(
            row(
                f"newest 50 sessions (one query, in the index's listing order), {label}",
                _fmt(r["newest"]),
                "—",
            )
        )
    del total
    return "\n".join(lines) + "\n"


def transcripts(sessions: int) -> str:
    """Push a Claude Code history whose events have realistic sizes (prompts and answers of
    50-400 words, 300 lines a session) through the importer and redaction, as
    ``sessionquery push`` does; one table row."""
    import random

    from sessionquery.redact import RedactingPersistence, default_redactor
    from sessionquery.sources import ClaudeCodeSource
    from sessionquery.team import push_sessions
    from team_support import write_claude

    base = Path(tempfile.mkdtemp(prefix="sq-team-bench-"))
    try:
        rng = random.Random(29)
        letters = "abcdefghijklmnopqrstuvwxyz"
        words = ["".join(rng.choices(letters, k=rng.randint(2, 9))) for _ in range(20_000)]
        for n in range(sessions):
            texts = [" ".join(rng.choices(words, k=rng.randint(50, 400))) for _ in range(300)]
            write_claude(base / "projects", f"s{n:05d}-0000-4000-8000-000000000000", "/x", texts)
        size = sum(f.stat().st_size for f in (base / "projects").rglob("*.jsonl"))
        source = RedactingPersistence(ClaudeCodeSource(base / "projects"), default_redactor())
        with _server() as server:
            dsn = server.new_database()
            team_database(dsn, ())
            load = _load()
            server_cpu = _cluster_cpu(dsn)
            cpu = time.process_time()
            started = time.perf_counter()
            report = push_sessions(source, dsn, machine="m00")
            seconds = time.perf_counter() - started
            cpu = time.process_time() - cpu
            # the push's backend has hung up: its CPU is counted once the postmaster reaped it
            time.sleep(1.5)
            server_cpu = _cluster_cpu(dsn) - server_cpu
    finally:
        shutil.rmtree(base, ignore_errors=True)
    step = (
        f"push of a Claude Code history with realistic event sizes ({sessions} sessions, "
        f"{report.events:,} events, {size / 1e6:.0f} MB of transcripts), redacted, load {load}"
    )
    now = (
        f"{size / 1e6 / seconds:.1f} MB/s of transcript "
        f"({report.bytes / 1e6 / seconds:.1f} MB/s of event JSON written, "
        f"{report.events / seconds:,.0f} events/s); CPU {cpu:.1f} s here + {server_cpu:.1f} s "
        f"server = {size / 1e6 / (cpu + server_cpu):.1f} MB of transcript per CPU second"
    )
    return f"| {step} | {{before}} | {now} | — |\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--machines", type=int, default=10)
    parser.add_argument("--sessions", type=int, default=2000, help="sessions per machine")
    parser.add_argument("--output", type=Path)
    parser.add_argument(
        "--before", type=Path, help="the earlier figures (default: the --output file's section)"
    )
    parser.add_argument(
        "--transcripts", type=int, default=30, help="sessions of the realistic-size push"
    )
    parser.add_argument(
        "--section",
        default=SECTION,
        help=f"the results section read and replaced (default {SECTION!r}; the 100,000-session "
        "run has its own: '## Team history at 100,000 sessions')",
    )
    args = parser.parse_args(argv)
    before = args.before or args.output
    section = run(args.machines, args.sessions, before, args.section)
    row = transcripts(args.transcripts)
    _, old = _before(before, args.section)
    row = row.replace("{before}", old.get(_step_key(row.strip().strip("|").split("|")[0]), "—"))
    head, sep, rest = section.partition("| push, two machines at once")
    publish(head + row + sep + rest, args.output)
    return 0


def publish(section: str, output: Path | None) -> None:
    """Print ``section`` and, with ``output``, replace its section of that results file."""
    print(section)
    if output is not None:
        from report import replace_section

        replace_section(output, section)


if __name__ == "__main__":
    raise SystemExit(main())
