"""``sessionquery serve``: the web viewer over the composition root's sources, index and
service (:class:`sessionquery.app.App`, so redaction and the archive apply), with the command
line's title cache: every log the index reads (its build, a search's reconciliation) leaves
its title there, so the pages show titles without reading a log again.

Invariants: the URL is the first line of stdout (``http://HOST:PORT/``, with ``?token=…``
when the bind is not loopback), flushed before anything else happens; the search index is
brought up to date in a background thread while the pages already answer; Ctrl-C stops the
server cleanly (exit status 0); a port that cannot be bound is one
``SESSION_QUERY_INVALID_CONFIG`` line, said before the index is opened (nothing is created).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from sessionquery.cli import _titlecache as titlecache
from sessionquery.cli._parser import SERVE_PORT
from sessionquery.cli._services import EXIT_OK, Invocation
from sessionquery.errors import ErrorCode, SessionQueryError
from sessionquery.persistence import PersistedSession
from sessionquery.query.service import SessionQuery

if TYPE_CHECKING:
    from sessionquery.query.cancel import CancelToken
    from sessionquery.web.catalog import TitleReader

__all__ = ["DEFAULT_PORT", "cmd_serve"]

DEFAULT_PORT = SERVE_PORT
"""The viewer's port unless ``--port`` says otherwise (defined with the parser, which must not
import this module to build ``--help``)."""


def _title_reader(inv: Invocation) -> TitleReader:
    cache = inv.config.title_cache

    def read(
        query: SessionQuery, listing: Sequence[PersistedSession], ids: Sequence[str], budget: float
    ) -> Mapping[str, object]:
        # The titles the index read since (its build, a search's reconciliation) first.
        inv.save_titles()
        # A budget of 0 asks for remembered titles only (read_titles stops before its
        # first read once the deadline has passed).
        budget_s = budget if budget > 0 else -1.0
        return titlecache.read_titles(query, listing, ids, cache, budget_s=budget_s, always=0)

    return read


def cmd_serve(inv: Invocation) -> int:
    """Serve the viewer until interrupted."""
    import webbrowser

    from sessionquery.mcp import IndexBuilder
    from sessionquery.web import Catalog, Guard, ViewerApp, ViewerServer
    from sessionquery.web.export import export_session

    args = inv.args
    app = inv.app
    # The port first: a port in use is said at once, before the index is opened or made.
    try:
        server = ViewerServer(args.host, args.port, None)
    except OSError as error:
        raise SessionQueryError(
            ErrorCode.INVALID_CONFIG,
            f"cannot listen on {args.host}:{args.port}: {error.strerror or error}; "
            "choose another port with --port (0 picks a free one)",
        ) from None
    try:
        persistence = app.persistence()
        search = app.open_index()
    except BaseException:
        server.server_close()
        raise
    # Every log the index reads leaves its title in the title cache (the readers fold it in
    # the same pass), so the pages show titles without reading any log again.
    query = app.service(search, through=inv.recording_titles)
    selection = app.selection
    label = selection.sources[0].label if len(selection.sources) == 1 else "store"
    catalog = Catalog(query, persistence, source_label=label, titles=_title_reader(inv))
    guard = Guard.for_bind(args.host, server.port)
    server.app = ViewerApp(catalog, guard, export=lambda sid: export_session(query, sid))
    sys.stdout.write(guard.url() + "\n")
    sys.stdout.flush()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(message)s")
    sys.stderr.write("sessionquery viewer: read-only; press Ctrl-C to stop\n")

    def update(cancel: CancelToken, progress: Callable[[int, int], None]) -> object:
        try:
            return search.update(query.corpus, cancel=cancel, progress=progress)
        finally:
            inv.save_titles()

    builder = IndexBuilder(update)
    builder.start()
    if args.open:
        webbrowser.open(guard.url())
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass
    finally:
        builder.stop()
        server.server_close()
        inv.save_titles()
        query.close()
    return EXIT_OK
