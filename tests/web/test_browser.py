"""The viewer in a real browser: Debian's Chromium, driven by Playwright, against a real
``sessionquery serve`` over the fixture history (``web_support``).

Every page is opened and photographed (``.screenshots/``, git-ignored); keyboard navigation,
a search hit landing on its event, the surface/log toggle, loading more of a long session,
live updates, the copy action, a hostile session that runs nothing, the Host check and the
exported file's search from ``file://`` are exercised as a person would.
"""

from __future__ import annotations

import http.client
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, expect, sync_playwright

from cli_support import CLAUDE_ID, CODEX_ID, make_agent_home
from sessionquery import JsonlPersistence, SessionStore
from sessionquery.model import messages as m
from sessionquery.web.session_page import FIRST_WINDOW, WINDOW
from web_support import (
    CHROMIUM_ARGS,
    HOSTILE_ID,
    HOSTILE_TEXT,
    LONG_ID,
    Served,
    chromium_path,
    make_history,
    run_cli,
    screenshot_dir,
    served,
)

pytestmark = pytest.mark.slow  # a real browser per test

WAIT_MS = 30_000
"""Bound on any wait for the page (polling runs every 3-5 s; the machine may be loaded)."""

expect.set_options(timeout=WAIT_MS)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("viewer")
    make_history(root)
    make_agent_home(root / "agents")
    return root


