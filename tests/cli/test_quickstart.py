"""``sessionquery quickstart`` run again and on a root it does not own (in process; the first
run on an empty home is in ``test_main.py``, through a real process)."""

from __future__ import annotations

from cli_support import Cli


def test_quickstart_rerun_recreates_the_sample_and_leaves_other_data_alone(cli: Cli) -> None:
    store = cli.data / "sessions"
    store.mkdir(parents=True)
    (store / "keep.txt").write_text("user data", encoding="utf-8")
    first = cli("quickstart")
    sessions = cli.data / "quickstart" / "sessions"
    before = {p.name: p.read_bytes() for p in sessions.glob("*.jsonl")}
    second = cli("quickstart")
    assert first.status == second.status == 0, second.err
    assert {p.name: p.read_bytes() for p in sessions.glob("*.jsonl")} == before
    assert [p.name for p in store.iterdir()] == ["keep.txt"]
    assert first.out == second.out


def test_quickstart_refuses_a_root_that_holds_other_data(cli: Cli) -> None:
    root = cli.home / "mine"
    root.mkdir()
    (root / "notes.md").write_text("keep", encoding="utf-8")
    ran = cli("quickstart", "--root", str(root))
    assert ran.status == 1
    ran.error_line("SESSION_QUERY_INVALID_CONFIG")
    assert [p.name for p in root.iterdir()] == ["notes.md"]
