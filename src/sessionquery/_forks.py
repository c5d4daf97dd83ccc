"""SQLite connections in a process that forks (a push's reader processes, :mod:`.team.reading`).

SQLite forbids using a connection opened before ``fork()`` in the child. An object holding
one registers here (:func:`register`); in every forked child its ``_forked()`` method is
called, where it sets its connections aside with :func:`set_aside` (kept referenced here, so
never used, closed or finalised in the child) and opens its own when it needs one.
"""

from __future__ import annotations

import os
import weakref
from typing import Protocol

__all__ = ["Forkable", "register", "set_aside"]


class Forkable(Protocol):
    """An object that knows how to drop its parent's connections in a forked child."""

    def _forked(self) -> None: ...


_REGISTERED: weakref.WeakSet[Forkable] = weakref.WeakSet()
_INHERITED: list[object] = []


def register(holder: Forkable) -> None:
    """Call ``holder._forked()`` in every child forked from now on (while it lives)."""
    _REGISTERED.add(holder)


def set_aside(connection: object) -> None:
    """Keep a connection inherited from the parent unused and unclosed in this child."""
    _INHERITED.append(connection)


def _after_fork_in_child() -> None:
    for holder in list(_REGISTERED):
        holder._forked()


os.register_at_fork(after_in_child=_after_fork_in_child)
