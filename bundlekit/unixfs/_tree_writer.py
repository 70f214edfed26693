"""unpack's file system side: directories made and files written on a second thread, in order.

Extracting a tree spends its time in two places that can run at once: Python
walking the DAG and verifying its blocks (one thread, holding the GIL between
hashes), and the kernel creating files and copying their bytes (system calls,
which release the GIL). ``TreeWriter`` lets them overlap on two cores: the
walking thread hands it operations (make this directory, create this file,
write these bytes, close it) and a worker thread performs them in exactly
that order. Operations travel in batches (a few hundred small files cost one
hand-over, not one each) through a bounded queue, so memory stays bounded by
a few batches whatever the tree's size.

A tree that must be durable is flushed once at the end (``_fs.sync_tree``).
Left entirely to the end, that flush writes every byte while nothing else
happens; so, given a ``head_start``, the worker starts it in the background
every ``_HEAD_START_EVERY`` bytes (one at a time, errors ignored: the final
flush reports them), the way ``CarFileWriter`` syncs a CAR as it grows.

Every check stays in the walking thread (names, budgets, block verification);
the worker only runs ``mkdir``, ``open``, ``write`` and ``close`` on paths the
walker joined from checked names, and raises the errors the sequential code
raised, with the same messages. The first error wins, as if the operations ran
one after another: an error of the worker is raised by the next hand-over or
by ``close``, and when the walker fails on its own the worker first finishes
what it was given, so an earlier write error is the one reported.

Use as a context manager: a clean exit waits for every operation and raises
the worker's error if there was one; an interrupt (``KeyboardInterrupt``,
``SystemExit``) stops the worker after its current system call. Either way,
the worker has stopped and closed its file when the block is left, so the
caller can remove the tree.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Self, TypeVar

from bundlekit._fs import CREATE_NEW
from bundlekit.errors import BundlekitError, UnsafePathError

__all__ = ["TreeWriter"]


# Operations: bytes to append to the open file, or (_MKDIR | _OPEN | _CLOSE, target, path).
_MKDIR, _OPEN, _CLOSE = range(3)
Op = bytes | tuple[int, str, str]
_CLOSE_OP = (_CLOSE, "", "")
_T = TypeVar("_T")

# A batch is handed over once it holds this many bytes or operations; at most
# _PENDING batches wait in the queue (memory: a few MiB plus a few blocks).
_BATCH_BYTES = 1 << 20
_BATCH_OPS = 512
_PENDING = 4
# Written bytes between two background starts of the final flush.
_HEAD_START_EVERY = 32 << 20


class TreeWriter:
    """Ordered ``mkdir``/file writes performed by a worker thread (see the module docstring).

    ``target`` is the path to create (joined from checked names by the
    caller), ``path`` the entry's path inside the tree, for messages.
    Errors: ``UnsafePathError`` when a name is already taken (a case-folding
    file system), ``BundlekitError`` when the file system refuses.
    ``head_start``: what the final flush will run (see the module docstring).
    """

    def __init__(self, head_start: Callable[[], None] | None = None) -> None:
        self._head_start = head_start
        self._flusher: threading.Thread | None = None
        self._unflushed = 0
        self._queue: queue.Queue[list[Op] | None] = queue.Queue(maxsize=_PENDING)
        self._batch: list[Op] = []
        self._batch_bytes = 0
        self._error: Exception | None = None
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="bundlekit-unpack-writer", daemon=True)
        self._thread.start()

    # -- the walking thread -------------------------------------------------

    def mkdir(self, target: str, path: str) -> None:
        """Create the directory ``target`` (after everything handed over before)."""
        self._add((_MKDIR, target, path))

    def open_file(self, target: str, path: str) -> None:
        """Create the file ``target``; the ``write`` calls that follow go into it until ``close_file``."""
        self._add((_OPEN, target, path))

    def write(self, data: bytes) -> None:
        """Append ``data`` to the open file (the bytes are kept until written: do not mutate them)."""
        if not isinstance(data, bytes):  # a getter's bytearray or memoryview: a stable copy
            data = bytes(data)
        self._batch_bytes += len(data)
        self._add(data)

    def close_file(self) -> None:
        """Close the open file."""
        self._add(_CLOSE_OP)

    def _add(self, op: Op) -> None:
        batch = self._batch
        batch.append(op)
        if self._batch_bytes >= _BATCH_BYTES or len(batch) >= _BATCH_OPS:
            self._hand_over()

    def _hand_over(self) -> None:
        if self._error is not None:
            raise self._error
        if self._batch:
            self._queue.put(self._batch)
            self._batch = []
            self._batch_bytes = 0

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is not None and (exc is self._error or not isinstance(exc, Exception)):
            self._stop = True  # interrupted, or the worker's own error: stop after the current system call
        try:
            if not self._stop:
                # Finish what was handed over: a worker error on an earlier entry comes first.
                self._hand_over()
        finally:
            self._join()
        if self._error is not None and self._error is not exc:
            raise self._error
        if exc is None and self._flusher is not None:
            self._flusher.join()  # the final flush then has little left to write

    def _join(self) -> None:
        """Send the end marker and wait for the worker; a Ctrl-C meanwhile is re-raised once it stopped."""
        interrupt: KeyboardInterrupt | None = None
        sent = False
        while True:
            try:
                if not sent:
                    self._queue.put(None)
                    sent = True
                self._thread.join()
                break
            except KeyboardInterrupt as exc:  # the worker must stop before the caller removes the tree
                interrupt = interrupt or exc
                self._stop = True
        if interrupt is not None:
            raise interrupt

    # -- the worker thread --------------------------------------------------

    def _run(self) -> None:
        state = _FileState()
        try:
            while (batch := self._queue.get()) is not None:
                if self._error is None and not self._stop:
                    try:
                        self._perform(batch, state)
                    except Exception as exc:  # noqa: BLE001  (handed to the walking thread, which raises it)
                        self._error = exc
        finally:
            state.close_quietly()

    def _perform(self, batch: list[Op], state: _FileState) -> None:
        for op in batch:
            if self._stop:
                return
            if isinstance(op, bytes):
                state.write(op)
                self._unflushed += len(op)
                if self._unflushed >= _HEAD_START_EVERY:
                    self._start_flush()
                continue
            kind, target, path = op
            if kind == _OPEN:
                state.open(target, path)
            elif kind == _CLOSE:
                state.close()
            else:
                _mkdir(target, path)

    def _start_flush(self) -> None:
        if self._head_start is None or (self._flusher is not None and self._flusher.is_alive()):
            return
        self._unflushed = 0
        self._flusher = threading.Thread(target=_quietly, args=(self._head_start,), daemon=True)
        self._flusher.start()


def _quietly(flush: Callable[[], None]) -> None:
    with contextlib.suppress(OSError):  # only a head start: the final flush reports a real error
        flush()


class _FileState:
    """The worker's open file: its descriptor and its path inside the tree (for messages)."""

    def __init__(self) -> None:
        self.fd = -1
        self.path = ""

    def open(self, target: str, path: str) -> None:
        # Never an existing name (a case-folding collision is an error), never through a symlink.
        self.fd = _create(lambda: os.open(target, CREATE_NEW, 0o666), "file", path)
        self.path = path

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.fd, view) :]
        except OSError as exc:
            raise BundlekitError(f"cannot write {self.path}: {exc.strerror}") from exc

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        try:
            os.close(fd)
        except OSError as exc:
            raise BundlekitError(f"cannot write {self.path}: {exc.strerror}") from exc

    def close_quietly(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1


def _mkdir(target: str, path: str) -> None:
    _create(lambda: os.mkdir(target, 0o777), "directory", path)  # & ~umask: the _fs mode rule


def _create(make: Callable[[], _T], what: str, path: str) -> _T:
    """``make()`` (the ``open`` or ``mkdir`` of the entry at ``path``), its errors in the user's words."""
    try:
        return make()
    except FileExistsError as exc:
        # Names are unique per directory, so this is a case-insensitive file system folding two names.
        raise UnsafePathError(
            f"{path!r} collides with another entry on this file system (case folding?)"
        ) from exc
    except OSError as exc:
        raise BundlekitError(f"cannot create {what} {path!r}: {exc.strerror}") from exc
