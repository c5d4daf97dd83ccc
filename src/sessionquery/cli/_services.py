"""What every command shares: its invocation over the composition root, output and progress.

Invariants:

* sources, the index and the service come from :class:`sessionquery.app.App` (the one
  composition root), opened once per command;
* the sources' problems are summarised on stderr once, after the command, whether it
  succeeded or not; a failure while counting them is never shown instead of the command's
  own result or error;
* ``--json`` output is exactly one document on stdout; progress goes to stderr;
* everything a command reads is redacted (the App reads its sources through the redactor,
  with the known values of the environment and the known-secrets file), so the index, the
  tools and every output see only masked data; only ``--no-redact`` (``show``, ``read`` and
  ``export`` to Markdown or HTML, for a person at the terminal, never with ``--json``) reads
  the sources as stored.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from sessionquery.app import App, Selection
from sessionquery.cli import _render as render
from sessionquery.config import Config

if TYPE_CHECKING:
    from sessionquery.cli._titlecache import TitleRecorder
    from sessionquery.persistence.base import Problem, SessionPersistence
    from sessionquery.query.service import SessionQuery
    from sessionquery.redact import Redactor

__all__ = ["EXIT_OK", "Invocation", "Progress", "emit", "style_for"]

EXIT_OK = 0


class Invocation:
    """One command's arguments, configuration and (once opened) sources, through one
    :class:`~sessionquery.app.App`."""

    def __init__(self, args: argparse.Namespace, config: Config) -> None:
        from sessionquery.cli._parser import is_quiet, source_options

        self.args = args
        self.config = config
        self.app = App(config, source_options(args), redact=_redacting(args))
        self.quiet = is_quiet(args)
        self.summarise_problems = True
        self._recorders: list[TitleRecorder] = []

    def warn(self, text: str) -> None:
        """One ``warning:`` line on stderr, unless ``--quiet``."""
        if not self.quiet:
            sys.stderr.write(f"warning: {text}\n")

    @property
    def json(self) -> bool:
        """Whether the command prints one JSON document."""
        return bool(self.args.json)

    @property
    def selection(self) -> Selection:
        """The sources and index this command uses."""
        return self.app.selection

    def persistence(self) -> SessionPersistence:
        """The selected sources, opened once per command (redacted: :meth:`App.persistence`)."""
        return self.app.persistence()

    def sources(self) -> SessionPersistence:
        """The selected sources as stored: only for finding secrets (:meth:`App.sources`)."""
        return self.app.sources()

    @property
    def redactor(self) -> Redactor:
        """The command's redactor (:attr:`App.redactor`)."""
        return self.app.redactor

    def snapshot(self) -> SessionPersistence:
        """The sources listed once (:meth:`App.snapshot`)."""
        return self.app.snapshot()

    def resolve(self, text: str) -> str:
        """The session id ``text`` names: a full id, a short id, or a unique start.

        Raises:
            SessionQueryError: ``SESSION_NOT_FOUND``; ``AmbiguousId`` (a usage error here).
        """
        return self.app.resolve(text)

    @contextmanager
    def query(self, *, search: bool = False) -> Iterator[SessionQuery]:
        """The query service over the selected sources (with the search index when asked).

        Without the index, the service reads the command's one listing (:meth:`snapshot`).
        With the index on a terminal, the index is brought up to date first under a progress
        bar, so a first search over a large history shows what it is doing. With ``archive =
        true``, the sources are archived before that (:meth:`App.archive_on_update`).
        """
        if not search:
            with self.app.service(snapshot=True) as query:
                yield query
            return
        self.app.archive_on_update()
        backend = self.app.open_index()
        try:
            with self.app.service(backend, through=self.recording_titles) as query:
                if sys.stderr.isatty():
                    progress = Progress(sys.stderr, "Indexing", quiet=True)
                    try:
                        backend.update(query.corpus, progress=progress)
                    finally:
                        progress.finish()
                yield query
        finally:
            self.save_titles()

    def recording_titles(self, persistence: SessionPersistence) -> SessionPersistence:
        """``persistence`` read through a :class:`TitleRecorder` (for the search index: each
        log it reads leaves its title in the title cache; see :meth:`save_titles`)."""
        from sessionquery.cli._titlecache import TitleRecorder

        recorder = TitleRecorder(persistence, self.config.title_cache)
        self._recorders.append(recorder)
        return cast("SessionPersistence", recorder)

    def save_titles(self) -> None:
        """Write the titles the index has read so far to the title cache."""
        for recorder in self._recorders:
            recorder.save()

    def report_problems(self, stream: TextIO) -> None:
        """One stderr line counting the sources' problems, when they differ from the ones last
        warned about (never with ``--quiet``; never raises)."""
        if not self.app.opened or not self.summarise_problems or self.quiet:
            return
        try:
            problems = self.app.problems()
        except Exception:  # the command's own outcome matters more than this summary
            return
        if not problems or not _first_sight(problems, self.config.problems_shown):
            return
        count = len(problems)
        noun = "problem" if count == 1 else "problems"
        stream.write(
            f"warning: {count} {noun} reading the session sources "
            "(run 'sessionquery sources' to see them; shown again when they change)\n"
        )


