"""Full-text search backends for the query service.

The seam is :class:`sessionquery.query.backend.SearchBackend`; the bundled implementation is
:class:`sessionquery.search.sqlite.SqliteSearch` (import it from there).
"""

from sessionquery.query.backend import SearchBackend

__all__ = ["SearchBackend"]
