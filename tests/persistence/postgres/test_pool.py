"""``PostgresPersistence(pool_size=N)``: reads of several threads run on pooled connections."""

from __future__ import annotations

import threading

import psycopg
import pytest

from sessionquery.model import SessionHeader
from sessionquery.persistence.postgres import PostgresPersistence


def test_threads_read_at_once_through_the_pool_and_see_the_same_sessions(postgres_dsn: str) -> None:
    with PostgresPersistence(postgres_dsn) as writer:
        for n in range(5):
            writer.create(SessionHeader(id=f"s{n}", created_at=n, cwd="/w")).close()
    store = PostgresPersistence(postgres_dsn, pool_size=4)
    barrier = threading.Barrier(4)
    seen: list[list[str]] = []
    backends: set[int] = set()
    lock = threading.Lock()

    def read() -> None:
        barrier.wait(timeout=60)
        with store._shared() as conn:  # which connection served the read
            pid = conn.execute("SELECT pg_backend_pid(), pg_sleep(0.2)").fetchone()
        ids = sorted(entry.header.id for entry in store.list())
        with lock:
            seen.append(ids)
            backends.add(int(pid[0]) if pid else 0)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    store.close()
    assert seen == [[f"s{n}" for n in range(5)]] * 4
    assert len(backends) > 1  # not one shared connection


def test_a_pool_size_out_of_range_is_refused(postgres_dsn: str) -> None:
    for size in (0, 101, 2.0, True):
        with pytest.raises(ValueError):
            PostgresPersistence(postgres_dsn, pool_size=size)  # type: ignore[arg-type]


def test_a_closed_pooled_store_refuses_reads(postgres_dsn: str) -> None:
    store = PostgresPersistence(postgres_dsn, pool_size=2)
    store.list()
    store.close()
    with pytest.raises(Exception) as caught:
        store.list()
    assert not isinstance(caught.value, psycopg.Error)
