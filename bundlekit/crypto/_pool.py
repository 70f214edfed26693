"""Fresh OS random bytes in fixed-size records, drawn from the OS in batches.

Every ``bundlekit-enc/1`` file needs 23 fresh random bytes (its 16-byte salt and
7-byte nonce prefix). Two ``os.urandom`` calls per file are two system calls;
a :class:`RandomPool` makes one call for ``batch`` records and hands each record
out once. Each record is still its own bytes straight from the OS CSPRNG.

The records are public values (they are written into the file header), so
holding them before use reveals nothing; what matters is that no record is
used twice. ``deque.popleft`` is atomic, so two threads never receive the same
record, and a forked child empties its copy of every pool
(``os.register_at_fork``), so a parent and its child never both use one record.
(A fork that bypasses ``os.fork``, from C code, does not run that hook; such a
child must not encrypt with a pool it inherited.)

Pools live for the whole process (the fork hook holds them): create them at
module level only.
"""

from __future__ import annotations

import os
from collections import deque
from typing import Final

from bundlekit.errors import UsageError

__all__ = ["DEFAULT_BATCH", "RandomPool"]

DEFAULT_BATCH: Final = 1024  # records per system call: 23 KiB for file headers


class RandomPool:
    """Records of ``size`` fresh random bytes from ``os.urandom``, ``batch`` of them per system call."""

    __slots__ = ("_batch", "_records", "_size")

    def __init__(self, size: int, batch: int = DEFAULT_BATCH) -> None:
        if size < 1 or batch < 1:
            raise UsageError("internal: a random pool needs a positive record size and batch")
        self._size = size
        self._batch = batch
        self._records: deque[bytes] = deque()
        os.register_at_fork(after_in_child=self._records.clear)

    def take(self) -> bytes:
        """One record, never handed out before (in this process or, after a fork, in the other one)."""
        try:
            return self._records.popleft()
        except IndexError:
            return self._refill()

    def _refill(self) -> bytes:
        """Draw ``batch`` records in one call; keep all but one, return that one."""
        size = self._size
        drawn = os.urandom(size * self._batch)
        self._records.extend([drawn[at : at + size] for at in range(size, len(drawn), size)])
        return drawn[:size]
