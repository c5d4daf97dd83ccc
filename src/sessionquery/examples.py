"""Bundled example sessions: a small, realistic history to try sessionquery on.

Five coding-agent sessions in two workspaces, built through the public API
(``SessionStore(JsonlPersistence(root), clock=...)``) so the files on disk are exactly what a
real recorder writes:

* ``billing-rounding`` (``/home/dev/src/billing-api``): fixes a flaky rounding test over three
  turns; its second turn delegates to a subagent, then the early history is **compacted** (a
  summary ``user/message`` replaces the run of messages it summarises);
* ``billing-rounding-scan``: the **subagent** (``origin="subagent"``, depth 1) that scanned the
  code base for float rounding;
* ``billing-rounding-bankers``: a **fork** of ``billing-rounding`` after its first turn,
  trying banker's rounding instead;
* ``dashboard-dark-mode`` and ``dashboard-websocket`` (``/home/dev/src/web-dashboard``): an
  unrelated workspace, so workspace scoping has something to hide.

Invariants: building is deterministic (a fixed clock and fixed ids give byte-identical
files on every run) and writes only the sessions listed in :data:`EXAMPLE_SESSION_IDS`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sessionquery.errors import ErrorCode, PersistenceError, SessionQueryError
from sessionquery.live import Session, SessionStore
from sessionquery.model import Replace, messages
from sessionquery.persistence import JsonlPersistence

__all__ = [
    "BILLING_WORKSPACE",
    "DASHBOARD_WORKSPACE",
    "EXAMPLE_SESSION_IDS",
    "ExampleCall",
    "ExampleStep",
    "ExampleTurn",
    "build_examples",
    "ensure_example_store",
]

BILLING_WORKSPACE = "/home/dev/src/billing-api"
"""The recorded cwd of the three billing sessions."""

DASHBOARD_WORKSPACE = "/home/dev/src/web-dashboard"
"""The recorded cwd of the two dashboard sessions."""

EXAMPLE_SESSION_IDS = (
    "billing-rounding",
    "billing-rounding-scan",
    "billing-rounding-bankers",
    "dashboard-dark-mode",
    "dashboard-websocket",
)
"""Every session id :func:`build_examples` writes, in creation order."""

_START_MS = 1_741_338_000_000  # 2025-03-07T09:00:00Z
_DAY_MS = 86_400_000
_EVENT_STEP_MS = 4_000


@dataclass(frozen=True, slots=True)
class ExampleCall:
    """One tool call of an example step and the output the tool returned."""

    name: str
    arguments: dict[str, object]
    output: str
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class ExampleStep:
    """One model step: the assistant's text and the tool calls it made."""

    text: str
    calls: tuple[ExampleCall, ...] = ()


@dataclass(frozen=True, slots=True)
class ExampleTurn:
    """One user request and the steps the agent took to answer it."""

    user: str
    steps: tuple[ExampleStep, ...]
    todos: tuple[tuple[str, str], ...] = ()


class _Clock:
    """A deterministic clock: every reading advances by a fixed step."""

    def __init__(self, start_ms: int) -> None:
        self.now = start_ms

    def jump(self, ms: int) -> None:
        self.now = max(self.now, ms)

    def __call__(self) -> int:
        value = self.now
        self.now += _EVENT_STEP_MS
        return value


