"""Write ownership of a session file: one writer per file, in this process and across processes.

Two layers, because each alone is weaker:

* a process-wide registry keyed by the resolved path, which refuses a second writer in this
  process with a message that says so (and does not depend on OS lock semantics);
* an OS lock, ``flock(LOCK_EX | LOCK_NB)`` on the session file itself, which refuses a writer
  in another process. It is advisory: readers take no lock and are never blocked; programs
  that ignore ``flock`` are not stopped. The kernel drops it when the owning process dies, so a
  crashed writer never leaves a stale lock behind.

The OS lock is held by an open file description, so the owner keeps its descriptor open for
as long as it owns the file and releases ownership by closing it.
"""

from __future__ import annotations

import errno
import fcntl
import threading

from sessionquery.errors import PersistenceOwned

__all__ = ["claim", "lock_file", "release"]

_registry_lock = threading.Lock()
_owned: set[str] = set()


def claim(key: str, what: str) -> None:
    """Register this process as the writer of ``key`` (a resolved path).

    Raises:
        PersistenceOwned: another handle in this process already owns it.
    """
    with _registry_lock:
        if key in _owned:
            raise PersistenceOwned(f"{what} is already open for writing in this process")
        _owned.add(key)


def release(key: str) -> None:
    """Forget the in-process claim on ``key`` (idempotent)."""
    with _registry_lock:
        _owned.discard(key)


def lock_file(fd: int, what: str) -> None:
    """Take the exclusive OS lock on an open file without waiting.

    Raises:
        PersistenceOwned: another process holds the lock.
        OSError: the lock could not be taken for another reason.
    """
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise PersistenceOwned(f"{what} is open for writing in another process") from None
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            raise PersistenceOwned(f"{what} is open for writing in another process") from None
        raise
