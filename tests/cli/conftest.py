"""The ``cli`` fixture: ``sessionquery`` run in process (see ``cli_support.Cli``)."""

from __future__ import annotations

import pytest

from cli_support import Cli


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    """A runner of ``sessionquery`` commands in this process, in the test's isolated home."""
    return Cli(capsys, monkeypatch)
