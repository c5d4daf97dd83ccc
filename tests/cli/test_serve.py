"""``sessionquery serve`` as a command: its first line is the URL, it answers, it refuses what
it cannot do in one line (the browser tests in tests/web/ exercise the pages)."""

from __future__ import annotations

import http.client
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from web_support import make_history, run_cli, served

pytestmark = pytest.mark.slow  # real viewer processes


def test_the_first_line_is_the_url_and_the_server_answers(tmp_path: Path) -> None:
    make_history(tmp_path)
    with served(tmp_path) as server:
        parts = urlsplit(server.url)
        assert server.url == f"http://127.0.0.1:{parts.port}/"
        connection = http.client.HTTPConnection("127.0.0.1", parts.port, timeout=30)
        connection.request("GET", "/s/billing-rounding")
        answer = connection.getresponse()
        assert answer.status == 200 and b"Fix flaky invoice rounding test" in answer.read()
        connection.close()


def test_a_port_in_use_is_one_typed_line(tmp_path: Path) -> None:
    make_history(tmp_path)
    with served(tmp_path) as server:
        port = str(urlsplit(server.url).port)
        done = run_cli(["serve", "--port", port, "--root", str(tmp_path / "sessions")], tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("SESSION_QUERY_INVALID_CONFIG: cannot listen on 127.0.0.1:")


def test_a_port_in_use_is_refused_before_the_index_is_opened(tmp_path: Path) -> None:
    make_history(tmp_path)
    index = tmp_path / "fresh-index.sqlite3"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = run_cli(
            ["serve", "--port", port, "--root", str(tmp_path / "sessions"), "--index", str(index)],
            tmp_path,
        )
    assert done.returncode == 1
    assert done.stderr.startswith("SESSION_QUERY_INVALID_CONFIG: cannot listen on 127.0.0.1:")
    assert not index.exists()


def test_a_bad_port_is_a_usage_error(tmp_path: Path) -> None:
    done = run_cli(["serve", "--port", "70000"], tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("SESSION_QUERY_USAGE: argument --port")


def _get(url: str, path: str) -> bytes:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection("127.0.0.1", parts.port, timeout=30)
    try:
        connection.request("GET", path)
        answer = connection.getresponse()
        assert answer.status == 200
        return answer.read()
    finally:
        connection.close()


def test_the_titles_the_index_read_are_shown_without_reading_a_log_again(tmp_path: Path) -> None:
    make_history(tmp_path)
    with served(tmp_path) as server:
        deadline = time.monotonic() + 120  # a hang catcher: the build takes a second
        while b"still being built" in _get(server.url, "/search?q=invoice"):
            assert time.monotonic() < deadline, "the index build did not end"
            time.sleep(0.2)
        listing = _get(server.url, "/")
        found = _get(server.url, "/search?q=invoice")
    # Pages read no title that is not remembered: these came from the index's own reads.
    assert b"data-title-pending" not in listing and b"data-title-pending" not in found
    assert b"Fix flaky invoice rounding test" in listing
    assert b"Fix flaky invoice rounding test" in found
