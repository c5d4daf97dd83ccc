"""The PostgreSQL search backend: a shared full-text index in a PostgreSQL database (SPEC §13.5).

``PostgresSearch`` plugs into ``SessionQuery(search=...)`` like ``SqliteSearch`` and gives the
same results: text is tokenized exactly as SQLite's ``unicode61`` does (:mod:`.tokens`).
Needs the ``postgres`` extra (``pip install 'sessionquery[postgres]'``).
"""

from sessionquery.search.postgres.index import PostgresSearch

__all__ = ["PostgresSearch"]
