"""The PostgreSQL session store (SPEC §5, §13.5): ``PostgresPersistence``.

Needs the ``postgres`` extra (``pip install 'sessionquery[postgres]'``, psycopg 3).
"""

try:
    import psycopg  # noqa: F401
except ImportError as _missing:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "the PostgreSQL backend needs psycopg 3: pip install 'sessionquery[postgres]'"
    ) from _missing

from sessionquery.persistence.postgres._schema import SCHEMA_VERSION, StoreProblem, advisory_key
from sessionquery.persistence.postgres.store import PostgresPersistence

__all__ = ["SCHEMA_VERSION", "PostgresPersistence", "StoreProblem", "advisory_key"]
