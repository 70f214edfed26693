"""The cyclic garbage collector paused for one bounded piece of work (a build), resumed after it.

A build of a 10,000-memory tree allocates a few hundred thousand short-lived objects (bytes, tuples, rows,
CIDs): nearly none is part of a reference cycle, so reference counting frees them, yet each allocation past
the collector's threshold starts a collection that walks every live object (issue 37: 0.10 to 0.15 s of
CPU, 12 to 15% of a writer's ``sync --name-key`` at 10,000 memories, ``gc.callbacks`` and ``process_time``
over 5 runs each). The pause covers only work whose size the tree bounds; it nests and is shared by threads
(a counter under a lock: the first to enter turns the collector off if it was on, the last to leave turns it
back on), so a long-running server that builds now and then collects as before between builds.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused", "keep_for_life"]

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """The ``with`` body runs with the cyclic collector off (as it was found once the last pause ends)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


def keep_for_life() -> None:
    """Move every object the collector tracks now into its permanent generation (``gc.freeze``), where no later
    collection walks it: called once a command's modules are imported (their classes, functions and tables live
    as long as the process). Issue 37: the first collection after the imports' pause walked the ~200,000 objects
    they made, ~7 ms of CPU of a writer's ``sync --name-key`` round, and every full collection after it again.
    Nothing is freed that would have been: a module's objects are kept by ``sys.modules`` until the process ends."""
    gc.freeze()
