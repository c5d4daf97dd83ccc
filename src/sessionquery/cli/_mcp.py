"""``sessionquery mcp``: the MCP server over the composition root, or its registration.

``--print-config CLIENT`` prints how to register this server with CLIENT (the absolute
command, the options given) and exits; otherwise :func:`sessionquery.mcp.run_stdio` serves,
also with a command line it cannot run with (:func:`serve_bad_command_line`).
A relative ``--cwd`` is taken from the working directory (a session's recorded cwd is
absolute), an absolute one verbatim.
"""

from __future__ import annotations

import os
import sys

from sessionquery.cli._services import EXIT_OK, Invocation

__all__ = ["EXIT_USAGE_SERVED", "cmd_mcp", "serve_bad_command_line"]

EXIT_USAGE_SERVED = 2
"""The exit status of ``mcp`` served with a bad command line (the usage-error status)."""


def serve_bad_command_line(message: str) -> int:
    """``sessionquery mcp`` with options it cannot run with: an MCP client that started it
    sees only a closed connection when the process exits, so serve instead, answering every
    tool call with the reason (and logging it on stderr)."""
    from sessionquery.errors import ErrorCode, SessionQueryError
    from sessionquery.mcp import run_stdio

    problem = SessionQueryError(
        ErrorCode.INVALID_CONFIG, f"the server's command line is wrong: {message}"
    )
    run_stdio(None, cwd=None, session_id=None, problem=problem)
    return EXIT_USAGE_SERVED


def _server_arguments(inv: Invocation) -> list[str]:
    """The options of this ``mcp`` command line, as a registration repeats them."""
    options, args = inv.app.options, inv.args
    out: list[str] = []
    for kind, path in options.sources:
        out += [f"--{kind}", str(path)]
    if options.postgres:
        out += ["--postgres", options.postgres]
    if options.index is not None:
        out += ["--index", str(options.index)]
    if args.cwd is not None:
        out += ["--cwd", _absolute_workspace(args.cwd)]
    if args.session is not None:
        out += ["--session", args.session]
    return out


def _absolute_workspace(text: str) -> str:
    """A workspace option as the sessions record one: relative paths against the working
    directory (``.`` names it), absolute paths verbatim."""
    if os.path.isabs(text):
        return text
    return os.path.normpath(os.path.join(os.getcwd(), os.path.expanduser(text)))


def cmd_mcp(inv: Invocation) -> int:
    args = inv.args
    inv.summarise_problems = False  # the server logs its own state on stderr
    if args.print_config is not None:
        from sessionquery.cli._launcher import registration

        text, where = registration(args.print_config, _server_arguments(inv))
        sys.stderr.write(f"{where}:\n")
        sys.stderr.flush()
        sys.stdout.write(text)
        return EXIT_OK
    from sessionquery.mcp import run_stdio

    cwd: str | None = os.getcwd() if args.cwd is None else _absolute_workspace(args.cwd)
    if args.cwd is None and args.session:
        cwd = None  # the session's recorded cwd is the workspace
    run_stdio(inv.app, cwd=cwd, session_id=args.session)
    return EXIT_OK
