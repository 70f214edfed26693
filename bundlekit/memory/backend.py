"""Where a memory tree lives: a directory on disk, or a dict (``Memory(None)``).

Both backends offer the same small set of file operations on names relative
to the tree root, plus the tree lock. The tree (``tree.py``) holds all the
rules; the backends only move text. Directory writes are atomic
(``bundlekit._fs``: a hidden temp file in the same directory, fsync,
``os.replace``; the file-mode rule is ``_fs``'s). Readers see the old file or
the new one, never a torn one. (The directory itself is not fsynced: that
would only make the rename durable sooner, at several ms per write.)
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Hashable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Protocol

from bundlekit._fs import atomic_write_bytes as _atomic_write_bytes
from bundlekit._fs import os_reason
from bundlekit.errors import MemoryStoreError
from bundlekit.memory.lock import DEFAULT_LOCK_TIMEOUT, TreeLock
from bundlekit.memory.naming import INDEX_NAME, TIMELINE_DIR

__all__ = ["Backend", "DirectoryBackend", "InMemoryBackend", "atomic_write_bytes"]

_HINT = "choose another path or fix its permissions"


class Backend(Protocol):
    """File operations the store needs. Names are ``<key>.md`` or timeline day files ``YYYY-MM-DD.jsonl``."""

    persistent: bool

    def scan_memories(self) -> list[tuple[str, Hashable]]: ...
    def read(self, name: str) -> bytes | None: ...
    def write(self, name: str, data: bytes) -> None: ...
    def delete(self, name: str) -> bool: ...
    def timeline_files(self) -> list[str]: ...
    def read_timeline(self, name: str) -> bytes | None: ...
    def append_timeline(self, name: str, line: bytes) -> None: ...
    def write_timeline(self, name: str, data: bytes) -> None: ...
    def delete_timeline(self, name: str) -> bool: ...
    def hold(self) -> AbstractContextManager[None]: ...


def os_failure(action: str, path: Path | str, exc: OSError) -> MemoryStoreError:
    """A ``MemoryStoreError`` for an OS error on ``path``, in words a user can act on (``_fs.os_reason``)."""
    return MemoryStoreError(f"cannot {action} {path}: {os_reason(exc)}; {_HINT}")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (``_fs``; parents created, directory not fsynced).

    Raises :class:`MemoryStoreError` (naming ``path``) when it cannot be
    written; the temp file is removed, nothing is left half-written.
    """
    _atomic_write_bytes(path, data, error=MemoryStoreError, hint=_HINT, parents=True, sync_dir=False)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError as exc:
        raise MemoryStoreError(f"{path} is a directory, not a memory file; move it out of the tree") from exc
    except OSError as exc:
        raise os_failure("read", path, exc) from exc


class DirectoryBackend:
    """A memory tree in a directory (created on first write)."""

    persistent = True

    def __init__(self, root: Path, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> None:
        self.root = root
        self._lock = TreeLock(root, lock_timeout)

    def scan_memories(self) -> list[tuple[str, Hashable]]:
        try:
            entries = os.scandir(self.root)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise os_failure("list the memory tree", self.root, exc) from exc
        found: list[tuple[str, Hashable]] = []
        with entries:
            for entry in entries:
                name = entry.name
                if name[-3:] != ".md" or name[0] == "." or name == INDEX_NAME:
                    continue
                try:
                    st = entry.stat()
                except FileNotFoundError:  # removed by another process since the listing
                    continue
                if stat.S_ISREG(st.st_mode):
                    # A new inode per atomic replace, plus mtime and size, tells us the file changed.
                    found.append((name, (st.st_ino, st.st_mtime_ns, st.st_size)))
        return found

    def read(self, name: str) -> bytes | None:
        return _read(self.root / name)

    def write(self, name: str, data: bytes) -> None:
        atomic_write_bytes(self.root / name, data)

    def delete(self, name: str) -> bool:
        try:
            os.unlink(self.root / name)
        except FileNotFoundError:
            return False
        return True

    def timeline_files(self) -> list[str]:
        try:
            return sorted(
                e.name
                for e in os.scandir(self.root / TIMELINE_DIR)
                if not e.name.startswith(".") and e.is_file()
            )
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise os_failure("list the timeline in", self.root / TIMELINE_DIR, exc) from exc

    def read_timeline(self, name: str) -> bytes | None:
        return _read(self.root / TIMELINE_DIR / name)

    def append_timeline(self, name: str, line: bytes) -> None:
        directory = self.root / TIMELINE_DIR
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(directory / name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except OSError as exc:
            raise os_failure("append to", directory / name, exc) from exc
        try:
            # One write per line: with O_APPEND the line lands whole at the end.
            written = os.write(fd, line)
            if written != len(line):
                raise MemoryStoreError(f"short write appending to timeline/{name}; check free disk space")
            os.fsync(fd)
        finally:
            os.close(fd)

    def write_timeline(self, name: str, data: bytes) -> None:
        atomic_write_bytes(self.root / TIMELINE_DIR / name, data)

    def delete_timeline(self, name: str) -> bool:
        try:
            os.unlink(self.root / TIMELINE_DIR / name)
        except FileNotFoundError:
            return False
        return True

    def hold(self) -> AbstractContextManager[None]:
        return self._lock.hold()


class InMemoryBackend:
    """A memory tree held in dicts: fully working, nothing written anywhere (mode ``none``)."""

    persistent = False

    def __init__(self) -> None:
        self._files: dict[str, bytes] = {}
        self._versions: dict[str, int] = {}
        self._timeline: dict[str, bytes] = {}
        self._counter = 0
        self._lock = threading.RLock()

    def scan_memories(self) -> list[tuple[str, Hashable]]:
        return [(name, self._versions[name]) for name in self._files]

    def read(self, name: str) -> bytes | None:
        return self._files.get(name)

    def write(self, name: str, data: bytes) -> None:
        if name == INDEX_NAME:
            return  # the index is always regenerated; no need to keep a copy
        self._counter += 1
        self._files[name] = data
        self._versions[name] = self._counter

    def delete(self, name: str) -> bool:
        self._versions.pop(name, None)
        return self._files.pop(name, None) is not None

    def timeline_files(self) -> list[str]:
        return sorted(self._timeline)

    def read_timeline(self, name: str) -> bytes | None:
        return self._timeline.get(name)

    def append_timeline(self, name: str, line: bytes) -> None:
        self._timeline[name] = self._timeline.get(name, b"") + line

    def write_timeline(self, name: str, data: bytes) -> None:
        self._timeline[name] = data

    def delete_timeline(self, name: str) -> bool:
        return self._timeline.pop(name, None) is not None

    @contextmanager
    def _hold(self) -> Iterator[None]:
        with self._lock:
            yield

    def hold(self) -> AbstractContextManager[None]:
        return self._hold()
