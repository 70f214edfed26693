"""Library log records as the CLI's own one-line warnings and errors (``cli/output``), never a traceback.

A long-running command that hosts libraries which log (``bundlekit mcp``: the
MCP SDK, uvicorn, starlette, asyncio) sends their records here instead of to a
handler of their own: a record at ``WARNING`` is ``warning: MESSAGE``, one at
``ERROR`` or above ``error: MESSAGE``, both printed by ``output.warn`` and
``output.error`` and so passing whatever they apply to every message. An
exception attached to a record (``logger.exception``: the SDK's "Error
handling POST request" when a client goes away mid-body) is summed up as its
type and message in parentheses; the text is made one terminal-safe line
(``printable_field``), since a peer's bytes reach some messages (the SDK logs
the Host header it refused). Peers can make a library log at will (uvicorn
warns of every malformed request), so at most :data:`MAX_LINES` lines are
printed in any :data:`WINDOW` seconds; the rest are counted, and the count is
printed as one more warning when the next window opens.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable

from bundlekit.cli import output

__all__ = ["MAX_LINES", "MAX_LINE_CHARS", "WINDOW", "LogLines", "one_line", "route_library_logs"]

#: Log lines printed at most in one window of :data:`WINDOW` seconds.
MAX_LINES = 20
WINDOW = 10.0
#: Characters of one log line at most (before control characters are escaped).
MAX_LINE_CHARS = 1000


class LogLines(logging.Handler):
    """Each record as one ``warning:`` or ``error:`` line on stderr; :data:`MAX_LINES` per :data:`WINDOW`."""

    def __init__(self, level: int = logging.NOTSET, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(level)
        self._clock = clock
        self._window_start = -math.inf
        self._shown = 0
        self._left_out = 0

    def emit(self, record: logging.LogRecord) -> None:  # called under the handler's lock
        now = self._clock()
        if now - self._window_start >= WINDOW:
            if self._left_out:
                output.warn(f"{self._left_out} more log lines left out "
                            f"(at most {MAX_LINES} every {WINDOW:g} s)")
            self._window_start, self._shown, self._left_out = now, 0, 0
        if self._shown >= MAX_LINES:
            self._left_out += 1
            return
        self._shown += 1
        try:
            line = one_line(record)
            if record.levelno >= logging.ERROR:
                output.error(line)
            else:
                output.warn(line)
        except Exception:  # noqa: BLE001 - a log line must never break the library that logs
            self.handleError(record)

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        """A line that cannot be written (stderr closed) is dropped: logging's default prints a traceback."""


def one_line(record: logging.LogRecord) -> str:
    """``record``'s message, with its exception as ``(Type: message)``, as one terminal-safe line of at most
    :data:`MAX_LINE_CHARS` characters before escaping (an exception's text may quote a whole request)."""
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a record whose arguments do not fit its format
        message = str(record.msg)
    exc = record.exc_info[1] if record.exc_info else None
    if exc is not None:
        detail = str(exc)
        message += f" ({type(exc).__name__}: {detail})" if detail else f" ({type(exc).__name__})"
    if len(message) > MAX_LINE_CHARS:
        message = message[: MAX_LINE_CHARS - 3] + "..."
    return output.printable_field(message)


def route_library_logs(level: int = logging.WARNING) -> None:
    """Make :class:`LogLines` the root logger's only handler, at ``level``.

    Installed before a library configures logging: ``logging.basicConfig`` (the
    MCP SDK's ``configure_logging``) adds nothing to a root that has a handler.
    """
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.addHandler(LogLines(level))
    root.setLevel(level)