@dataclass
class _Recorder:
    """Appends well-formed turns to one live session and tracks its surface."""

    session: Session
    turn: int = 0
    surface: list[int] = field(default_factory=list)
    call_count: int = 0

    def _surface_append(self, event_type: str, data: object) -> int:
        seq = self.session.append(event_type, data, surface_op="append").seq
        self.surface.append(seq)
        return seq

    def record(self, turn: ExampleTurn) -> int:
        """Append one whole turn; returns the seq of its ``user/message``."""
        number = self.turn
        self.turn += 1
        self.session.append("turn/start", messages.turn_start(number))
        user_seq = self._surface_append(
            "user/message", messages.user_message(turn.user, id=f"{self.session.id}-u{number}")
        )
        if turn.todos:
            self.session.append("todo/write", messages.todo_write(turn.todos))
        for step_number, step in enumerate(turn.steps):
            self._record_step(number, step_number, step)
        self.session.append("turn/end", messages.turn_end(number))
        return user_seq

    def _record_step(self, turn: int, step: int, example: ExampleStep) -> None:
        self.session.append("step/start", messages.step_start(turn, step))
        blocks: list[messages.ToolCallBlock] = []
        for call in example.calls:
            self.call_count += 1
            call_id = f"call_{self.session.id}_{self.call_count}"
            blocks.append(messages.tool_call_block(call_id, call.name, call.arguments))
        self._surface_append(
            "assistant/message",
            messages.assistant_message(example.text, turn=turn, step=step, tool_calls=blocks),
        )
        for block, call in zip(blocks, example.calls, strict=True):
            self.session.append("tool/call", messages.tool_call(block, turn=turn, step=step))
            result = messages.tool_result(
                call.output, call_id=block["id"], turn=turn, step=step, is_error=call.is_error
            )
            self._surface_append("tool/result", result)
        self.session.append("step/end", messages.step_end(turn, step))

    def title(self, title: str, message_seqs: Sequence[int]) -> None:
        """Name the session, as a title generator would after the first turn."""
        self.session.append("session/title", messages.session_title(title, message_seqs))

    def compact(self, summary: str) -> int:
        """Replace the whole current surface with one summary message; returns its seq."""
        removed = list(self.surface)
        event = self.session.append(
            "user/message",
            messages.user_message(summary, id=f"{self.session.id}-compaction", source="compaction"),
            surface_op=Replace(removed[0], removed[-1]),
            source_event_seqs=removed,
        )
        self.surface = [event.seq]
        return event.seq


# --- the conversations -------------------------------------------------------------------

_ROUNDING_TURN_1 = ExampleTurn(
    user=(
        "test_invoice_total_rounding fails about once in ten CI runs. "
        "Can you find out why it is flaky and fix it?"
    ),
    steps=(
        ExampleStep(
            "Let me run the test repeatedly to reproduce the failure.",
            (
                ExampleCall(
                    "bash",
                    {"command": "pytest tests/test_invoices.py -k rounding --count 20 -q"},
                    "F...................\n"
                    "FAILED tests/test_invoices.py::test_invoice_total_rounding - "
                    "AssertionError: assert Decimal('10.01') == Decimal('10.00')\n"
                    "1 failed, 19 passed in 2.31s",
                ),
            ),
        ),
        ExampleStep(
            "The failure comes from float rounding in compute_total: line items are summed "
            "as floats before the Decimal conversion, so 3 x 3.335 sometimes rounds up. The "
            "test is only flaky because the fixture shuffles the line items. I will sum the "
            "items as Decimal and quantize once with ROUND_HALF_UP.",
            (
                ExampleCall(
                    "edit_file",
                    {
                        "path": "billing/invoices.py",
                        "old": "total = round(sum(item.amount for item in items), 2)",
                        "new": "total = sum((item.amount for item in items), Decimal(0))"
                        ".quantize(CENT, rounding=ROUND_HALF_UP)",
                    },
                    "Applied 1 edit to billing/invoices.py",
                ),
                ExampleCall(
                    "bash",
                    {"command": "pytest tests/test_invoices.py -k rounding --count 50 -q"},
                    "..................................................\n50 passed in 4.02s",
                ),
            ),
        ),
        ExampleStep(
            "Fixed. compute_total now sums line items as Decimal and rounds once with "
            "ROUND_HALF_UP; 50 repeated runs of test_invoice_total_rounding pass."
        ),
    ),
)

_ROUNDING_TURN_2 = ExampleTurn(
    user="Do other parts of billing/ still round money with float round()?",
    steps=(
        ExampleStep(
            "I will ask a subagent to scan billing/ for float rounding while I keep context small.",
            (
                ExampleCall(
                    "task",
                    {
                        "agent": "explorer",
                        "session": "billing-rounding-scan",
                        "prompt": "Find every place in billing/ that rounds money with float "
                        "round() instead of Decimal.quantize.",
                    },
                    "Two places still use float round(): billing/refunds.py:42 "
                    "(partial refund amount) and billing/reports.py:88 (monthly totals).",
                ),
            ),
        ),
        ExampleStep(
            "Yes: billing/refunds.py:42 rounds partial refunds with float round(), and "
            "billing/reports.py:88 does the same for monthly totals. Both can drift by a cent."
        ),
    ),
    todos=(
        ("Scan billing/ for float round()", "in_progress"),
        ("Fix refunds.py rounding", "pending"),
    ),
)

