"""A deterministic event stream shared by the crash tests and their child processes.

Parent and child compute the same events from the session id alone, so after a kill the
parent knows exactly what every stored line must be. Each turn is six events: ``turn/start``,
``user/message``, ``step/start``, ``assistant/message``, ``step/end``, ``turn/end``; texts carry
the session id, the turn number and a word from a small vocabulary so searches have many
hits across sessions.
"""

from __future__ import annotations

from sessionquery.model import SessionEvent, SessionHeader, messages

__all__ = ["EVENTS_PER_TURN", "QUERIES", "WORDS", "event_at", "events", "header"]

EVENTS_PER_TURN = 6
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf")
QUERIES = ("alpha", "bravo charlie", "turn 3", "golf", "reply")
_T0 = 1_700_000_000_000


def header(session_id: str, cwd: str = "/work/crash") -> SessionHeader:
    """The header every test and child uses for ``session_id``."""
    return SessionHeader(id=session_id, created_at=_T0, cwd=cwd)


def event_at(session_id: str, seq: int) -> SessionEvent:
    """The event with ``seq`` of ``session_id``'s stream."""
    turn, phase = divmod(seq, EVENTS_PER_TURN)
    word = WORDS[turn % len(WORDS)]
    time = _T0 + seq
    if phase == 0:
        return SessionEvent("turn/start", seq, time, messages.turn_start(turn))
    if phase == 1:
        text = f"{word} {WORDS[(turn + 1) % len(WORDS)]} request {turn} for {session_id}"
        data = messages.user_message(text, id=f"m{seq}")
        return SessionEvent("user/message", seq, time, data, "append")
    if phase == 2:
        return SessionEvent("step/start", seq, time, messages.step_start(turn, 0))
    if phase == 3:
        text = f"reply to turn {turn}: {word} done " + "x" * (seq % 50)
        answer = messages.assistant_message(text, turn=turn, step=0)
        return SessionEvent("assistant/message", seq, time, answer, "append")
    if phase == 4:
        return SessionEvent("step/end", seq, time, messages.step_end(turn, 0))
    return SessionEvent("turn/end", seq, time, messages.turn_end(turn))


def events(session_id: str, start: int, stop: int) -> list[SessionEvent]:
    """Events ``start .. stop - 1`` of ``session_id``'s stream."""
    return [event_at(session_id, seq) for seq in range(start, stop)]
