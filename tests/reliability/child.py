"""Run a child program and read its progress lines with bounded waits (no sleeps)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["Child"]

HERE = Path(__file__).resolve().parent


class Child:
    """A child Python program whose stdout is read line by line under a deadline."""

    def __init__(self, program: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / program), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._buffer = b""
        self.seen: list[str] = []

    def read_line(self, timeout: float = 20.0) -> str | None:
        """The next stdout line, or ``None`` at end of output; fails after ``timeout``."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no progress line within {timeout}s: {self.stderr_text()}")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                if not self._buffer:
                    return None
                self._buffer += b"\n"  # a last line cut by the kill
                break
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        text = line.decode("utf-8", "replace")
        self.seen.append(text)
        return text

    def kill(self) -> None:
        """SIGKILL the child, wait for it (bounded) and collect every line it printed."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=20)
        while self.read_line() is not None:
            pass
        self.close()

    def finish(self) -> None:
        """Let the child end on its own (close its stdin) and wait, bounded."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        while self.read_line() is not None:
            pass
        assert self.proc.returncode == 0, self.stderr_text()
        self.close()

    def stderr_text(self) -> str:
        """Whatever the child wrote to stderr so far (only once it has ended)."""
        if self.proc.poll() is None or self.proc.stderr is None or self.proc.stderr.closed:
            return ""
        return self.proc.stderr.read().decode("utf-8", "replace")

    def close(self) -> None:
        """Close the pipes."""
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None and not stream.closed:
                stream.close()