_ROUNDING_COMPACTION = (
    "Summary of the conversation so far: test_invoice_total_rounding was flaky because "
    "compute_total in billing/invoices.py summed line items as floats; it now sums Decimal "
    "amounts and quantizes once with ROUND_HALF_UP (50 repeated runs pass). A scan found float "
    "round() still used in billing/refunds.py:42 and billing/reports.py:88."
)

_ROUNDING_TURN_3 = ExampleTurn(
    user="Fix refunds.py and reports.py the same way, then run the whole suite.",
    steps=(
        ExampleStep(
            "Applying the same Decimal quantize fix to both files.",
            (
                ExampleCall(
                    "edit_file",
                    {
                        "path": "billing/refunds.py",
                        "old": "amount = round(total * ratio, 2)",
                        "new": "amount = (total * ratio).quantize(CENT, rounding=ROUND_HALF_UP)",
                    },
                    "Applied 1 edit to billing/refunds.py",
                ),
                ExampleCall(
                    "edit_file",
                    {
                        "path": "billing/reports.py",
                        "old": "month_total = round(month_total, 2)",
                        "new": "month_total = month_total.quantize(CENT, rounding=ROUND_HALF_UP)",
                    },
                    "Applied 1 edit to billing/reports.py",
                ),
                ExampleCall("bash", {"command": "pytest -q"}, "212 passed in 14.80s"),
            ),
        ),
        ExampleStep(
            "Done: refunds and monthly reports now round with Decimal.quantize and "
            "ROUND_HALF_UP; the full suite passes (212 tests)."
        ),
    ),
)

_SCAN_TURN = ExampleTurn(
    user=(
        "Find every place in billing/ that rounds money with float round() instead of "
        "Decimal.quantize."
    ),
    steps=(
        ExampleStep(
            "Searching billing/ for calls to round().",
            (
                ExampleCall(
                    "grep",
                    {"pattern": "round\\(", "path": "billing/"},
                    "billing/refunds.py:42:    amount = round(total * ratio, 2)\n"
                    "billing/reports.py:88:        month_total = round(month_total, 2)\n"
                    "billing/invoices.py:17:from decimal import ROUND_HALF_UP, Decimal",
                ),
            ),
        ),
        ExampleStep(
            "Two places still use float round(): billing/refunds.py:42 (partial refund "
            "amount) and billing/reports.py:88 (monthly totals). invoices.py already uses "
            "Decimal."
        ),
    ),
)

_BANKERS_TURN = ExampleTurn(
    user="What if we used banker's rounding (ROUND_HALF_EVEN) for invoices instead?",
    steps=(
        ExampleStep(
            "Let me try ROUND_HALF_EVEN and compare against the finance fixtures.",
            (
                ExampleCall(
                    "edit_file",
                    {
                        "path": "billing/invoices.py",
                        "old": "rounding=ROUND_HALF_UP",
                        "new": "rounding=ROUND_HALF_EVEN",
                    },
                    "Applied 1 edit to billing/invoices.py",
                ),
                ExampleCall(
                    "bash",
                    {"command": "pytest tests/test_invoices.py -q"},
                    "FAILED tests/test_invoices.py::test_matches_finance_export - "
                    "AssertionError: assert Decimal('12.34') == Decimal('12.35')\n"
                    "1 failed, 37 passed in 1.12s",
                    is_error=True,
                ),
            ),
        ),
        ExampleStep(
            "Banker's rounding breaks test_matches_finance_export: the finance export rounds "
            "half up, so invoices must keep ROUND_HALF_UP to match it. I reverted the change."
        ),
    ),
)

