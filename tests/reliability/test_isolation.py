"""Workspace isolation under attack: random corpora, random callers, random tool calls.

A hypothesis state machine builds a corpus across look-alike workspaces (trailing slash,
``..`` and ``.`` segments, a symlink to the same directory, case differences, prefix paths and
no workspace at all): live and persisted sessions, forks and subagents that cross workspaces,
compactions, titles. Every session carries a unique marker word (``tok<n>x``) in its id, its
title and every text it writes; a fork copies its source's texts, so it carries the source's
markers too. Random callers then run random tool calls with random, often malformed,
arguments.

Invariants checked after every call:

* ``call`` returns a :class:`ToolResult`, never raises;
* a marker appears in the result only if a session the caller may see carries it (its own
  session in its own workspace, or any session whose ``cwd`` is the caller's exact ``cwd``
  string), or the caller wrote it into the arguments itself;
* a call that names an existing session outside the caller's reach returns exactly the bytes
  the same call returns for an id that never existed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import event as note_outcome
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    precondition,
    rule,
)

from reliability.stats import profile_examples, record
from sessionquery.errors import ToolErrorCode
from sessionquery.live import Session, SessionStore
from sessionquery.model import SessionEvent, SessionHeader
from sessionquery.persistence.jsonl import JsonlPersistence
from sessionquery.query.service import SessionQuery
from sessionquery.search.sqlite import SqliteSearch
from sessionquery.tools import SessionQueryTools, ToolCaller, ToolResult
from sessionquery.tools.specs import TOOL_NAMES
from strategies import LogBuilder

MARKER = re.compile(r"tok\d+x")
SHARED_WORDS = ("deploy", "login test", "migration", "deploy the service")
ID_PREFIXES = ("", "a/", "../", "ü-", " lead ", "UPPER-", "x" * 40)
TARGET_TOOLS = (
    "session_event_search",
    "session_trace",
    "session_event_trace",
    "session_event_read",
)


@dataclass
class Recorded:
    """What the test knows about one session it created."""

    id: str
    cwd: str | None
    markers: set[str]
    log: LogBuilder = field(default_factory=LogBuilder)
    live: bool = True


def _look_alike_workspaces(base: str) -> list[str | None]:
    """Workspaces that a careless comparison would confuse; all distinct as strings."""
    os.makedirs(os.path.join(base, "proj", "sub"))
    os.makedirs(os.path.join(base, "x"))
    os.symlink(os.path.join(base, "proj"), os.path.join(base, "link"))
    return [
        f"{base}/proj",
        f"{base}/proj/",
        f"{base}/x/../proj",
        f"{base}/./proj",
        f"{base}/PROJ",
        f"{base}/link",
        f"{base}/proj2",
        f"{base}/pro",
        f"{base}/proj/sub",
        None,
    ]


def _replay(session: Session, events: list[SessionEvent]) -> None:
    for event in events:
        session.append(
            event.type,
            event.data,
            surface_op=event.surface_op,
            source_event_seqs=event.source_event_seqs,
            ignorable=event.ignorable,
        )


def _turn_events(
    log: LogBuilder, marker: str, word: str, *, close: bool = True
) -> list[SessionEvent]:
    """One turn that mentions ``marker`` everywhere it writes text."""
    start = len(log.events)
    log.turn_start()
    user_seq = log.user(f"please {word} for {marker}").seq
    log.step_start()
    call_id = log.new_call_id()
    arguments = json.dumps({"command": f"run {marker}"})
    log.assistant(f"I will {word} {marker}", calls=[(call_id, "shell", arguments)])
    call_seq = log.tool_call(call_id, "shell", arguments).seq
    log.tool_result(call_id, f"{word} finished {marker}", call_seq=call_seq)
    if close:
        log.step_end()
        log.turn_end()
        log.title(f"Plan {word} {marker}", [user_seq])
    else:
        log.step_start()  # left running: the caller's current step
    return log.events[start:]


json_scalars = (
    st.none() | st.booleans() | st.integers(-3, 2**64) | st.floats() | st.text(max_size=8)
)


class IsolationMachine(RuleBasedStateMachine):
    """Random corpora across workspaces, driven through the five tools by random callers."""

    sessions = Bundle("sessions")

    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.mkdtemp(prefix="sq-iso-")
        self.workspaces = _look_alike_workspaces(os.path.join(self.tmp, "ws"))
        self.persistence = JsonlPersistence(os.path.join(self.tmp, "store"))
        self.store = SessionStore(self.persistence)
        self.search = SqliteSearch(os.path.join(self.tmp, "index.sqlite"))
        self.query = SessionQuery(self.store, self.persistence, self.search)
        self.tools = SessionQueryTools(self.query, max_search_results=7)
        self.known: dict[str, Recorded] = {}
        self.counter = 0
        self.calls = 0
        self.probes = 0

    def teardown(self) -> None:
        record("isolation", tool_calls=self.calls, foreign_probes=self.probes, examples=1)
        self.store.close_all()
        self.search.close()
        self.query.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- corpus ----------------------------------------------------------------------------

    def _new_marker(self) -> str:
        self.counter += 1
        return f"tok{self.counter}x"

    def _start(
        self,
        prefix: str,
        cwd: str | None,
        *,
        parent: str | None = None,
        origin: str | None = None,
        seed: list[SessionEvent] | None = None,
        inherited: set[str] | None = None,
    ) -> tuple[Recorded, Session]:
        marker = self._new_marker()
        rec = Recorded(id=f"{prefix}{marker}", cwd=cwd, markers={marker, *(inherited or ())})
        session = self.store.create(
            rec.id,
            cwd=cwd,
            parent_session=parent,
            origin=origin,
            delegation_depth=1 if origin == "subagent" else 0,
            seed=tuple(seed or ()),
        )
        for event in seed or ():
            rec.log.add(
                event.type,
                event.data,
                surface_op=event.surface_op,
                sources=event.source_event_seqs,
                ignorable=event.ignorable,
            )
        self.known[rec.id] = rec
        return rec, session

    def _finish(self, rec: Recorded, session: Session, persist: bool, running: bool) -> None:
        marker = self._own(rec)
        word = SHARED_WORDS[self.counter % len(SHARED_WORDS)]
        _replay(session, _turn_events(rec.log, marker, word))
        if running:
            _replay(session, _turn_events(rec.log, marker, word, close=False))
        elif persist:
            self.store.close(rec.id)
            rec.live = False

    @staticmethod
    def _own(rec: Recorded) -> str:
        match = MARKER.findall(rec.id)
        return str(match[-1])

    @initialize(target=sessions)
    def first_session(self) -> str:
        rec, session = self._start("", self.workspaces[0])
        self._finish(rec, session, persist=True, running=False)
        return rec.id

    @rule(
        target=sessions,
        prefix=st.sampled_from(ID_PREFIXES),
        workspace=st.integers(0, 9),
        persist=st.booleans(),
        running=st.booleans(),
    )
    def create_session(self, prefix: str, workspace: int, persist: bool, running: bool) -> str:
        rec, session = self._start(prefix, self.workspaces[workspace])
        self._finish(rec, session, persist, running)
        return rec.id

    @rule(target=sessions, parent=sessions, workspace=st.integers(0, 9), persist=st.booleans())
    def create_subagent(self, parent: str, workspace: int, persist: bool) -> str:
        rec, session = self._start(
            "sub-", self.workspaces[workspace], parent=parent, origin="subagent"
        )
        self._finish(rec, session, persist, running=False)
        return rec.id

    def _live_records(self) -> list[Recorded]:
        return [self.known[s.id] for s in self.store.sessions()]

    @precondition(lambda self: bool(self._live_records()))
    @rule(target=sessions, data=st.data(), workspace=st.integers(0, 9), persist=st.booleans())
    def fork_across_workspaces(self, data: st.DataObject, workspace: int, persist: bool) -> str:
        src = data.draw(st.sampled_from(self._live_records()), label="source")
        source = src.id
        ends = [e.seq for e in src.log.events if e.type == "turn/end"]
        seed = src.log.events[: ends[0] + 1]
        rec, session = self._start(
            "fork-",
            self.workspaces[workspace],
            parent=source,
            origin="fork",
            seed=list(seed),
            inherited=src.markers,
        )
        self._finish(rec, session, persist, running=False)
        return rec.id

    @rule(target=sessions, workspace=st.integers(0, 9))
    def write_persisted_only(self, workspace: int) -> str:
        """A session written straight to the durable store, never live in this process."""
        marker = self._new_marker()
        rec = Recorded(id=f"disk-{marker}", cwd=self.workspaces[workspace], markers={marker})
        rec.live = False
        events = _turn_events(rec.log, marker, "migration")
        header = SessionHeader(id=rec.id, created_at=1_700_000_000_000, cwd=rec.cwd)
        with self.persistence.create(header) as handle:
            handle.append(events)
        self.known[rec.id] = rec
        return rec.id

    @precondition(lambda self: bool(self._live_records()))
    @rule(data=st.data(), lo=st.integers(0, 3), width=st.integers(0, 3))
    def compact(self, data: st.DataObject, lo: int, width: int) -> None:
        rec = data.draw(st.sampled_from(self._live_records()), label="session")
        live = self.store.get(rec.id)
        lo = min(lo, len(rec.log.surface) - 1)
        hi = min(lo + width, len(rec.log.surface) - 1)
        event = rec.log.compact(lo, hi, f"summary of {self._own(rec)} work")
        assert live is not None
        _replay(live, [event])

    @rule(target=sessions, session=consumes(sessions))
    def close_live(self, session: str) -> str:
        rec = self.known[session]
        if self.store.get(session) is not None:
            self.store.close(session)
            rec.live = False
        return session

    # -- attacks ---------------------------------------------------------------------------

    def _callers(self) -> st.SearchStrategy[ToolCaller]:
        """Mostly callers that sit in some session's workspace (where there is most to see)."""
        ids = st.sampled_from(sorted(self.known)) | st.just("never-tok999999x") | st.none()
        steps = st.none() | st.integers(0, 40)
        anywhere = st.builds(
            ToolCaller, session_id=ids, cwd=st.sampled_from(self.workspaces), current_step_seq=steps
        )
        beside = st.builds(
            ToolCaller,
            session_id=ids,
            cwd=st.sampled_from(sorted({r.cwd for r in self.known.values()}, key=str)),
            current_step_seq=steps,
        )
        choices = [beside, beside, anywhere]
        live = self.store.sessions()
        if live:
            choices.append(st.sampled_from(live).map(ToolCaller.for_session))
        return st.one_of(choices)

    def _arguments(self, name: str) -> st.SearchStrategy[Any]:
        ids = st.sampled_from(sorted(self.known)) | st.just("never-tok999999x")
        queries = (
            st.sampled_from([*SHARED_WORDS, *(MARKER.findall(" ".join(self.known)))])
            | st.text(max_size=12)
            | st.sampled_from(['"', "*", "deploy OR login", "tok", "NEAR(a b)", " "])
        )
        seqs = st.integers(0, 30) | json_scalars
        values: dict[str, st.SearchStrategy[Any]] = {
            "session_id": ids | json_scalars,
            "query": queries | json_scalars,
            "seq": seqs,
            "before": st.integers(0, 60) | json_scalars,
            "after": st.integers(0, 60) | json_scalars,
            "seq_from": seqs,
            "seq_to": seqs,
            "event_seq_from": seqs,
            "event_seq_to": seqs,
            "session_ids": st.lists(ids, max_size=3) | json_scalars,
            "parent_session_ids": st.lists(ids, max_size=3) | json_scalars,
            "include_root_sessions": st.booleans() | json_scalars,
            "availability": st.lists(st.sampled_from(["live", "persisted", "gone"]), max_size=2),
            "surfaces": st.lists(st.sampled_from(["current", "shadowed", "log-only"]), max_size=2),
            "event_types": st.lists(st.sampled_from(["tool/result", "user/message"]), max_size=2),
            "time_from": st.sampled_from(["2020-01-01T00:00:00Z", "yesterday", "2099-01-01"]),
            "created_at_to": st.sampled_from(["2099-01-01T00:00:00+02:00", "0"]),
            "bogus": json_scalars,
        }
        keys = st.lists(st.sampled_from(sorted(values)), unique=True, max_size=4)
        good = {
            "session_id": ids,
            "query": st.sampled_from([*SHARED_WORDS, *(MARKER.findall(" ".join(self.known)))]),
            "seq": st.integers(0, 14),
            "before": st.integers(0, 5),
            "after": st.integers(0, 5),
        }
        core = {
            "session_search": ["query"],
            "session_event_search": ["query", "session_id"],
            "session_trace": ["session_id"],
            "session_event_trace": ["session_id", "seq"],
            "session_event_read": ["session_id", "seq", "before", "after"],
        }[name]

        @st.composite
        def build(draw: st.DrawFn) -> Any:
            chosen = [k for k in core if draw(st.booleans()) or k in ("query", "seq")]
            if draw(st.integers(0, 3)) == 0:  # now and then, junk keys and values
                chosen += draw(keys)
                args = {k: draw(values[k]) for k in chosen}
                return args if draw(st.booleans()) else json.dumps(args)
            args = {k: draw(good[k]) for k in chosen}
            # SDKs hand over either a mapping or the raw JSON text.
            return args if draw(st.integers(0, 3)) else json.dumps(args)

        junk = st.sampled_from([None, "", "{", "[]", "null", '{"query": 5}'])
        return st.one_of(build(), build(), build(), junk)

    def _visible_markers(self, caller: ToolCaller) -> set[str]:
        allowed: set[str] = set()
        for rec in self.known.values():
            own = rec.id == caller.session_id and rec.cwd == caller.cwd
            if own or (caller.cwd is not None and rec.cwd == caller.cwd):
                allowed |= rec.markers
        return allowed

    def _check_no_leak(self, caller: ToolCaller, arguments: Any, result: ToolResult) -> None:
        assert isinstance(result, ToolResult)
        note_outcome(f"outcome: {result.code or 'ok'}")
        shown = set(MARKER.findall(result.text))
        allowed = self._visible_markers(caller) | set(MARKER.findall(repr(arguments)))
        leaked = shown - allowed
        assert not leaked, f"{caller} saw {leaked} in:\n{result.text}"

    def _is_foreign(self, session_id: object, caller: ToolCaller) -> bool:
        rec = self.known.get(session_id) if isinstance(session_id, str) else None
        if rec is None:
            return False
        if rec.id == caller.session_id:
            return rec.cwd != caller.cwd
        return caller.cwd is None or rec.cwd != caller.cwd

    @rule(data=st.data(), name=st.sampled_from([*TOOL_NAMES, *TOOL_NAMES, "session_delete"]))
    def call_tool(self, data: st.DataObject, name: str) -> None:
        caller = data.draw(self._callers(), label="caller")
        arguments = data.draw(self._arguments(name if name in TOOL_NAMES else "session_trace"))
        result = self.tools.call(name, arguments, caller)
        self.calls += 1
        self._check_no_leak(caller, arguments, result)
        if isinstance(arguments, dict) and self._is_foreign(arguments.get("session_id"), caller):
            self._check_probe_is_blind(name, arguments, caller, result)

    def _check_probe_is_blind(
        self, name: str, arguments: dict[str, Any], caller: ToolCaller, result: ToolResult
    ) -> None:
        missing = dict(arguments, session_id="never-stored-id")
        twin = self.tools.call(name, missing, caller)
        self.probes += 1
        assert result == twin, f"foreign {arguments['session_id']!r} differs from missing"

    @rule(data=st.data(), name=st.sampled_from(TARGET_TOOLS), victim=sessions)
    def probe_foreign_session(self, data: st.DataObject, name: str, victim: str) -> None:
        """A well-formed call aimed straight at one known session."""
        caller = data.draw(self._callers(), label="caller")
        arguments: dict[str, Any] = {"session_id": victim}
        if name == "session_event_search":
            arguments["query"] = data.draw(st.sampled_from(SHARED_WORDS))
        elif name != "session_trace":
            arguments["seq"] = data.draw(st.integers(0, 12))
        result = self.tools.call(name, arguments, caller)
        self.calls += 1
        self._check_no_leak(caller, arguments, result)
        if self._is_foreign(victim, caller):
            assert result.code == ToolErrorCode.UNAUTHORIZED.value
            self._check_probe_is_blind(name, arguments, caller, result)
        else:  # isolation must not cost access: a visible session is always reachable
            assert result.code != ToolErrorCode.UNAUTHORIZED.value, result.text
            if name == "session_trace":
                assert not result.is_error, result.text

    @rule(name=st.sampled_from(TARGET_TOOLS), victim=sessions, seq=st.integers(0, 12))
    def inspect_from_inside(self, name: str, victim: str, seq: int) -> None:
        """A caller in the session's own workspace: it must reach the session and see no
        more of its lineage than its workspace holds."""
        rec = self.known[victim]
        caller = ToolCaller(session_id=victim if rec.cwd is None else None, cwd=rec.cwd)
        arguments: dict[str, Any] = {"session_id": victim}
        if name == "session_event_search":
            arguments["query"] = SHARED_WORDS[seq % len(SHARED_WORDS)]
        elif name != "session_trace":
            arguments["seq"] = seq
        result = self.tools.call(name, arguments, caller)
        self.calls += 1
        self._check_no_leak(caller, arguments, result)
        assert result.code not in (ToolErrorCode.UNAUTHORIZED.value, ToolErrorCode.FAILED.value)
        if name == "session_trace":
            assert not result.is_error, result.text

    @invariant()
    def workspaces_are_distinct_strings(self) -> None:
        assert len(set(self.workspaces)) == len(self.workspaces)


