"""``Closing``: the one definition of "a closable object is its own context manager".

``with obj:`` hands back ``obj`` and calls ``obj.close()`` on the way out, whatever happened
inside; ``close`` is each class's own (idempotent by the house rules). This module imports
nothing of the package, so every layer may use it.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["Closing"]


class Closing:
    """Mixin: ``__enter__`` returns the object, ``__exit__`` calls its ``close()``."""

    __slots__ = ()

    def close(self) -> None:
        """Release what the object holds (each class defines its own)."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
