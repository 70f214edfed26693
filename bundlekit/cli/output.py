"""The CLI output contract, written once: every command prints through this module.

* **Data** goes to stdout: CIDs, listings, file contents, and ``--json``
  results (:func:`data`, :func:`data_json`, :func:`data_json_lines`). A
  pipeline can capture stdout and get nothing else.
* **Everything else** goes to stderr: status lines and summaries
  (:func:`status`), warnings (:func:`warn`, :func:`warn_all`, ``warning: ...``), errors
  (:func:`error`, ``error: ...``) and progress (:class:`Progress`).
* **JSON** is one line: ``json.dumps(obj, separators=(",", ":"),
  sort_keys=True, ensure_ascii=False)`` then a newline. Keys are sorted so the
  same result always prints the same bytes (diffable, cacheable); non-ASCII
  text stays readable (stdout is UTF-8 text, like the memory files).
* **Progress** is shown only when stderr is a terminal and ``CI`` is unset;
  otherwise a :class:`Progress` is silent, so logs and pipes never see it.
* **Redaction**: everything printed here, data and messages alike, passes
  ``bundlekit._redact.redact`` first (the one redaction every surface uses):
  a credential in an argument echoed by an error, in a file name, a key, a
  URL's query or a listing is replaced, never printed. Nothing else in the CLI
  writes to stdout or stderr (``LazyGroup.main`` prints click's own usage
  errors through :func:`error`).
* **Text from files** (memory names, descriptions, keys, bodies) goes through
  :func:`printable` in human output (every status, warning and error line is
  passed through it here: a path or a plugin's name in a message is text too), so a hand-written file cannot drive the
  terminal (escape sequences, a lone carriage return that overwrites a line,
  bidi overrides that reorder it). ``--json`` needs nothing: ``json.dumps``
  escapes C0 controls, and a JSON reader sees the real text.

Exit codes are not printed here: ``cli/__init__`` maps each ``BundlekitError``
to its ``exit_code`` (README, "Output and exit codes").
"""

from __future__ import annotations

import codecs
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, TextIO

import click

from bundlekit._closing import Closing
from bundlekit._marks import ESC, marks
from bundlekit._redact import redact, shown_as_is
from bundlekit._terminal import printable, printable_field

__all__ = [
    "Progress",
    "data",
    "data_json",
    "data_json_array",
    "error",
    "json_line",
    "printable",
    "printable_field",
    "progress_enabled",
    "status",
    "warn",
    "warn_all",
]

_BAR_WIDTH = 24
_REDRAW_SECONDS = 0.1


