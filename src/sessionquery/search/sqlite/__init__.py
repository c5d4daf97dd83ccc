"""The SQLite FTS5 search backend: a derived, disposable, guarded index (SPEC §7).

``SqliteSearch`` plugs into ``SessionQuery(search=...)``; ``IndexUpdate`` is what
:meth:`SqliteSearch.update` (the CLI ``index`` command) reports.
"""

from sessionquery.search.sqlite.index import SqliteSearch
from sessionquery.search.update import IndexUpdate

__all__ = ["IndexUpdate", "SqliteSearch"]
