"""A cross-process lock on a memory tree: ``fcntl.flock`` on a hidden lock file.

Every read-modify-write of the tree (a memory plus the index rebuild, a
timeline append, an import) runs under it, so several processes writing at
once lose no update and never leave a torn index. ``flock`` locks belong to
an open file description, so threads of one process that use different
:class:`TreeLock` objects also exclude each other; one :class:`TreeLock` is
re-entrant for the thread that holds it.
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

__all__ = ["DEFAULT_LOCK_TIMEOUT", "LOCK_NAME", "TreeLock"]

LOCK_NAME = ".memory.lock"
DEFAULT_LOCK_TIMEOUT = 30.0
_POLL_MIN = 0.001
_POLL_MAX = 0.01


class TreeLock:
    """Exclusive lock on ``<root>/.memory.lock`` with a timeout."""

    def __init__(self, root: Path, timeout: float = DEFAULT_LOCK_TIMEOUT) -> None:
        self._path = root / LOCK_NAME
        self._timeout = timeout
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Hold the lock for the ``with`` body. Raises :class:`LockTimeoutError` after the timeout."""
        deadline = time.monotonic() + self._timeout
        if not self._thread_lock.acquire(timeout=self._timeout):
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
            self._path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            # A file where the tree should be, or a read-only place: say which tree, not errno.
            reason = (
                "a file is in the way where a directory is needed"
                if isinstance(exc, (FileExistsError, NotADirectoryError))
                else exc.strerror or type(exc).__name__
            )
            raise MemoryStoreError(
                f"cannot lock the memory tree {self._path.parent}: {reason}; choose another directory "
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
            f"could not lock the memory tree {self._path.parent} within {self._timeout:g}s "
            "(another process is writing to it); retry, or check for a stuck process"
        )
