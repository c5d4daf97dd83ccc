"""Fixtures of the command-line tests: ``cli`` runs ``sessionquery`` in process (see
``cli_support.Cli``); ``sample`` is the quickstart's example store, built once per test
process and only read by the tests that share it (they pass its ``--root`` and ``--index``)."""

from __future__ import annotations

import contextlib
import io

import pytest

from cli_support import Cli, Sample, clean_env


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    """A runner of ``sessionquery`` commands in this process, in the test's isolated home."""
    return Cli(capsys, monkeypatch)


@pytest.fixture(scope="session")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Sample:
    """The quickstart's sample store and its index, shared read-only by the tests."""
    from sessionquery.cli import main

    base = tmp_path_factory.mktemp("cli-sample")
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:  # a session fixture runs before the isolation
        for name, value in clean_env(base).items():
            patch.setenv(name, value)
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            status = main(["quickstart"])
    assert status == 0, printed.getvalue()
    quick = base / "sq" / "quickstart"
    return Sample(root=quick / "sessions", index=quick / "index.sqlite3")