_DARK_MODE_TURN = ExampleTurn(
    user="Add a dark mode toggle to the settings page and remember the choice.",
    steps=(
        ExampleStep(
            "Reading the settings page first.",
            (
                ExampleCall(
                    "read_file",
                    {"path": "src/settings/SettingsPage.tsx"},
                    'export function SettingsPage() {\n  return <Page title="Settings">'
                    "<LanguagePicker /></Page>;\n}",
                ),
            ),
        ),
        ExampleStep(
            "I added a ThemeToggle that stores the choice in localStorage under 'theme' and "
            "sets data-theme on the document root.",
            (
                ExampleCall(
                    "edit_file",
                    {"path": "src/settings/SettingsPage.tsx", "insert": "<ThemeToggle />"},
                    "Applied 1 edit to src/settings/SettingsPage.tsx",
                ),
                ExampleCall(
                    "bash",
                    {"command": "npm test -- settings"},
                    "FAIL src/settings/SettingsPage.test.tsx\n  1 snapshot failed.\n"
                    "Tests: 1 failed, 11 passed",
                    is_error=True,
                ),
            ),
        ),
        ExampleStep(
            "The snapshot changed only by the new toggle, so I updated it.",
            (
                ExampleCall(
                    "bash",
                    {"command": "npm test -- settings -u"},
                    "PASS src/settings/SettingsPage.test.tsx\n  1 snapshot updated.\n"
                    "Tests: 12 passed",
                ),
            ),
        ),
        ExampleStep(
            "Dark mode is in: the settings page has a toggle, the choice persists in "
            "localStorage and all 12 settings tests pass."
        ),
    ),
    todos=(("Add ThemeToggle to settings", "in_progress"), ("Update snapshot", "pending")),
)

_WEBSOCKET_TURN = ExampleTurn(
    user=(
        "The live revenue chart reconnects its websocket every 30 seconds in production. "
        "Why, and can you stop it?"
    ),
    steps=(
        ExampleStep(
            "Checking the client heartbeat and the proxy timeout.",
            (
                ExampleCall(
                    "grep",
                    {"pattern": "heartbeat|idle_timeout", "path": "."},
                    "src/live/socket.ts:12:const HEARTBEAT_MS = 45_000;\n"
                    "deploy/nginx.conf:31:    proxy_read_timeout 30s;",
                ),
            ),
        ),
        ExampleStep(
            "The proxy closes idle connections after 30 seconds (proxy_read_timeout 30s) but "
            "the client only sends a heartbeat every 45 seconds, so every connection is cut "
            "and reconnected. I lowered HEARTBEAT_MS to 20 seconds.",
            (
                ExampleCall(
                    "edit_file",
                    {
                        "path": "src/live/socket.ts",
                        "old": "HEARTBEAT_MS = 45_000",
                        "new": "HEARTBEAT_MS = 20_000",
                    },
                    "Applied 1 edit to src/live/socket.ts",
                ),
            ),
        ),
        ExampleStep(
            "Fixed: the websocket heartbeat (20 s) is now shorter than the proxy read timeout "
            "(30 s), so the revenue chart keeps its connection."
        ),
    ),
)


def _build_billing(store: SessionStore, clock: _Clock) -> None:
    main = _Recorder(store.create("billing-rounding", cwd=BILLING_WORKSPACE))
    first_user = main.record(_ROUNDING_TURN_1)
    fork_point = len(main.session.events) - 1
    main.title("Fix flaky invoice rounding test", [first_user])

    fork = _Recorder(
        store.fork("billing-rounding", fork_point, session_id="billing-rounding-bankers")
    )
    fork.turn = 1
    fork_user = fork.record(_BANKERS_TURN)
    fork.title("Try banker's rounding for invoices", [fork_user])
    store.close(fork.session.id)

    clock.jump(clock.now + 60_000)
    scan = _Recorder(
        store.create(
            "billing-rounding-scan",
            cwd=BILLING_WORKSPACE,
            parent_session="billing-rounding",
            origin="subagent",
            delegation_depth=1,
            agent_preset="explorer",
        )
    )
    scan_user = scan.record(_SCAN_TURN)
    scan.title("Find float rounding in billing/", [scan_user])
    store.close(scan.session.id)

    main.record(_ROUNDING_TURN_2)
    main.compact(_ROUNDING_COMPACTION)
    main.record(_ROUNDING_TURN_3)
    store.close(main.session.id)


