"""``sessionquery serve``: a local, read-only web viewer of the whole history.

The viewer renders pages on the server from the query service (sessions, search, one session
as a conversation, lineage) with an escaping-by-construction HTML builder
(:mod:`sessionquery.web.markup`), serves one script and one stylesheet bundled in the package,
and answers only ``GET``. :func:`serve` starts it; :func:`export_page` is the same renderer
producing one self-contained file (``sessionquery export --format html``). How it is secured
and why it is built on the standard library: ``docs/viewer.md``.
"""

from __future__ import annotations

from sessionquery.web.app import Response, ViewerApp
from sessionquery.web.catalog import Catalog
from sessionquery.web.export import export_page
from sessionquery.web.security import Guard
from sessionquery.web.server import ViewerServer

__all__ = ["Catalog", "Guard", "Response", "ViewerApp", "ViewerServer", "export_page"]
