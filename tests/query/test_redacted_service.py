"""``SessionQuery(..., redactor=...)``: every read, title, live session and search answer is
masked, the index holds only masked text, and a ruleset change re-redacts an existing index on
the next search."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from conftest import Storage
from secret_history import PLANTED
from sessionquery import JsonlPersistence, SessionQuery, SessionStore, TextContains
from sessionquery.model.messages import turn_end, turn_start, user_message
from sessionquery.redact import Redactor, default_redactor, load_ruleset
from sessionquery.search.sqlite import SqliteSearch

_BY_RULE = {planted.rule: planted for planted in PLANTED}
_STRIPE, _NPM = _BY_RULE["stripe-live-key"], _BY_RULE["npm-token"]


def _record(persistence: JsonlPersistence, session_id: str, *texts: str) -> None:
    store = SessionStore(persistence)
    session = store.create(session_id, cwd="/home/dev/app")
    session.append("turn/start", turn_start(0))
    for number, text in enumerate(texts):
        session.append("user/message", user_message(text, id=f"m{number}"), surface_op="append")
    session.append("turn/end", turn_end(0))
    store.close(session_id)


def _index_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.parent.iterdir() if p.name.startswith(path.name))


def test_every_read_of_a_redacting_service_is_masked(tmp_path: Path) -> None:
    persistence = JsonlPersistence(tmp_path / "store")
    _record(persistence, "s1", f"deploy with {_STRIPE.context}", "and npm: " + _NPM.context)
    with SessionQuery(persistence=persistence, redactor=default_redactor()) as query:
        reads = [
            query.read_session("s1"),
            query.read_event("s1", 1, after=2),
            query.read_surface("s1"),
            query.filter_events("s1", [TextContains("deploy")]),
            query.read_title_snapshots(["s1"]),
        ]
    shown = repr(reads)
    assert _STRIPE.value not in shown and _NPM.value not in shown
    assert "[REDACTED:stripe-live-key]" in shown and "[REDACTED:npm-token]" in shown


def test_without_a_redactor_a_programs_own_sessions_read_as_stored(tmp_path: Path) -> None:
    persistence = JsonlPersistence(tmp_path / "store")
    _record(persistence, "s1", _STRIPE.context)
    event = SessionQuery(persistence=persistence).read_event("s1", 1).target
    assert event.data["content"][0]["text"] == _STRIPE.context


def test_live_sessions_are_read_and_indexed_masked(tmp_path: Path) -> None:
    persistence = JsonlPersistence(tmp_path / "store")
    store = SessionStore(persistence)
    session = store.create("live-1", cwd="/home/dev/app")
    session.append("turn/start", turn_start(0))
    prompt = user_message(f"live {_STRIPE.context}", id="m0")
    session.append("user/message", prompt, surface_op="append")
    index = tmp_path / "index.sqlite3"
    with SessionQuery(
        store, persistence, search=SqliteSearch(index), redactor=default_redactor()
    ) as query:
        assert _STRIPE.value not in repr(query.read_session("live-1"))
        (hit,) = query.search_sessions("stripe api_key").items
        assert hit.record.live and "[REDACTED:stripe-live-key]" in hit.best_match.snippet
        assert query.search_sessions(_STRIPE.value).items == []
    store.close("live-1")


def test_the_index_holds_no_secret_and_a_secret_is_not_searchable(tmp_path: Path) -> None:
    persistence = JsonlPersistence(tmp_path / "store")
    _record(persistence, "s1", f"deploy with {_STRIPE.context}")
    index = tmp_path / "index.sqlite3"
    with SessionQuery(
        persistence=persistence, search=SqliteSearch(index), redactor=default_redactor()
    ) as query:
        (hit,) = query.search_sessions("deploy").items
        assert "[REDACTED:stripe-live-key]" in hit.best_match.snippet
        assert query.search_sessions(_STRIPE.value).items == []
        assert query.search_events("s1", _STRIPE.value).items == []
    assert _STRIPE.value.encode() not in _index_bytes(index)


def test_a_known_value_added_after_indexing_is_masked_in_snippets(tmp_path: Path) -> None:
    persistence = JsonlPersistence(tmp_path / "store")
    _record(persistence, "s1", "the staging password is plain-old-value-42 for now")
    index = tmp_path / "index.sqlite3"
    with SessionQuery(
        persistence=persistence, search=SqliteSearch(index), redactor=default_redactor()
    ) as query:
        assert "plain-old-value-42" in query.search_sessions("staging").items[0].best_match.snippet
    later = default_redactor({"STAGING_PASSWORD": "plain-old-value-42"})
    with SessionQuery(persistence=persistence, search=SqliteSearch(index), redactor=later) as query:
        (hit,) = query.search_sessions("staging").items
        assert hit.best_match.snippet == "the staging password is [REDACTED:known-value] for now"
        (event_hit,) = query.search_events("s1", "staging").items
        assert "plain-old-value-42" not in event_hit.snippet


def _bundled_rules(version: int, *, without: str | None = None) -> Redactor:
    """The bundled rules as version ``version``, optionally without one rule."""
    text = resources.files("sessionquery.redact").joinpath("rules.toml").read_text("utf-8")
    head, *blocks = text.split("[[rules]]")
    kept = [block for block in blocks if f'name = "{without}"' not in block]
    assert len(kept) == len(blocks) - (without is not None)
    head = head.replace("\nversion = 1\n", f"\nversion = {version}\n")
    ruleset = load_ruleset("[[rules]]".join([head, *kept]))
    assert ruleset.version == version
    return Redactor(ruleset)


def _search_and_snippet(storage: Storage, redactor: Redactor) -> str:
    with SessionQuery(
        persistence=storage.persistence, search=storage.search(), redactor=redactor
    ) as query:
        (hit,) = query.search_sessions("deploy").items
        return hit.best_match.snippet


def _record_into(storage: Storage, session_id: str, text: str) -> None:
    store = SessionStore(storage.persistence)
    session = store.create(session_id, cwd="/home/dev/app")
    session.append("turn/start", turn_start(0))
    session.append("user/message", user_message(text, id="m0"), surface_op="append")
    session.append("turn/end", turn_end(0))
    store.close(session_id)


def test_a_ruleset_version_change_re_redacts_an_existing_index_on_the_next_search(
    storage: Storage,
) -> None:
    secret = _STRIPE.value
    _record_into(storage, "s1", f"deploy with {secret} today")
    older = _bundled_rules(1, without="stripe-live-key")
    newer = _bundled_rules(2)
    assert older.fingerprint != newer.fingerprint
    assert _search_and_snippet(storage, older) == f"deploy with {secret} today"
    assert _search_and_snippet(storage, newer) == "deploy with [REDACTED:stripe-live-key] today"
    with SessionQuery(
        persistence=storage.persistence, search=storage.search(), redactor=newer
    ) as query:
        assert query.search_sessions(secret).items == []
        assert query.search_sessions("stripe-live-key redacted", match="words").items
    if storage.backend == "sqlite":  # secure_delete: the file keeps no copy of the old text
        files = [p for p in storage.root.iterdir() if p.name.startswith("index.sqlite")]
        assert files and all(secret.encode() not in p.read_bytes() for p in files)
