"""The redacting live store: live sessions seen masked, each event redacted once."""

from __future__ import annotations

from pathlib import Path

from secret_history import PLANTED
from sessionquery import JsonlPersistence, SessionStore
from sessionquery.model.messages import turn_start, user_message
from sessionquery.redact import RedactingLiveStore, default_redactor

(_SLACK,) = (p for p in PLANTED if p.rule == "slack-token")


def test_live_sessions_are_seen_redacted_and_grow_with_the_same_event_objects(
    tmp_path: Path,
) -> None:
    store = SessionStore(JsonlPersistence(tmp_path / "store"))
    session = store.create("live-1", cwd="/w")
    session.append("turn/start", turn_start(0))
    session.append("user/message", user_message(_SLACK.context, id="m0"), surface_op="append")
    live = RedactingLiveStore(store, default_redactor())
    first = live.get("live-1")
    assert first is not None
    assert first.events[1].data["content"][0]["text"].endswith("[REDACTED:slack-token]")
    assert first.events[0] is session.events[0]
    session.append("user/message", user_message("and again", id="m1"), surface_op="append")
    (second,) = live.sessions()
    assert len(second.events) == 3
    assert second.events[1] is first.events[1]
    assert second.header == session.header
    assert live.get("absent") is None
    store.close("live-1")
    assert live.sessions() == []
