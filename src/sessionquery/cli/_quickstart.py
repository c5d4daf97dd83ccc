"""``sessionquery quickstart``: a sample store from the bundled example sessions, and a tour.

The sample is built in a fresh directory and swapped in (:func:`ensure_example_store`), and
while ``<home>/quickstart/sessions`` exists it is one of the default sources. The closing
lines are commands that run as printed in this shell (the absolute path of ``sessionquery``
when the bare name is not on the ``PATH``).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from sessionquery.app import App, SourceOptions
from sessionquery.cli import _hits as hits
from sessionquery.cli import _render as render
from sessionquery.cli._archive import turn_on_hint
from sessionquery.cli._commands import collect_session_hits, titles_of, update_index
from sessionquery.cli._parser import UsageError
from sessionquery.cli._services import EXIT_OK, Invocation, style_for
from sessionquery.config import Config

__all__ = ["cmd_quickstart"]


_QUICKSTART_QUERY = "float round"


def cmd_quickstart(inv: Invocation) -> int:
    from sessionquery.examples import ensure_example_store

    config, options = inv.config, inv.app.options
    roots = [path for kind, path in options.sources if kind == "root"]
    if len(roots) != len(options.sources) or len(roots) > 1 or options.postgres:
        raise UsageError("quickstart takes at most one --root and no other source option")
    root = roots[0] if roots else config.sample_store
    index = options.index or config.sample_index
    ids = ensure_example_store(root)
    sample = App(config, SourceOptions(sources=(("root", root),), index=index))
    out, style = sys.stdout, style_for(config)

    def say(explanation: str, lines: Sequence[str]) -> None:
        shown = [render.terminal_line(line, style) for line in ["", explanation, "", *lines]]
        out.write("\n".join(shown) + "\n")

    out.write(f"Created a sample store with {len(ids)} example sessions at {root}\n")
    with sample.open_index() as search, sample.service(search) as query:
        update_index(search, query, sys.stderr, plain=False)
        out.write(f"Indexed them into {index}\n")
        page = collect_session_hits(query, _QUICKSTART_QUERY, 5, mode="phrase")
        titles = titles_of(query, [hit.record.id for hit in page.items])
        say(
            f"1. Search: which sessions mention {_QUICKSTART_QUERY!r}? "
            "(sessionquery search, best-matching event per session)",
            hits.session_hits_text(_QUICKSTART_QUERY, page, titles, style),
        )
        top = page.items[0]
        trace = query.trace_session(top.record.id)
        say(
            f"2. Lineage: {top.record.id} with the sessions forked from it and its "
            "subagents (sessionquery trace)",
            render.lineage_text(trace, style),
        )
        hit = top.best_match
        window = query.read_event(top.record.id, hit.seq, before=1, after=1)
        say(
            f"3. Exact read: the best-matching event (seq {hit.seq}) of {top.record.id}, in "
            "full, with one neighbour on each side (sessionquery read)",
            render.event_window_text(window, style),
        )
    out.write(_try_it(config, root, index, f"{top.record.id} {hit.seq}"))
    out.write(f"\n{turn_on_hint(inv)}.\n")
    return EXIT_OK


def _try_it(config: Config, root: Path, index: Path, event: str) -> str:
    """The closing lines of ``quickstart``: commands that work as printed, in this shell."""
    from sessionquery.cli._launcher import launcher, on_path, shell_command

    command = shell_command()
    if root == config.sample_store:
        intro = (
            "The sample is now one of your default sources, beside your own history\n"
            f"('sessionquery sources' lists them; delete {_quote(root)} to remove it).\n"
            "Try it yourself:"
        )
        flags = ""
    else:
        intro, flags = "Try it yourself:", f" --root {_quote(root)} --index {_quote(index)}"
    lines = [
        "",
        intro,
        f"  {command} list{flags}",
        f"  {command} search websocket{flags}",
        f"  {command} trace-event {event}{flags}",
    ]
    if not on_path():
        where = _quote(Path(launcher()[0]).parent)
        lines += [
            "",
            f"('sessionquery' alone is not on your PATH: add {where} to it, or install with "
            "pipx or uv tool, which do)",
        ]
    return "\n".join(lines) + "\n"


def _quote(path: Path) -> str:

    return shlex.quote(str(path))
