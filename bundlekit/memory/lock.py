"""A cross-process lock on a memory tree: ``fcntl.flock`` on ``.bundlekit/lock``.

Every read-modify-write of the tree (a memory plus the index rebuild, a
timeline append, an import) runs under it, so several processes writing at
once lose no update and never leave a torn index. ``flock`` locks belong to
an open file description, so threads of one process that use different
:class:`TreeLock` objects also exclude each other; one :class:`TreeLock` is
re-entrant for the thread that holds it. The lock file lives in the tree's one
hidden folder beside the derived index; neither the folder nor the file may be a
symbolic link (``links``), so a planted link never makes the lock open a file
outside the tree.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bundlekit.errors import LockTimeoutError, MemoryStoreError
from bundlekit.memory.links import ensure_real_dir, open_nofollow
from bundlekit.memory.naming import HIDDEN_DIR

__all__ = ["DEFAULT_LOCK_TIMEOUT", "LOCK_NAME", "TreeLock"]

LOCK_NAME = "lock"  # inside HIDDEN_DIR
DEFAULT_LOCK_TIMEOUT = 30.0
_POLL_MIN = 0.001
_POLL_MAX = 0.01


class TreeLock:
    """Exclusive lock on ``<root>/.bundlekit/lock`` with a timeout."""

    def __init__(self, root: Path, timeout: float = DEFAULT_LOCK_TIMEOUT) -> None:
        self._root = root
        self._path = root / HIDDEN_DIR / LOCK_NAME
        self._timeout = timeout
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    @contextmanager
    def hold(self, *, wait: bool = True) -> Iterator[None]:
        """Hold the lock for the ``with`` body. Raises :class:`LockTimeoutError` after the timeout, or at once when it
        is held elsewhere and not ``wait`` (a lock that would only save work is not waited for)."""
        deadline = time.monotonic() + (self._timeout if wait else 0.0)
        if not self._thread_lock.acquire(blocking=wait, timeout=self._timeout if wait else -1):
            raise self._timeout_error()
        try:
            if self._depth == 0:
                self._acquire(deadline)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._release()
        finally:
            self._thread_lock.release()

    def _acquire(self, deadline: float) -> None:
        try:
            ensure_real_dir(self._path.parent)
            fd = open_nofollow(self._path, os.O_RDWR | os.O_CREAT, 0o644)
        except MemoryStoreError as exc:
            raise MemoryStoreError(f"cannot lock the memory tree {self._root}: {exc}") from exc
        except OSError as exc:
            # A file where the tree should be, or a read-only place: say which tree, not errno.
            reason = (
                "a file is in the way where a directory is needed"
                if isinstance(exc, (FileExistsError, NotADirectoryError))
                else exc.strerror or type(exc).__name__
            )
            raise MemoryStoreError(
                f"cannot lock the memory tree {self._root}: {reason}; choose another directory "
                "(-d / $BUNDLEKIT_MEMORY_DIR) or fix its permissions"
            ) from exc
        delay = _POLL_MIN
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise self._timeout_error() from None
                # Back off gently: writers hold the lock for milliseconds.
                time.sleep(delay)
                delay = min(delay * 2, _POLL_MAX)
        self._fd = fd

    def _release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _timeout_error(self) -> LockTimeoutError:
        return LockTimeoutError(
            f"could not lock the memory tree {self._root} within {self._timeout:g}s "
            "(another process is writing to it); retry, or check for a stuck process"
        )
