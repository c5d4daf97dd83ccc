"""The ``sessionquery`` command: search, trace and read agent sessions from a terminal.

A thin layer (STYLE rule 7): parse the arguments, resolve defaults with
:meth:`~sessionquery.config.Config.from_env`, make one library call, render the result with
:mod:`sessionquery.cli._render`. No SQL and no private imports from other packages.

Contract (documented in ``docs/cli.md``):

* source options ``--root``, ``--claude``, ``--codex`` (repeatable, combinable) and ``--index``
  are accepted before and after the subcommand name; without them the config file's sources,
  else every default source that exists, are used;
* read commands are not workspace-scoped; ``--cwd`` filters;
* ``--json`` prints exactly one JSON document on stdout; progress and diagnostics go to stderr;
* errors print one line ``CODE: message`` on stderr and exit 2 for usage errors (the code is
  ``SESSION_QUERY_USAGE``), 1 for everything else; no failure shows a traceback (an
  unexpected one is ``SESSION_QUERY_INTERNAL: ...``); the one exception is ``mcp`` started
  by a client (stdin not a terminal) with a bad command line: it serves, answering every
  tool call with the usage error, because a client sees nothing of an exiting process but
  "connection closed";
* problems the sources report are summarised once, as one stderr line, after the command.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sessionquery.app import AmbiguousId
from sessionquery.cli._parser import COMMANDS, UsageError, build_parser, command_of
from sessionquery.cli._terminal import safe
from sessionquery.config import Config
from sessionquery.errors import ErrorCode, PersistenceError, SessionQueryError

if TYPE_CHECKING:
    from sessionquery.cli._parser import Command
    from sessionquery.cli._services import Invocation

__all__ = ["COMMANDS", "INTERNAL_ERROR_CODE", "USAGE_ERROR_CODE", "main"]

USAGE_ERROR_CODE = "SESSION_QUERY_USAGE"
"""The code printed for command-line usage errors (exit status 2)."""

INTERNAL_ERROR_CODE = "SESSION_QUERY_INTERNAL"
"""The code printed when something unexpected failed (a bug; exit status 1)."""

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def _one_line(text: str) -> str:
    return safe(" ".join(text.split()))


def _fail(code: str, message: str, status: int) -> int:
    sys.stderr.write(f"{code}: {_one_line(message)}\n")
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``sessionquery`` command line; returns the process exit status.

    Args:
        argv: the arguments after the program name; ``sys.argv[1:]`` when omitted.
    """
    invocation: Invocation | None = None
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(COMMANDS)
    try:
        args = parser.parse_args(arguments)
        from sessionquery.cli._services import Invocation  # after --help, which needs none of it

        invocation = Invocation(args, Config.from_env())
        command: Command = args.handler
        return command.load()(invocation)
    except UsageError as error:
        if command_of(parser, arguments, error) == "mcp" and not sys.stdin.isatty():
            from sessionquery.cli._mcp import serve_bad_command_line

            return serve_bad_command_line(str(error))
        return _fail(USAGE_ERROR_CODE, str(error), EXIT_USAGE)
    except AmbiguousId as error:  # an id argument that names no one session: usage
        return _fail(USAGE_ERROR_CODE, error.message, EXIT_USAGE)
    except SessionQueryError as error:
        return _fail(error.code.value, error.message, EXIT_ERROR)
    except PersistenceError as error:
        return _fail(ErrorCode.PERSISTENCE_FAILED.value, str(error), EXIT_ERROR)
    except OSError as error:
        if isinstance(error, BrokenPipeError):
            return _quiet_broken_pipe()
        return _fail(ErrorCode.PERSISTENCE_FAILED.value, str(error), EXIT_ERROR)
    except KeyboardInterrupt:
        return _fail(ErrorCode.ABORTED.value, "interrupted", EXIT_INTERRUPTED)
    except Exception as error:  # the top-level handler: never a traceback (STYLE rule 24)
        detail = f"{type(error).__name__}: {error}"
        return _fail(INTERNAL_ERROR_CODE, f"unexpected failure ({detail})", EXIT_ERROR)
    finally:
        if invocation is not None:
            invocation.report_problems(sys.stderr)


def _quiet_broken_pipe() -> int:
    # The reader went away (e.g. `| head`): stop quietly, and keep the interpreter's final
    # flush of stdout from raising again.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_OK
