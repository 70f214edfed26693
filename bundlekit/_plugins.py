"""A third party's registration, read for a listing (``bundlekit pinners``, ``bundlekit seeders``) as foreign input.

A listing loads every registered entry point and asks each for its metadata and ``is_configured(env)``: code
and values another package chose. Whatever that package does, the listing stays a listing:

* :func:`guarded` runs its calls in a worker thread, bounded in time (a hung ``is_configured`` is a row's
  error after :data:`PROBE_SECONDS`), with ``print`` sent to stderr (stdout is the listing's data), and turns
  ``sys.exit`` and any other exception into :class:`PluginFailed`; only an interrupt (Ctrl-C, a stop signal,
  a ``KeyboardInterrupt`` it raises) stays one, so the command still ends with 130, and a bundlekit error
  (the registry's own "cannot be loaded") passes as it is.
* :func:`names`, :func:`one_line` and :func:`summary` keep only plain ``str`` values (exact types: no
  subclass's methods run outside the guard), at most :data:`MAX_NAMES` names of :data:`MAX_NAME` characters
  and :data:`MAX_SUMMARY` characters of description. The text still goes through ``cli/output``, which makes
  it terminal-safe and redacted.

A worker that outlives its bound is left behind as a daemon thread (Python cannot stop a thread); the
process ends without waiting for it.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

from bundlekit.errors import BundlekitError

__all__ = ["MAX_NAME", "MAX_NAMES", "MAX_SUMMARY", "PROBE_SECONDS", "PluginFailed", "configured", "guarded",
           "names", "one_line", "summary"]

PROBE_SECONDS = 5.0  # loading a module and answering is_configured: no network, a few milliseconds
MAX_NAMES = 32  # options or variables of one registration: the built-ins declare one or two
MAX_NAME = 64  # one option or variable name
MAX_SUMMARY = 300  # a description: a third party's docstring may be a book

_T = TypeVar("_T")


class PluginFailed(Exception):
    """A registration's call failed, hung or exited; the message names what and how, never its text."""


def guarded(call: Callable[[], _T], what: str, timeout: float | None = None) -> _T:
    """``call()``'s answer, run apart (see the module): ``PluginFailed`` naming ``what`` when it raises,
    exits or takes more than ``timeout`` seconds (default :data:`PROBE_SECONDS`); a ``KeyboardInterrupt`` it
    raises is raised here."""
    bound = PROBE_SECONDS if timeout is None else timeout
    answer: list[_T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            answer.append(call())
        except BaseException as exc:  # noqa: BLE001 - foreign code: every way out is reported below
            failure.append(exc)

    worker = threading.Thread(target=run, name=f"bundlekit-probe {what[:40]}", daemon=True)
    with contextlib.redirect_stdout(sys.stderr):
        worker.start()
        worker.join(bound)
    if worker.is_alive():
        raise PluginFailed(f"{what} did not answer within {bound:g} s")
    if failure:
        exc = failure[0]
        if isinstance(exc, (KeyboardInterrupt, BundlekitError)):  # an interrupt; or our own error, its text ours
            raise exc
        if isinstance(exc, SystemExit):
            raise PluginFailed(f"{what} tried to end the program (sys.exit)") from None
        raise PluginFailed(f"{what} failed ({type(exc).__name__[:MAX_NAME]})") from None
    return answer[0]


def configured(answer: object) -> bool:
    """An ``is_configured`` answer: ``True`` or ``False`` itself, anything else ``PluginFailed`` (a string or
    an object whose ``__bool__`` is its own code is not an answer)."""
    if type(answer) is not bool:
        raise PluginFailed(f"is_configured answered a {type(answer).__name__[:MAX_NAME]}, not True or False")
    return answer


def names(value: object, what: str) -> list[str]:
    """``value`` as a list of names: a tuple or list of ``str`` (none: ``None``), at most :data:`MAX_NAMES`
    of at most :data:`MAX_NAME` characters each (longer ones cut), each printable and without white space;
    anything else (a generator, a string, bytes, a number) is
    ``PluginFailed`` naming ``what`` and the type."""
    if value is None:
        return []
    if not isinstance(value, (tuple, list)) or type(value) not in (tuple, list):
        raise PluginFailed(f"its {what} are a {type(value).__name__[:MAX_NAME]}, not a tuple of names")
    if len(value) > MAX_NAMES:
        raise PluginFailed(f"it declares {len(value)} {what}; at most {MAX_NAMES} can be listed")
    shown: list[str] = []
    for item in value:
        if type(item) is not str:
            raise PluginFailed(f"its {what} are not all names (a {type(item).__name__[:MAX_NAME]} among them)")
        if not item or not item.isprintable() or item.split() != [item]:
            raise PluginFailed(f"its {what} are not all names (one is empty or holds a space or a control character)")
        shown.append(item if len(item) <= MAX_NAME else item[:MAX_NAME] + "…")
    return shown


def one_line(value: object) -> str:
    """A ``str`` value on one line, at most :data:`MAX_SUMMARY` characters; anything else is ``""``."""
    if type(value) is not str:
        return ""
    return " ".join(value[:MAX_SUMMARY * 4].split())[:MAX_SUMMARY]


def summary(doc: object) -> str:
    """A docstring's first paragraph on one line, its ``literal`` quoting dropped (:func:`one_line`)."""
    if type(doc) is not str:
        return ""
    return one_line(doc[:MAX_SUMMARY * 4].strip().split("\n\n")[0].replace("``", ""))