def _first_sight(problems: Sequence[Problem], memory: Path) -> bool:
    """Whether these problems differ from the ones last warned about; remembers them.

    The memory file is derived and disposable: unreadable or unwritable means "not seen".
    """
    import hashlib
    import json

    digest = hashlib.sha256()
    for problem in problems:
        digest.update(json.dumps([problem.path, problem.line, problem.message]).encode())
    value = digest.hexdigest()
    try:
        if memory.read_text(encoding="ascii").strip() == value:
            return False
    except (OSError, UnicodeDecodeError):
        pass
    try:
        memory.parent.mkdir(parents=True, exist_ok=True)
        memory.write_text(value + "\n", encoding="ascii")
    except OSError:
        pass
    return True


def _redacting(args: argparse.Namespace) -> bool:
    """Whether the command's reads are redacted: always, but ``--no-redact``.

    Raises:
        UsageError: ``--no-redact`` with ``--json`` or ``--format json`` (machine output is
            always redacted).
    """
    if not args.no_redact:
        return True
    if args.json or getattr(args, "format", None) == "json":  # only export has --format
        from sessionquery.cli._parser import UsageError

        raise UsageError("--no-redact is for text read by a person; JSON is always redacted")
    return False


# -- output ---------------------------------------------------------------------------------


def style_for(config: Config) -> render.Style:
    """Colour and emphasis only on a terminal, and never with ``NO_COLOR``; on a terminal
    narrower than 100 columns, lines fit its width."""
    tty = sys.stdout.isatty()
    width = render.WIDTH
    if tty:
        import shutil  # only on a terminal: it imports the compression modules

        width = min(width, shutil.get_terminal_size((render.WIDTH, 24)).columns)
    return render.Style(tty and not config.no_color, width)


def emit(inv: Invocation, document: Any, text: Callable[[render.Style], list[str]]) -> int:
    """Print the command's result: one JSON document, or safe text lines."""
    if inv.json:
        sys.stdout.write(render.dumps(document) + "\n")
    else:
        style = style_for(inv.config)
        sys.stdout.write("".join(render.terminal_line(line, style) + "\n" for line in text(style)))
    return EXIT_OK


class Progress:
    """Indexing progress on stderr: a bar on a terminal, else a plain line every few seconds.

    The first report is drawn at once; later plain lines at most every ``interval`` seconds,
    and the last one (``done == total``) always. ``quiet`` keeps the bar but drops the plain
    lines (for short builds whose output is the point, such as ``quickstart``).
    """

    def __init__(
        self,
        stream: TextIO,
        label: str,
        *,
        interval: float = 3.0,
        tty: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
        quiet: bool = False,
        noun: str = "sessions",
    ) -> None:
        self._noun = noun
        self._stream = stream
        self._label = label
        self._interval = interval
        self._tty = stream.isatty() if tty is None else tty
        self._quiet = quiet and not self._tty
        self._clock = clock
        self._last: float | None = None
        self._drawn = False

    def start(self) -> None:
        """Say at once that work began (before the first count is known)."""
        if self._quiet:
            return
        if self._tty:
            self._stream.write(f"\r{self._label}: reading the sources…")
            self._drawn = True
        else:
            self._stream.write(f"{self._label}: reading the sources…\n")
        self._stream.flush()

    def __call__(self, done: int, total: int) -> None:
        """Report ``done`` of ``total`` sessions (or the ``noun`` given)."""
        if total <= 0 or self._quiet:
            return
        if self._tty:
            self._bar(done, total)
            return
        now = self._clock()
        if self._last is not None and now - self._last < self._interval and done < total:
            return
        self._last = now
        percent = 100 * done // total
        self._stream.write(f"{self._label}: {done} of {total} {self._noun} ({percent}%)\n")
        self._stream.flush()

    def _bar(self, done: int, total: int, width: int = 30) -> None:
        filled = width * min(done, total) // total
        bar = "#" * filled + "." * (width - filled)
        self._stream.write(f"\r{self._label} [{bar}] {done}/{total} {self._noun}")
        self._stream.flush()
        self._drawn = True

    def finish(self) -> None:
        """End the bar's line."""
        if self._drawn:
            self._stream.write("\n")
            self._stream.flush()
            self._drawn = False