@pytest.fixture(scope="module")
def server(history: Path) -> Iterator[Served]:
    claude = history / "agents" / ".claude" / "projects"
    codex = history / "agents" / ".codex" / "sessions"
    with served(history, "--claude", str(claude), "--codex", str(codex)) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium_path(), args=list(CHROMIUM_ARGS), headless=True
        )
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(WAIT_MS)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))

    def console(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(message.text)

    opened.on("console", console)
    yield opened
    context.close()
    assert errors == [], errors  # no script error and no refused script, on any page


def at(server: Served, path: str) -> str:
    return server.url.rstrip("/") + path


def session_path(session_id: str, suffix: str = "") -> str:
    return f"/s/{quote(session_id, safe='')}{suffix}"


def shot(page: Page, name: str, *, full: bool = False) -> None:
    page.screenshot(path=str(screenshot_dir() / f"{name}.png"), full_page=full)


def no_script_ran(page: Page) -> None:
    assert page.evaluate("typeof window.__pwned") == "undefined"


# -- pages ----------------------------------------------------------------------------------


def test_the_sessions_page_lists_every_source_and_filters(server: Served, page: Page) -> None:
    page.goto(at(server, "/"))
    rows = page.locator("table.sessions tbody tr")
    expect(rows).to_have_count(10)
    expect(page.locator("[data-title-pending]")).to_have_count(0)
    expect(page.locator(f'tr[data-id="{CLAUDE_ID}"] .src')).to_have_text("claude")
    expect(page.locator(f'tr[data-id="{CODEX_ID}"] .src')).to_have_text("codex")
    shot(page, "sessions")
    page.select_option("select[name=cwd]", "/home/dev/src/billing-api")
    page.click("form.filters button[type=submit]")
    expect(rows).to_have_count(3)
    page.select_option("select[name=lineage]", "roots")
    page.click("form.filters button[type=submit]")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Fix flaky invoice rounding test")


def test_a_search_hit_opens_its_session_scrolled_to_the_event(server: Served, page: Page) -> None:
    page.goto(at(server, "/search?q=heartbeat"))
    hit = page.locator("ol.hits li.hit").first
    expect(hit).to_contain_text("Debug websocket reconnect loop")
    expect(hit.locator(".snippet mark.hl").first).to_have_text("heartbeat", ignore_case=True)
    shot(page, "search")
    href = hit.locator("a.snippet").get_attribute("href") or ""
    seq = href.split("?")[0].rsplit("/", 1)[1]
    hit.locator("a.snippet").click()
    page.wait_for_url(f"**/s/dashboard-websocket/{seq}?**")
    target = page.locator(f"#seq-{seq}")
    expect(target).to_have_class(re.compile(r"\btarget\b"))
    expect(target).to_be_in_viewport()
    expect(target.locator("mark.hl").first).to_be_visible()
    shot(page, "session-search-hit")


def test_next_and_previous_hit_move_inside_the_session(server: Served, page: Page) -> None:
    page.goto(at(server, "/s/billing-rounding/1?q=rounding"))
    hits = page.locator(".hitbar").get_attribute("data-hits")
    assert hits is not None
    seqs = [int(s) for s in hits.split()]
    assert len(seqs) >= 3 and seqs[0] == 1
    expect(page.locator("#seq-1")).to_have_class("ev kind-user surface-shadowed msg target")
    page.keyboard.press("n")
    expect(page.locator(f"#seq-{seqs[1]}.target")).to_be_in_viewport()
    expect(page.locator("#seq-1.target")).to_have_count(0)
    expect(page.locator(".hitbar span")).to_contain_text(f"hit 2 of {len(seqs)}")
    page.click(".hit-prev")
    expect(page.locator("#seq-1.target")).to_have_count(1)
    expect(page.locator(".hitbar span")).to_contain_text(f"hit 1 of {len(seqs)}")


def test_a_session_reads_as_a_conversation(server: Served, page: Page) -> None:
    page.goto(at(server, "/s/billing-rounding"))
    expect(page.locator("h1")).to_have_text("Fix flaky invoice rounding test")
    expect(page.locator("#seq-1 .who")).to_have_text("User")
    expect(page.locator("#seq-3 .who")).to_have_text("Assistant")
    expect(page.locator("#seq-9 .diff .del")).not_to_have_count(0)  # an edit as a diff
    expect(page.locator("#seq-9 .diff .add")).not_to_have_count(0)
    expect(page.locator("#seq-31")).to_have_class("ev kind-user surface-current compaction msg")
    expect(page.locator("#seq-1 .rel a")).to_have_text("#31")  # what replaced it
    shot(page, "session")
    page.locator("#seq-31 button.show-replaced").click()
    replaced = page.locator("#seq-31 .replaced-list article")
    expect(replaced.first).to_contain_text("test_invoice_total_rounding fails")
    page.locator("#seq-31").scroll_into_view_if_needed()
    shot(page, "session-compaction")
    page.locator("#seq-1 .rel a").click()
    expect(page.locator("#seq-31")).to_have_class(
        "ev kind-user surface-current compaction msg target"
    )


def test_the_surface_toggle_shows_what_the_model_sees(server: Served, page: Page) -> None:
    page.goto(at(server, "/s/billing-rounding"))
    expect(page.locator("#seq-1")).to_have_count(1)
    page.click(".toggle a[data-view=surface]")
    page.wait_for_url("**view=surface")
    expect(page.locator("#seq-1")).to_have_count(0)  # shadowed: not on the surface
    expect(page.locator("#seq-4")).to_have_count(0)  # a tool call: log-only
    expect(page.locator("#seq-31")).to_have_count(1)
    shot(page, "session-surface")
    page.keyboard.press("s")
    page.wait_for_url(lambda url: "view=surface" not in url)
    expect(page.locator("#seq-1.surface-shadowed")).to_have_count(1)


def test_the_keyboard_moves_between_messages_sessions_and_help(server: Served, page: Page) -> None:
    page.goto(at(server, "/s/billing-rounding"))
    page.keyboard.press("j")
    expect(page.locator("article.kfocus")).to_have_attribute("data-seq", "1")
    page.keyboard.press("j")
    expect(page.locator("article.kfocus")).to_have_attribute("data-seq", "3")
    page.keyboard.press("k")
    expect(page.locator("article.kfocus")).to_have_attribute("data-seq", "1")
    page.keyboard.press("?")
    expect(page.locator("dialog#help")).to_be_visible()
    shot(page, "help")
    page.keyboard.press("Escape")
    expect(page.locator("dialog#help")).to_be_hidden()
    page.keyboard.press("/")
    expect(page.locator("header.top input[type=search]")).to_be_focused()
    page.keyboard.type("websocket")
    page.keyboard.press("Enter")
    page.wait_for_url("**/search?q=websocket")
    page.goto(at(server, "/s/billing-rounding"))
    newer = page.locator("a[rel=prev]").get_attribute("href")
    page.keyboard.press("[")
    page.wait_for_url(f"**{newer}")
    page.keyboard.press("]")
    page.wait_for_url("**/s/billing-rounding")


def test_the_lineage_page_is_a_tree_of_links(server: Served, page: Page) -> None:
    page.goto(at(server, "/s/billing-rounding-scan/lineage"))
    tree = page.locator("ul.tree")
    expect(tree.locator(".node")).to_have_count(2)
    expect(tree.locator(".node.target")).to_contain_text("Find float rounding in billing/")
    expect(tree.locator(".node").first).to_contain_text("Fix flaky invoice rounding test")
    page.goto(at(server, "/s/billing-rounding/lineage"))
    expect(page.locator("ul.tree .node")).to_have_count(3)
    shot(page, "lineage")
    page.locator("ul.tree .node a.title", has_text="banker").click()
    page.wait_for_url("**/s/billing-rounding-bankers")


def test_a_long_session_opens_at_its_permalink_and_loads_more_while_scrolling(
    server: Served, page: Page
) -> None:
    page.goto(at(server, session_path(LONG_ID, "/600")))
    expect(page.locator("#seq-600.target")).to_be_in_viewport()
    articles = page.locator("#conversation > article")
    expect(articles.nth(FIRST_WINDOW - 1)).to_be_attached()
    # Scrolling towards the end loads the next window (on a tall screen the script loads it
    # at once, the button being in sight already).
    page.locator("#conversation button.load.later").scroll_into_view_if_needed()
    expect(articles.nth(FIRST_WINDOW + WINDOW - 1)).to_be_attached()
    page.goto(at(server, session_path(LONG_ID) + "#seq-1100"))  # an anchor beyond the window
    page.wait_for_url(f"**{session_path(LONG_ID, '/1100')}#seq-1100")
    expect(page.locator("#seq-1100.target")).to_be_in_viewport()


def test_new_events_and_sessions_appear_without_a_restart(
    server: Served, history: Path, page: Page
) -> None:
    store = SessionStore(JsonlPersistence(history / "sessions"))
    session = store.create("growing", cwd="/home/dev/src/live")
    session.append("turn/start", m.turn_start(0))
    session.append("user/message", m.user_message("first words", id="g0"), surface_op="append")
    store.flush("growing")
    page.goto(at(server, "/s/growing"))
    expect(page.locator("#seq-1")).to_contain_text("first words")
    session.append(
        "assistant/message",
        m.assistant_message("a later answer", turn=0, step=0),
        surface_op="append",
    )
    store.flush("growing")
    expect(page.locator("#seq-2")).to_contain_text("a later answer")
    page.goto(at(server, "/"))
    second = store.create("brand-new", cwd="/home/dev/src/live")
    second.append("turn/start", m.turn_start(0))
    store.close("brand-new")
    store.close("growing")
    expect(page.locator(".live-note")).to_be_visible()
    page.click(".live-note a")
    expect(page.locator('tr[data-id="brand-new"]')).to_have_count(1)


def test_copy_resume_command_copies_and_runs_nothing(server: Served, page: Page) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(at(server, session_path(CLAUDE_ID)))
    command = page.locator("input.resume-command")
    expect(command).to_have_value(f"cd /home/dev/app && claude --resume {CLAUDE_ID}")
    page.click("button.copy")
    expect(page.locator("button.copy")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == command.input_value()
    page.goto(at(server, session_path(CODEX_ID)))
    expect(page.locator("input.resume-command")).to_have_value(
        f"cd /home/dev/api && codex resume {CODEX_ID}"
    )


# -- safety ---------------------------------------------------------------------------------


def test_a_hostile_session_runs_nothing_and_shows_its_text(server: Served, page: Page) -> None:
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    for view in ("", "?view=surface"):
        page.goto(at(server, session_path(HOSTILE_ID) + view))
        expect(page.locator("#seq-1 .text")).to_have_text(HOSTILE_TEXT)
        no_script_ran(page)
    expect(page.locator("h1")).to_contain_text("<script>window.__pwned=13</script>")
    assert (
        page.locator("#conversation script, #conversation img, #conversation iframe").count() == 0
    )
    links = page.locator("#conversation a").evaluate_all("els => els.map(a => a.href)")
    assert not [href for href in links if not href.startswith(("http://", "https://"))]
    expect(page.locator("#seq-5 .cut")).to_contain_text("more characters not shown here")
    page.mouse.wheel(0, 4000)
    page.locator("details").evaluate_all("ds => ds.forEach(d => d.open = true)")
    no_script_ran(page)
    shot(page, "hostile")
    page.goto(at(server, "/search?q=pwned"))
    expect(page.locator("ol.hits li.hit", has_text="Hostile")).to_have_count(1)
    no_script_ran(page)
    origin = urlsplit(server.url).netloc
    assert all(urlsplit(url).netloc == origin for url in requests), requests


def test_requests_for_another_host_are_refused(server: Served) -> None:
    parts = urlsplit(server.url)
    for host in ("attacker.example", f"attacker.example:{parts.port}", "127.0.0.1:1"):
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
        connection.request("GET", "/s/billing-rounding", headers={"Host": host})
        answer = connection.getresponse()
        body = answer.read().decode()
        connection.close()
        assert answer.status == 403 and "SESSION_QUERY_FORBIDDEN" in body
        assert "Fix flaky" not in body


def test_the_exported_file_searches_itself_from_disk(
    server: Served, history: Path, page: Page, tmp_path: Path
) -> None:
    target = tmp_path / "billing.html"
    hostile = tmp_path / "hostile.html"
    for session_id, path in (("billing-rounding", target), (HOSTILE_ID, hostile)):
        args = ["export", session_id, "--format", "html", "-o", str(path)]
        done = run_cli([*args, "--root", str(history / "sessions")], tmp_path)
        assert done.returncode == 0, done.stderr
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(target.as_uri())
    expect(page.locator("h1")).to_have_text("Fix flaky invoice rounding test")
    page.keyboard.press("/")
    expect(page.locator("#find")).to_be_focused()
    page.keyboard.type("ROUND_HALF_UP")
    count = page.locator(".find-count")
    expect(count).to_contain_text("1 of ")
    total = int((count.text_content() or "").split(" of ")[1])
    assert total >= 3
    first = page.locator("mark.hl.current").bounding_box()
    page.keyboard.press("Enter")
    expect(count).to_contain_text(f"2 of {total}")
    assert page.locator("mark.hl.current").bounding_box() != first
    shot(page, "export")
    page.fill("#find", "no such words anywhere")
    expect(count).to_have_text("not found")
    page.goto(hostile.as_uri())
    no_script_ran(page)
    expect(page.locator("#seq-1 .text")).to_have_text(HOSTILE_TEXT)
    assert all(url.startswith("file://") for url in requests), requests
