"""Stop signals take Ctrl-C's path: SIGTERM and SIGHUP raise :class:`Interrupted` in the main thread.

Python turns SIGINT into ``KeyboardInterrupt``, so every ``finally`` and
``with`` block runs on Ctrl-C: temp files are removed, a half-built directory
is deleted, servers close. SIGTERM and SIGHUP kill the process by default with
none of that, which is how a decrypted tree once outlived an MCP server stopped
by its client (issue 24). :func:`stop_signals_interrupt` gives them the same
path: while it is active each raises :class:`Interrupted` (a
``KeyboardInterrupt``) carrying the signal, and the CLI ends with
``128 + signal`` (SIGINT 130, SIGHUP 129, SIGTERM 143), as shells report it.

A cleanup that removes what must not outlive the process (a half-written
decrypted tree) runs under :func:`shielded`: a second signal arriving while it
runs (supervisors repeat SIGTERM; people press Ctrl-C twice) is held until it
ends instead of cutting it short, which once left the decrypted temp tree of an
interrupted ``load -o`` behind. SIGKILL still ends anything at once. Ctrl-C is
taken over too, to be held the same way; it still raises ``KeyboardInterrupt``
(an ``Interrupted`` carrying SIGINT) and ends with 130.

A signal the parent set to be ignored stays ignored (``nohup`` sets SIGHUP so;
a job started in the background of a non-interactive shell has SIGINT so), and
outside the main thread nothing is installed (Python delivers signals there only).
Servers that treat SIGTERM as their normal end install their own handlers while
they serve (``gateway.server.stop_on_signals``, ``mcp_server.server.run_stdio``)
and restore these after.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType

__all__ = ["STOP_SIGNALS", "Interrupted", "exit_code", "is_ignored", "shielded", "stop_signals_interrupt"]

# The signals that end a command like Ctrl-C: sent by supervisors, MCP clients, `kill` and a closed terminal.
STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A stop signal arrived: unwinds like Ctrl-C; ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def exit_code(exc: KeyboardInterrupt) -> int:
    """The exit status of a command ended by ``exc``: ``128 + signal`` (Ctrl-C, a plain ``KeyboardInterrupt``: 130)."""
    return 128 + (exc.signum if isinstance(exc, Interrupted) else signal.SIGINT)


def is_ignored(sig: signal.Signals) -> bool:
    """Whether ``sig`` is set to be ignored (by ``nohup`` or the parent): then no handler takes it over."""
    return signal.getsignal(sig) == signal.SIG_IGN


class _Shield:
    """How many :func:`shielded` blocks the main thread is in, and the signals held meanwhile."""

    depth = 0
    held: list[int] = []  # noqa: RUF012 - one per process, used from the main thread only


def _raise(signum: int, _frame: FrameType | None) -> None:
    if _Shield.depth:
        _Shield.held.append(signum)
        return
    raise Interrupted(signum)


@contextmanager
def shielded() -> Iterator[None]:
    """Hold the signals of :func:`stop_signals_interrupt` while in the block; raise the first when it ends.

    For a cleanup that must run to its end (removing a temp tree of plaintext).
    The command then ends as interrupted by the held signal (128 + it); when
    the block itself ends by an exception, that one goes on instead.
    """
    _Shield.depth += 1
    try:
        yield
    finally:
        _Shield.depth -= 1
    if not _Shield.depth and _Shield.held:
        signum = _Shield.held[0]
        _Shield.held.clear()
        raise Interrupted(signum)


@contextmanager
def stop_signals_interrupt(
    signals: Sequence[signal.Signals] = (signal.SIGINT, *STOP_SIGNALS),
) -> Iterator[None]:
    """While in the block, each of ``signals`` raises :class:`Interrupted` in the main thread (held while
    :func:`shielded`).

    Installed only in the main thread and only over a signal not ignored;
    the previous handlers are restored on exit.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _raise) for sig in signals if not is_ignored(sig)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
