"""A change of several files in a tree happens whole or not at all: what each file held, put back on failure.

A change under the tree's lock that touches more than one file (``forget``: the audit entry
appended, then the memory deleted; ``import_``: memory files deleted and written, day files
rewritten) notes, just before each step, what the file held (``None``: it did not exist). When
a later step raises, :meth:`Undo.rollback` puts the files back, newest step first, still under
the lock: no other writer can have touched them. A file already as it was is left alone (a
step that failed before writing costs no rewrite). A rollback that fails itself stops there;
the error in flight is re-raised either way, never masked.

A crash (kill -9, power loss) between two steps is not rolled back: each step is atomic, and
the specs say what a retry does (``specs/memory.md``, "Forget").
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from bundlekit.errors import MemoryStoreError
from bundlekit.memory.backend import Backend

__all__ = ["Undo", "undo_on_failure"]


@dataclass
class Undo:
    """The journal of one locked change: ``(is a day file, name, bytes before or None)`` per step."""

    backend: Backend
    steps: list[tuple[bool, str, bytes | None]] = field(default_factory=list)

    def memory_file(self, name: str, before: bytes | None) -> None:
        """Note ``name`` (a memory file) as it is before the next step changes it."""
        self.steps.append((False, name, before))

    def day_file(self, name: str, before: bytes | None) -> None:
        """Note ``timeline/<name>`` as it is before the next step changes it."""
        self.steps.append((True, name, before))

    def rollback(self) -> None:
        """Put every noted file back as it was, newest step first (stops at the first that cannot be)."""
        backend = self.backend
        for is_day, name, before in reversed(self.steps):
            now = backend.read_timeline(name) if is_day else backend.read(name)
            if now == before:
                continue
            if before is None:
                backend.delete_timeline(name) if is_day else backend.delete(name)
            elif is_day:
                backend.write_timeline(name, before)
            else:
                backend.write(name, before)
        self.steps.clear()


@contextmanager
def undo_on_failure(backend: Backend) -> Iterator[Undo]:
    """Yield an :class:`Undo`; if the block raises, roll it back and re-raise the block's error."""
    undo = Undo(backend)
    try:
        yield undo
    except BaseException:
        try:
            undo.rollback()
        except MemoryStoreError:
            pass  # the block's error says what failed first; the files left are what a retry meets
        raise