def json_line(obj: Any) -> str:
    """``obj`` as compact, key-sorted, one-line JSON (no newline)."""
    return json.dumps(obj, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def data(text: str | bytes, *, newline: bool = True) -> None:
    """Print data on stdout (``newline=False`` for content that already ends as it should); ``text`` may be
    given as its UTF-8 bytes.

    Printed to a pipe or file, click strips ANSI codes, a regular expression over the whole text (11 ms for a
    15 MB listing of 100,000 memories); a code starts with ESC, so text holding none is printed as it is (the
    marks the redaction found in it say so: ``_marks``). Bytes every check would leave as they are
    (``_redact.shown_as_is``: a kept ``memory list``) are written as they are, not decoded and encoded again,
    when stdout encodes text as UTF-8 (:func:`_writes_utf8`)."""
    if isinstance(text, bytes):
        if _writes_utf8(sys.stdout) and shown_as_is(text):
            click.echo(text, nl=False)  # click writes bytes to the binary stream, after flushing the text one
            if newline:
                click.echo(b"\n", nl=False)
            return
        text = text.decode("utf-8")
    shown = redact(text)
    color = True if not marks(shown)[0] & ESC else None
    click.echo(shown, nl=False, color=color)
    if newline:  # written after, not appended: click would copy the whole text to add it (30 MB for that listing)
        click.echo("", color=color)


def _writes_utf8(stream: Any) -> bool:
    """Whether ``stream`` has a binary buffer under it and encodes text as UTF-8: then a text's UTF-8 bytes are
    what printing the text writes. Under another encoding (``PYTHONIOENCODING=latin-1``, a cp1252 locale) the
    same text is other bytes, and UTF-8's own bytes 0x80-0x9f read as C1 controls (0x9b: CSI) on a terminal
    that reads Latin-1: bytes are decoded and printed as text there (a text-only stdout too)."""
    encoding = getattr(stream, "encoding", None)
    if getattr(stream, "buffer", None) is None or not isinstance(encoding, str):
        return False
    try:
        return codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


def data_json(obj: Any) -> None:
    """Print ``obj`` on stdout as one line of JSON (redacted as text: a replacement holds no character JSON
    escapes, so the line stays the same JSON)."""
    click.echo(redact(json_line(obj)))


def data_json_array(items: Iterable[Any]) -> None:
    """Print ``items`` on stdout as one JSON array on one line, streamed item by item."""
    click.echo("[", nl=False)
    for n, item in enumerate(items):
        click.echo(("," if n else "") + redact(json_line(item)), nl=False)
    click.echo("]")


def status(message: str) -> None:
    """A status line or summary, on stderr."""
    click.echo(printable(redact(message)), err=True)


def warn(message: str) -> None:
    """A warning on stderr, as ``warning: message``."""
    click.echo(f"warning: {printable(redact(message))}", err=True)


def warn_all(messages: Iterable[str]) -> None:
    """Each of ``messages`` as a warning on stderr (a result's ``warnings`` list)."""
    for message in messages:
        warn(message)


def error(message: str) -> None:
    """An error on stderr, as ``error: message`` (the caller sets the exit code)."""
    click.echo(f"error: {printable(redact(message))}", err=True)


def progress_enabled(stream: TextIO | None = None) -> bool:
    """True when ``stream`` (default: stderr) is a terminal and ``CI`` is not set."""
    target = sys.stderr if stream is None else stream
    isatty = getattr(target, "isatty", None)
    return bool(callable(isatty) and isatty()) and not os.environ.get("CI")


def _amount(n: int, unit: str) -> str:
    if unit != "bytes":
        return str(n)
    size = float(n)
    for suffix in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or suffix == "GiB":
            return f"{size:.0f} {suffix}" if suffix == "B" else f"{size:.1f} {suffix}"
        size /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


class Progress(Closing):
    """A one-line progress bar on stderr, drawn only when :func:`progress_enabled`.

    Call it as ``progress(done, total)`` (the library's progress callback
    shape), or :meth:`advance` by a number of units for callbacks that report
    increments. Safe to call from worker threads. Use as a context manager:
    on exit the line is ended so the next status line starts clean.
    """

    def __init__(self, label: str, *, total: int = 0, unit: str = "", enabled: bool | None = None) -> None:
        self.label = redact(label)
        self.unit = unit
        self.enabled = progress_enabled() if enabled is None else enabled
        self._total = total
        self._done = 0
        self._drawn_at = 0.0
        self._shown = False
        self._lock = threading.Lock()

    @property
    def callback(self) -> Callable[[int, int], None] | None:
        """This bar as a library ``progress(done, total)`` callback, or ``None`` when it is off
        (so the library skips its progress bookkeeping entirely)."""
        return self if self.enabled else None

    def __call__(self, done: int, total: int) -> None:
        with self._lock:
            self._done, self._total = done, total
            self._draw()

    def advance(self, n: int) -> None:
        """Add ``n`` units to the count (for callbacks that report increments)."""
        with self._lock:
            self._done += n
            self._draw()

    def _draw(self) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        finished = self._total > 0 and self._done >= self._total
        if self._shown and not finished and now - self._drawn_at < _REDRAW_SECONDS:
            return
        self._drawn_at = now
        self._shown = True
        fraction = min(1.0, self._done / self._total) if self._total > 0 else 0.0
        filled = int(fraction * _BAR_WIDTH)
        bar = "#" * filled + "-" * (_BAR_WIDTH - filled)
        unit = f" {self.unit}" if self.unit and self.unit != "bytes" else ""
        count = f"{_amount(self._done, self.unit)}/{_amount(self._total, self.unit)}{unit}"
        click.echo(f"\r{self.label} [{bar}] {fraction:4.0%} {count}\x1b[K", nl=False, err=True)  # \x1b[K: clear the rest

    def close(self) -> None:
        """End the progress line, if one was drawn."""
        with self._lock:
            if self._shown:
                click.echo("", err=True)
                self._shown = False