def _build_dashboard(store: SessionStore, clock: _Clock) -> None:
    clock.jump(_START_MS + _DAY_MS)
    dark = _Recorder(store.create("dashboard-dark-mode", cwd=DASHBOARD_WORKSPACE))
    dark_user = dark.record(_DARK_MODE_TURN)
    dark.title("Add a dark mode toggle to settings", [dark_user])
    store.close(dark.session.id)

    clock.jump(_START_MS + 2 * _DAY_MS)
    socket = _Recorder(store.create("dashboard-websocket", cwd=DASHBOARD_WORKSPACE))
    socket_user = socket.record(_WEBSOCKET_TURN)
    socket.title("Debug websocket reconnect loop", [socket_user])
    store.close(socket.session.id)


def build_examples(root: Path) -> list[str]:
    """Write the example sessions into the JSONL store at ``root``.

    The store must not already hold any of :data:`EXAMPLE_SESSION_IDS`; the caller chooses
    an empty directory (``sessionquery quickstart`` builds into a fresh one and swaps it in).

    Args:
        root: the JSONL store directory (created if missing).

    Returns:
        The ids written, in creation order.

    Raises:
        ValueError | OSError | PersistenceError: the store refused a session.
    """
    clock = _Clock(_START_MS)
    store = SessionStore(JsonlPersistence(root), clock=clock)
    try:
        _build_billing(store, clock)
        _build_dashboard(store, clock)
    finally:
        store.close_all()
    return list(EXAMPLE_SESSION_IDS)


def _is_example_store(root: Path) -> bool:
    """Whether ``root`` holds nothing but (some of) the example sessions and store internals."""
    entries = [entry for entry in root.iterdir() if not entry.name.startswith(".")]
    if any(not entry.is_file() or entry.suffix != ".jsonl" for entry in entries):
        return False
    try:
        listed = JsonlPersistence(root).list()
    except (OSError, PersistenceError):
        return False
    return len(listed) == len(entries) and all(
        item.header.id in EXAMPLE_SESSION_IDS for item in listed
    )


def ensure_example_store(root: Path) -> list[str]:
    """Create (or cleanly recreate) a JSONL store at ``root`` holding exactly the examples.

    The new store is built in a fresh sibling directory and then swapped in, so a failure
    leaves the previous state untouched. An existing ``root`` is replaced only when it is
    empty or holds nothing but example sessions; anything else is refused, so no other data
    is ever touched.

    Args:
        root: the store directory to create or refresh.

    Returns:
        The ids written, in creation order.

    Raises:
        SessionQueryError: ``INVALID_CONFIG`` when ``root`` exists and holds other data;
            ``PERSISTENCE_FAILED`` when the store cannot be written. Its ``context`` holds
            the store directory as ``path``.
    """
    root = root.absolute()
    if root.exists() and not (root.is_dir() and _is_example_store(root)):
        raise SessionQueryError(
            ErrorCode.INVALID_CONFIG,
            f"{root} already exists and holds more than the example sessions; "
            "choose an empty or new directory for the sample store",
            context={"path": str(root)},
        )
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{root.name}.new-", dir=root.parent))
    except OSError as error:
        raise _write_failed(root, error) from error
    try:
        written = build_examples(staging)
        _swap_in(staging, root)
    except (OSError, PersistenceError, ValueError) as error:
        raise _write_failed(root, error) from error
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return written


def _write_failed(root: Path, error: Exception) -> SessionQueryError:
    return SessionQueryError(
        ErrorCode.PERSISTENCE_FAILED,
        f"cannot create the sample store at {root}: {error}",
        context={"path": str(root)},
    )


def _swap_in(staging: Path, root: Path) -> None:
    if not root.exists():
        os.rename(staging, root)
        return
    trash = Path(tempfile.mkdtemp(prefix=f".{root.name}.old-", dir=root.parent))
    try:
        os.rename(root, trash / "store")
        try:
            os.rename(staging, root)
        except OSError:
            os.rename(trash / "store", root)  # put the previous sample store back
            raise
    finally:
        shutil.rmtree(trash, ignore_errors=True)
