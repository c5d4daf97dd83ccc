"""The CLI's ``--postgres DSN``: one database as session store and search index."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from sessionquery.cli import main
from sessionquery.live import SessionStore
from sessionquery.model import SessionHeader
from sessionquery.persistence.postgres import PostgresPersistence


def record(dsn: str) -> None:
    with PostgresPersistence(dsn) as persistence:
        store = SessionStore(persistence)
        session = store.create("team-1", cwd="/repo")
        session.append(
            "user/message",
            {
                "id": "u",
                "role": "user",
                "content": [{"type": "text", "text": "the flaky login test again"}],
                "source": {"kind": "user"},
            },
            surface_op="append",
        )
        store.close_all()


@pytest.mark.slow
def test_list_index_and_search_read_the_postgres_database(
    postgres_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    record(postgres_dsn)
    assert main(["list", "--postgres", postgres_dsn, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert "team-1" in json.dumps(listed)
    assert main(["index", "--postgres", postgres_dsn, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["persisted_indexed"] == 1
    assert main(["search", "login test", "--postgres", postgres_dsn, "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert "team-1" in json.dumps(found)


def test_an_unreachable_database_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["list", "--postgres", "host=/nonexistent-socket-dir dbname=x connect_timeout=1"])
    err = capsys.readouterr().err
    assert status != 0
    assert err.startswith("SESSION_QUERY_PERSISTENCE_FAILED:")
    assert "Traceback" not in err


def test_the_config_file_can_name_the_postgres_database(
    postgres_dsn: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    record(postgres_dsn)
    config = tmp_path / "config.toml"
    config.write_text(f"postgres = {json.dumps(postgres_dsn)}\n", encoding="utf-8")
    monkeypatch.setenv("SESSIONQUERY_CONFIG", str(config))
    assert main(["search", "flaky login", "--json"]) == 0
    assert "team-1" in capsys.readouterr().out


def test_a_config_file_postgres_value_must_be_a_string(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("postgres = 5\n", encoding="utf-8")
    monkeypatch.setenv("SESSIONQUERY_CONFIG", str(config))
    assert main(["list"]) != 0
    assert capsys.readouterr().err.startswith("SESSION_QUERY_INVALID_CONFIG:")


def test_sources_shows_the_postgres_database_with_its_sessions_and_as_the_index(
    postgres_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    record(postgres_dsn)
    assert main(["sources", "--postgres", postgres_dsn, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    (row,) = document["sources"]
    assert (row["kind"], row["from"], row["exists"], row["sessions"]) == (
        "postgres",
        "option",
        True,
        1,
    )
    assert document["index"]["path"] is None and document["index"]["from"] == "option"
    assert main(["sources", "--postgres", postgres_dsn]) == 0
    text = capsys.readouterr().out
    assert "PostgreSQL  option  1" in text
    assert "Index: the PostgreSQL database" in text and "index.sqlite3" not in text


def test_sources_shows_an_unreachable_postgres_database_with_its_reason(
    capsys: pytest.CaptureFixture[str],
) -> None:
    dsn = "postgresql://someone:hunter2@/x?host=/nonexistent-socket-dir&connect_timeout=1"
    assert main(["sources", "--postgres", dsn, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    (row,) = document["sources"]
    assert row["exists"] is False and row["sessions"] is None and row["error"]
    assert main(["sources", "--postgres", dsn]) == 0
    text = capsys.readouterr().out
    assert "(unreachable)" in text and "hunter2" not in text


def test_list_and_show_read_only_the_headers_they_show_from_a_store_that_pages_itself(
    postgres_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with PostgresPersistence(postgres_dsn) as persistence:
        for n, sid in enumerate(["old-damaged", "fe5e1c67-root", "fe5e1c67-other"]):
            persistence.create(SessionHeader(id=sid, created_at=1000 + n, cwd="/repo")).close()
        persistence.create(
            SessionHeader(id="child-1", created_at=2000, parent_session="fe5e1c67-root")
        ).close()
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("UPDATE sq_sessions SET header_json = '{' WHERE id = 'old-damaged'")
    # The damaged header is no session shown: the newest page, its count and short ids hold.
    assert main(["list", "--postgres", postgres_dsn, "--limit", "2", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["total"] == 4
    assert [(s["id"], s["short_id"]) for s in listed["sessions"]] == [
        ("child-1", "fe5e1c67-root/1"),
        ("fe5e1c67-other", "fe5e1c67-other"),
    ]
    assert (
        main(["list", "--postgres", postgres_dsn, "--cwd", "/repo", "--limit", "1", "--json"]) == 0
    )
    in_repo = json.loads(capsys.readouterr().out)
    assert (in_repo["total"], in_repo["sessions"][0]["id"]) == (3, "fe5e1c67-other")
    assert main(["show", "fe5e1c67-root/1", "--postgres", postgres_dsn, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["session"]["id"] == "child-1"
    # A listing that shows the damaged session reports it.
    assert main(["list", "--postgres", postgres_dsn, "--all"]) != 0
    assert "'old-damaged' header" in capsys.readouterr().err
