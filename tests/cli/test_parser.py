"""The argument parser: usage errors on one line, exact time bounds, help for every command."""

from __future__ import annotations

import pytest

from locations import DOCS
from sessionquery.cli import COMMANDS, main
from sessionquery.cli._parser import build_parser

CLI_DOCS = DOCS / "cli.md"


@pytest.mark.parametrize(
    "args",
    [
        ["list", "--no-such-option"],
        ["search", "x", "--limit", "0"],
        ["read", "some-id", "-1"],
        ["read", "some-id", "three"],
        ["search", "x", "--since", "yesterday"],
        ["search", "x", "--surface", "sideways"],
        ["quickstart", "--claude", "somewhere"],
        [],
    ],
)
def test_bad_options_and_values_exit_2_with_one_usage_line(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("SESSION_QUERY_USAGE: ")


@pytest.mark.parametrize(
    ("text", "epoch_ms"),
    [
        ("2039-08-26T22:57:22.529Z", 2_198_012_242_529),
        ("2038-10-20T14:45:03.594+00:00", 2_171_198_703_594),
        ("1969-12-31T23:59:59.999Z", -1),
        ("2025-03-07", 1_741_305_600_000),
    ],
)
def test_since_and_until_convert_to_the_exact_epoch_millisecond(text: str, epoch_ms: int) -> None:
    parsed = build_parser(COMMANDS).parse_args(["search", "x", "--since", text, "--until", text])
    assert parsed.since == epoch_ms
    assert parsed.until == epoch_ms


def test_since_and_until_keep_an_instant_between_two_milliseconds_inside_the_bounds() -> None:
    text = "2025-03-07T00:00:00.0005Z"
    parsed = build_parser(COMMANDS).parse_args(["search", "x", "--since", text, "--until", text])
    assert (parsed.since, parsed.until) == (1_741_305_600_001, 1_741_305_600_000)


@pytest.mark.parametrize("command", [c.name for c in COMMANDS])
def test_every_subcommand_has_help_text_and_is_documented(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    assert f"usage: sessionquery {command}" in text
    assert "--root" in text and "--index" in text
    docs = CLI_DOCS.read_text(encoding="utf-8")
    assert f"### `sessionquery {command}" in docs


def test_top_level_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for command in COMMANDS:
        assert command.name in text and command.help in text


def test_the_parsers_surface_classes_are_the_models() -> None:
    from sessionquery.cli._parser import SURFACES
    from sessionquery.model import SURFACE_CLASSES

    assert tuple(SURFACES) == tuple(SURFACE_CLASSES)
