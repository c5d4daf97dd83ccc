"""``sessionquery serve``: a local, read-only web viewer of the whole history.

The viewer renders pages on the server from the query service (sessions, search, one session
as a conversation, lineage) with an escaping-by-construction HTML builder
(:mod:`sessionquery.web.markup`), serves one script and one stylesheet bundled in the package,
and answers only ``GET``. :func:`serve` starts it; :func:`export_page` is the same renderer
producing one self-contained file (``sessionquery export --format html``). How it is secured
and why it is built on the standard library: ``docs/viewer.md``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sessionquery.web.app import Response, ViewerApp
    from sessionquery.web.catalog import Catalog
    from sessionquery.web.export import export_page
    from sessionquery.web.security import Guard
    from sessionquery.web.server import ViewerServer

__all__ = ["Catalog", "Guard", "Response", "ViewerApp", "ViewerServer", "export_page"]

_HOMES = {
    "Catalog": "catalog",
    "Guard": "security",
    "Response": "app",
    "ViewerApp": "app",
    "ViewerServer": "server",
    "export_page": "export",
}


def __getattr__(name: str) -> Any:
    # Imported on first use: the command line imports this package's view model for
    # `show --conversation` and must not pay for the HTTP server at start-up.
    if name not in _HOMES:
        raise AttributeError(f"module 'sessionquery.web' has no attribute {name!r}")
    return getattr(import_module(f"sessionquery.web.{_HOMES[name]}"), name)