IsolationMachine.TestCase.settings = settings(
    max_examples=profile_examples(),
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_no_tool_call_reveals_another_workspace = IsolationMachine.TestCase


def test_look_alike_workspaces_see_nothing_of_each_other(tmp_path: Any) -> None:
    """A fixed example of every look-alike pair: each caller sees only its exact string."""
    workspaces = _look_alike_workspaces(str(tmp_path / "ws"))
    persistence = JsonlPersistence(tmp_path / "store")
    store = SessionStore(persistence)
    with SqliteSearch(tmp_path / "index.sqlite") as search:
        query = SessionQuery(store, persistence, search)
        tools = SessionQueryTools(query)
        for number, cwd in enumerate(workspaces):
            log = LogBuilder()
            session = store.create(f"s-tok{number}x", cwd=cwd)
            _replay(session, _turn_events(log, f"tok{number}x", "deploy"))
            store.close(session.id)
        for number, cwd in enumerate(workspaces):
            caller = ToolCaller(cwd=cwd)
            found = tools.call("session_search", {"query": "deploy"}, caller)
            shown = set(MARKER.findall(found.text))
            if cwd is None:
                assert found.is_error
            else:
                assert shown == {f"tok{number}x"}, (cwd, found.text)
        query.close()


@pytest.mark.parametrize("name", TARGET_TOOLS)
def test_foreign_and_missing_targets_give_identical_bytes(tmp_path: Any, name: str) -> None:
    persistence = JsonlPersistence(tmp_path / "store")
    store = SessionStore(persistence)
    log = LogBuilder()
    session = store.create("secret-tok1x", cwd="/w/b")
    _replay(session, _turn_events(log, "tok1x", "deploy"))
    store.close(session.id)
    with SqliteSearch(tmp_path / "index.sqlite") as search:
        query = SessionQuery(store, persistence, search)
        tools = SessionQueryTools(query)
        extra: dict[str, Any] = {"query": "deploy"} if name == "session_event_search" else {}
        if name in ("session_event_trace", "session_event_read"):
            extra = {"seq": 1}
        caller = ToolCaller(session_id="me", cwd="/w/b/")
        foreign = tools.call(name, {"session_id": "secret-tok1x", **extra}, caller)
        missing = tools.call(name, {"session_id": "nothing-here", **extra}, caller)
        assert foreign.code == ToolErrorCode.UNAUTHORIZED.value
        assert foreign == missing
        query.close()


def test_a_caller_acting_as_a_session_of_another_workspace_does_not_see_its_id_as_a_parent(
    tmp_path: Any,
) -> None:
    """Regression (found by the state machine): ``session_search`` printed a hit's parent id
    whenever it was the caller's own id, even when that session's recorded cwd was another
    workspace, so a caller in ``/w/a`` acting as a session of ``/w/a/`` saw that session's id."""
    persistence = JsonlPersistence(tmp_path / "store")
    store = SessionStore(persistence)
    parent = store.create("parent-tok1x", cwd="/w/a/")
    _replay(parent, _turn_events(LogBuilder(), "tok1x", "deploy"))
    child = store.create("child-tok2x", cwd="/w/a", parent_session="parent-tok1x")
    _replay(child, _turn_events(LogBuilder(), "tok2x", "deploy"))
    with SqliteSearch(tmp_path / "index.sqlite") as search:
        query = SessionQuery(store, persistence, search)
        tools = SessionQueryTools(query)
        caller = ToolCaller(session_id="parent-tok1x", cwd="/w/a")
        found = tools.call("session_search", {"query": "deploy"}, caller)
        assert "child-tok2x" in found.text
        assert "tok1x" not in found.text
        assert "Parent: [outside" in found.text
        store.close_all()
        query.close()
