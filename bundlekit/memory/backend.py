"""Where a memory tree lives: a directory on disk, or a dict (``Memory(None)``).

Both backends offer the same small set of file operations on names relative
to the tree root, plus the tree lock. The tree (``tree.py``) holds all the
rules; the backends only move text. Directory writes are atomic
(``bundlekit._fs``: a hidden temp file in the same directory, fsync,
``os.replace``; the file-mode rule is ``_fs``'s). Readers see the old file or
the new one, never a torn one. (The directory itself is not fsynced: that
would only make the rename durable sooner, at several ms per write.) No read
or write follows a symbolic link inside the tree (``links``).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import sys
import threading
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from itertools import chain
from pathlib import Path
from typing import Protocol, TypeVar

from bundlekit._fs import atomic_write_bytes as _atomic_write_bytes
from bundlekit._fs import is_temp_name, os_reason, sweep_stale_temps
from bundlekit.errors import MemoryFileUnusable, MemoryStoreError
from bundlekit.memory.filesize import MAX_MEMORY_BYTES, too_large, unreadable
from bundlekit.memory.links import ensure_real_dir, link_error, open_nofollow, refuse_link
from bundlekit.memory.lock import DEFAULT_LOCK_TIMEOUT, TreeLock
from bundlekit.memory.naming import HIDDEN_DIR, INDEX_NAME, TIMELINE_DIR

_T = TypeVar("_T")

__all__ = ["Backend", "DirectoryBackend", "InMemoryBackend", "Scan", "Signature", "atomic_write_bytes"]

try:
    from bundlekit.memory import _statscan
except ImportError:  # not built (no C compiler at install, or not POSIX): trees are listed in Python
    _statscan = None  # type: ignore[assignment]

_HINT = "choose another path or fix its permissions"


Signature = tuple[int, int, int]
"""A file's stat signature ``(inode, mtime_ns, size)``: an atomic replace makes a new inode, an edit a new mtime."""


class Scan:
    """One listing of a tree: each memory file's signature by name, and ``MEMORY.md``'s (``None`` if absent).
    (A plain class: a dataclass costs a few hundred microseconds at import, on every command.)

    Made from a dict (in any order), or from the packed form ``_statscan`` lists into (the names sorted,
    NUL between, and their numbers), whose dict is only built when asked for: checking an unchanged tree
    compares the packed form (:meth:`packed`, sorted by name whatever order the directory listed the files
    in) with the index's sorted signature blob and never needs one.
    """

    __slots__ = ("_count", "_memories", "_names", "_packed", "contents", "index", "temps")

    def __init__(self, memories: dict[str, Signature], index: Signature | None) -> None:
        self._memories: dict[str, Signature] | None = memories
        self._packed: tuple[bytes, bytes] | None = None
        self._count = len(memories)
        self._names: list[str] | None = None
        self.index = index
        self.temps = False  # the root held a writer's temp (``_fs.is_temp_name``): live, or left by a killed one
        # A listing that read the files as it listed them (``DirectoryBackend.scan(read=True)``): per name of
        # :meth:`names`, its bytes, the MemoryFileUnusable of one over the bound, or None for one not read (its
        # reader reads it, as one the listing could not read); None when nothing was read. Taken once (``TreeAccess``): bytes are never reused.
        self.contents: list[bytes | MemoryFileUnusable | None] | None = None

    @classmethod
    def from_packed(cls, names: bytes, numbers: bytes, count: int, index: Signature | None) -> Scan:
        """A listing from ``names`` (the file names as the directory gives them, NUL between) and ``numbers``
        (each name's inode, mtime in ns and size: native signed 64-bit integers), ``count`` names."""
        scan = cls({}, index)
        scan._memories = None
        scan._packed = (names, numbers)
        scan._count = count
        return scan

    @property
    def memories(self) -> dict[str, Signature]:
        if self._memories is None:
            assert self._packed is not None
            names, numbers = self._packed
            listed = names.decode("utf-8", "surrogateescape").split("\0") if self._count else []
            each = iter(array("q", numbers))
            self._memories = dict(zip(listed, zip(each, each, each, strict=True), strict=True))
        return self._memories

    def __len__(self) -> int:
        return self._count

    def signatures_of(self, names: list[str]) -> dict[str, Signature]:
        """The listed signatures of ``names`` (a name not listed left out): from the dict when it is made, else
        each found by bisection in the names (:meth:`_place`: the few files a sync round indexes again need no dict of
        10,000)."""
        if self._memories is not None:
            return {name: self._memories[name] for name in names if name in self._memories}
        assert self._packed is not None
        numbers = self._packed[1]
        found: dict[str, Signature] = {}
        for name in names:
            at = self._place(name)
            if at is not None:
                ino, mtime, size = array("q", numbers[24 * at : 24 * at + 24])
                found[name] = (ino, mtime, size)
        return found

    def names(self) -> list[str]:
        """The memory files' names, sorted as :meth:`packed` sorts them (made once: a merge asks three times; the
        caller does not change the list)."""
        if self._names is None:
            packed = self.packed()
            if packed is None:
                self._names = sorted(self.memories, key=_bytewise)
            else:
                self._names = packed[0].decode("utf-8", "surrogateescape").split("\0") if self._count else []
        return self._names

    def holding(self, names: Iterable[str]) -> list[str]:
        """Those of ``names`` the listing holds, in its order (:meth:`names`): a merge's few files looked up, not
        the listing walked for them (100,000 names at 100,000 memories)."""
        listed, wanted = self.names(), set(names)
        if len(wanted) > _FEW:
            return [name for name in listed if name in wanted]
        return [name for name in sorted(wanted, key=_bytewise) if self._place(name) is not None]

    def _place(self, name: str) -> int | None:
        """Where ``name`` is in :meth:`names` (bisection in their byte order), or ``None`` when it is not listed."""
        listed = self.names()
        at = bisect_left(listed, _bytewise(name), key=_bytewise)
        return at if at < len(listed) and listed[at] == name else None

    def other_case(self, filename: str) -> str | None:
        """A listed file name equal to ``filename`` ignoring ASCII case but not equal to it (a key is ASCII), or
        None: one pass of C over the packed names, where asking the index took a scan of its table in SQL
        (70 ms at 100,000 memories, on every write)."""
        packed = self.packed()
        if packed is None or not filename.isascii():
            folded = filename.lower()
            return next((n for n in self.memories if n != filename and n.isascii() and n.lower() == folded), None)
        blob = b"\0" + packed[0] + b"\0"
        wanted = b"\0" + filename.encode("ascii").lower() + b"\0"
        lowered = blob.lower()  # ASCII letters only: every offset stays where it was
        at = lowered.find(wanted)
        while at != -1:
            found = blob[at + 1 : at + len(wanted) - 1].decode("utf-8", "surrogateescape")
            if found != filename:
                return found
            at = lowered.find(wanted, at + 1)
        return None

    def packed(self) -> tuple[bytes, bytes] | None:
        """The names (UTF-8, NUL between) sorted bytewise (code-point order) and their numbers (native signed
        64-bit), or ``None`` when a number does not fit in 64 bits (no index row can hold it then)."""
        if self._packed is None:
            assert self._memories is not None
            # surrogateescape: a listed name that is not UTF-8 (never stored) differs instead of raising.
            encoded = sorted((name.encode("utf-8", "surrogateescape"), name) for name in self._memories)
            try:
                numbers = array("q", list(chain.from_iterable(self._memories[name] for _b, name in encoded)))
            except OverflowError:
                return None
            self._packed = (b"\0".join(b for b, _name in encoded), numbers.tobytes())
        return self._packed

    def __repr__(self) -> str:
        return f"Scan({self._count} memories, index={self.index!r})"


class Backend(Protocol):
    """File operations the store needs. Names are ``<key>.md`` or timeline day files ``YYYY-MM-DD.jsonl``."""

    persistent: bool

    def scan(self, *, read: bool = False) -> Scan: ...
    def stamp(self) -> object: ...
    def read(self, name: str) -> bytes | None: ...
    def read_many(self, names: list[str]) -> list[bytes | MemoryFileUnusable | None]: ...
    def digest(self, name: str) -> str | None: ...
    def write(self, name: str, data: bytes) -> None: ...
    def delete(self, name: str) -> bool: ...
    def signature(self, name: str) -> Signature | None: ...
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


def _read(path: Path, limit: int | None = None, where: str | None = None) -> bytes | None:
    """The bytes of ``path`` (``None`` when absent); a link is refused, never followed, and anything but a
    regular file (a FIFO planted under a memory's name would block the open, then the read, for ever) is
    refused without waiting on it, as ``_statscan.read_files`` refuses it. With ``limit`` (a memory file:
    ``filesize``) a file of more bytes raises :class:`MemoryFileTooLarge`: checked from its size before the
    read, and the read stops after ``limit + 1`` bytes (a file growing meanwhile is never read whole), naming
    the file as ``where`` (default: its name). A file the OS refuses to read (permission denied, an I/O
    error) raises :class:`MemoryFileUnreadable` naming it: one memory file left out, not the tree refused."""
    fd = _open_regular(path, memory=True)
    if fd is None:
        return None
    try:
        size = os.fstat(fd).st_size
        if limit is not None and size > limit:
            raise too_large(where or path.name, size)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read() if limit is None else handle.read(limit + 1)
    except OSError as exc:
        raise _read_failure(path, exc, memory=True) from exc
    finally:
        os.close(fd)
    if limit is not None and len(data) > limit:
        raise too_large(where or path.name, None)
    return data


#: OS errors on a memory file that are the tree's shape, not the file's bytes: a link (ELOOP under
#: O_NOFOLLOW), a directory, a path through a file. These stay refusals of the tree (specs/memory.md).
_SHAPE_ERRNOS = frozenset({errno.ELOOP, errno.EISDIR, errno.ENOTDIR})
#: OS errors that are the process's, not the file's: out of descriptors (``ulimit -n``) or memory. Taken as a
#: file's, every file of the tree would be "unreadable" and left out of a build; they stay refusals of the read.
_PROCESS_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})


def _read_failure(path: Path, exc: OSError, *, memory: bool) -> MemoryStoreError:
    """The error for ``exc`` met reading ``path``: with ``memory`` (a memory file) and not about the tree's
    shape (:data:`_SHAPE_ERRNOS`), a :class:`MemoryFileUnreadable` naming the file, which readers of many files
    return in its place; else :func:`os_failure`."""
    if memory and exc.errno not in _SHAPE_ERRNOS and exc.errno not in _PROCESS_ERRNOS:
        return unreadable(str(path), os_reason(exc))
    return os_failure("read", path, exc)


def _open_regular(path: Path, *, memory: bool = False) -> int | None:
    """A descriptor of the regular file ``path`` (``None`` when absent), never through a link nor waiting on a
    FIFO; :class:`MemoryStoreError` for a directory or another kind of file (a FIFO, socket or device), and for
    a file the OS refuses (with ``memory``: :class:`MemoryFileUnreadable`, :func:`_read_failure`)."""
    try:
        fd = open_nofollow(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _read_failure(path, exc, memory=memory) from exc
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        os.close(fd)
        raise _read_failure(path, exc, memory=memory) from exc
    if stat.S_ISREG(mode):
        return fd
    os.close(fd)
    if stat.S_ISDIR(mode):
        raise MemoryStoreError(f"{path} is a directory, not a memory file; move it out of the tree")
    raise MemoryStoreError(f"{path} is not a regular file (a FIFO, socket or device), not a memory file; "
                           "move it out of the tree")


def _digest(path: Path) -> str | None:
    """The SHA-256 (hex) of ``path``'s bytes, read in pieces of a MiB (a file of any size, in bounded memory;
    ``None`` when absent), as :func:`_read` opens it."""
    fd = _open_regular(path)
    if fd is None:
        return None
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "rb", closefd=False) as handle:
            for piece in iter(lambda: handle.read(1 << 20), b""):
                digest.update(piece)
    except OSError as exc:
        raise os_failure("read", path, exc) from exc
    finally:
        os.close(fd)
    return digest.hexdigest()


def _read_or_unusable(path: Path) -> bytes | MemoryFileUnusable | None:
    """:func:`_read` of a memory file, with its :class:`MemoryFileUnusable` (over the bound, or refused by the
    OS) returned, not raised (one such file is one file left out, not a read of many refused)."""
    try:
        return _read(path, MAX_MEMORY_BYTES)
    except MemoryFileUnusable as exc:
        return exc


def _c_listing() -> bool:
    """Whether ``_statscan`` lists: built, and file names decoded as UTF-8 with surrogate escapes (its names
    are the directory's bytes, which are then exactly the encoded names the index compares)."""
    return (
        _statscan is not None
        and sys.getfilesystemencoding() == "utf-8"
        and sys.getfilesystemencodeerrors() == "surrogateescape"
    )


_FEW = 256  # up to this many names are looked up in a listing by binary search; more, the listing is walked


def _read_in_c(names: list[str], found: list[bytes | int | None]) -> list[bytes | MemoryFileUnusable | None]:
    """What ``_statscan`` read of each of ``names`` (``read_files``, or ``scan`` with a limit), as :meth:`read_many`
    returns it: an int is the size of a file over the bound (-1: it grew past the bound while it was read)."""
    return [too_large(name, None if data < 0 else data) if isinstance(data, int) else data
            for name, data in zip(names, found, strict=True)]


def _bytewise(name: str) -> bytes:
    """A listed name's sort key: its bytes as the directory holds them (the order :meth:`Scan.packed` keeps)."""
    return name.encode("utf-8", "surrogateescape")


def _signature(st: os.stat_result) -> Signature:
    return (st.st_ino, st.st_mtime_ns, st.st_size)


class DirectoryBackend:
    """A memory tree in a directory (created on first write). Links inside it are refused (``links``)."""

    persistent = True

    def __init__(self, root: Path, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> None:
        self.root = root
        self._lock = TreeLock(root, lock_timeout)
        self._swept = False
        self._root_sweep_due = False  # under the first hold, until a listing of the root sweeps it
        # Under the hold, from a check the index may record (``indexer``): the directory's stamp as that check
        # and this process's own changes since left it; None once something else moved it meanwhile (a file
        # another program added mid-command), so a command's record never vouches for a change it did not make.
        self.own_stamp: object = None

    def scan(self, *, read: bool = False) -> Scan:
        """One listing of the root: memory files and ``MEMORY.md`` with their signatures.

        Hidden names (the store's folder, temp files) are skipped; a link named
        ``*.md`` or ``timeline`` raises :class:`MemoryStoreError`. Listed by
        ``_statscan`` where it is built (the same decisions, in C, about half the
        time at 10,000 files), else by ``os.scandir``.

        ``read``: a whole-tree read follows (a build), so where ``_statscan`` lists, each memory file is read as it
        is listed (:attr:`Scan.contents`, as :meth:`read_many` reads them; its signature then the open file's):
        one pass over 10,000 files, not a listing and then a read. Elsewhere nothing is read here.
        """
        dir_fd = None
        try:
            # Listed through a descriptor where the OS allows: each lstat is then one name, not a path walk
            # (the entries stat relative to it, so it stays open until the listing is done).
            if os.scandir in os.supports_fd:
                dir_fd = os.open(self.root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except FileNotFoundError:
            return Scan({}, None)
        except OSError as exc:
            raise os_failure("list the memory tree", self.root, exc) from exc
        hidden: list[str] = []
        try:
            scan = self._listed_in_c(dir_fd, hidden, read) if dir_fd is not None and _c_listing() else None
            if scan is None:  # no C listing here, or a number past 64 bits: Python's integers hold it
                entries = self._entries(dir_fd)
                if entries is None:
                    return Scan({}, None)
                scan = self._listed(entries, hidden)
        finally:
            if dir_fd is not None:
                os.close(dir_fd)
        if self._root_sweep_due:  # the first listing under the lock: its hidden names hold any dead temps
            self._root_sweep_due = False
            sweep_stale_temps(self.root, names=hidden)
        scan.temps = any(map(is_temp_name, hidden))
        return scan

    def _entries(self, dir_fd: int | None) -> Iterator[os.DirEntry[str]] | None:
        """``os.scandir`` of the root (through ``dir_fd`` when there is one); ``None`` when the root is gone."""
        try:
            return os.scandir(self.root if dir_fd is None else dir_fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise os_failure("list the memory tree", self.root, exc) from exc

    def _listed_in_c(self, dir_fd: int, hidden: list[str], read: bool) -> Scan | None:
        try:
            found = _statscan.scan(dir_fd, 0, MAX_MEMORY_BYTES) if read else _statscan.scan(dir_fd)
        except OSError as exc:
            if exc.filename is not None:  # one entry's lstat failed: as the Python listing says it
                raise os_failure("inspect", self.root / exc.filename, exc) from exc
            raise os_failure("list the memory tree", self.root, exc) from exc  # opening or reading the folder
        if found is None:
            return None
        names, numbers, count, index, hidden_names, link = found[:6]
        hidden.extend(hidden_names)
        if link is not None:
            raise link_error(self.root / link)
        scan = Scan.from_packed(names, numbers, count, index)
        if len(found) == 7:
            contents: list[bytes | int | None] = found[6]  # type: ignore[misc]  # the seventh with a limit
            scan.contents = _read_in_c(scan.names(), contents)
        return scan

    def _listed(self, entries: Iterator[os.DirEntry[str]], hidden: list[str]) -> Scan:
        found: dict[str, Signature] = {}
        index: Signature | None = None
        with entries:  # type: ignore[attr-defined]  # os.scandir's iterator is a context manager
            for entry in entries:
                name = entry.name
                if name[0] == ".":
                    hidden.append(name)
                    continue
                is_md = name[-3:] == ".md"
                if not is_md and name != TIMELINE_DIR:
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:  # removed by another process since the listing
                    continue
                except OSError as exc:  # a folder that can be read but not searched, say
                    raise os_failure("inspect", self.root / name, exc) from exc
                if stat.S_ISLNK(st.st_mode):
                    raise link_error(self.root / name)
                if not is_md or not stat.S_ISREG(st.st_mode):
                    continue
                if name == INDEX_NAME:
                    index = _signature(st)
                else:
                    found[name] = (st.st_ino, st.st_mtime_ns, st.st_size)  # _signature, inlined: 10,000 calls
        return Scan(found, index)

    def defer_root_sweep(self) -> None:
        """Leave the root's dead temps to a later hold that lists the root: this one trusts the last full check
        (``indexer``) and does not list it, and listing it only to sweep costs what the trust saves. (A temp a
        killed writer left moved the directory, so the next command checks fully; a temp is dead only once
        untouched for a minute: ``_fs.sweep_stale_temps``.)"""
        self._root_sweep_due = False

    def stamp(self) -> object:
        """The tree directory's own (inode, mtime, ctime): it moves when an entry is added, removed or replaced.
        The ctime because the mtime can be put back (``touch -d``, ``rsync -a``, ``tar x``, ``cp -a`` into the
        tree restore it after adding their files); setting it moves the ctime, which nothing but the clock sets."""
        try:
            st = os.stat(self.root)
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)

    def signature(self, name: str) -> Signature | None:
        try:
            st = os.lstat(self.root / name)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise os_failure("inspect", self.root / name, exc) from exc
        if stat.S_ISLNK(st.st_mode):
            raise link_error(self.root / name)
        return _signature(st)

    def read(self, name: str) -> bytes | None:
        """The bytes of the memory file (or ``MEMORY.md``) ``name``, ``None`` when it is gone; one over the
        bound (``filesize``) raises :class:`MemoryFileTooLarge`, read no further than the bound; one the OS refuses
        to read raises :class:`MemoryFileUnreadable`."""
        return _read(self.root / name, MAX_MEMORY_BYTES)

    def digest(self, name: str) -> str | None:
        """The SHA-256 (hex) of the file ``name``, whatever its size (read in pieces), ``None`` when gone: what
        ``forget`` records of a file over the bound, never read whole."""
        return _digest(self.root / name)

    def read_many(self, names: list[str]) -> list[bytes | MemoryFileUnusable | None]:
        """The bytes of each of ``names`` (``None`` for one that is gone, the :class:`MemoryFileUnusable` for one
        over the bound or refused by the OS), as :meth:`read` reads them: by ``_statscan.read_files`` in one call where it is built
        (output reads every memory it shows)."""
        if len(names) < 8 or not _c_listing():
            return [_read_or_unusable(self.root / name) for name in names]
        try:
            dir_fd = os.open(self.root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except FileNotFoundError:
            return [None] * len(names)
        except OSError as exc:
            raise os_failure("read the memory tree", self.root, exc) from exc
        try:
            found = _statscan.read_files(dir_fd, "\0".join(names).encode("utf-8", "surrogateescape"), MAX_MEMORY_BYTES)
        except OSError as exc:
            path = self.root / (exc.filename or "")
            if exc.errno == errno.ELOOP:
                raise link_error(path) from exc
            if exc.errno == errno.EISDIR:
                raise MemoryStoreError(f"{path} is a directory, not a memory file; move it out of the tree") from exc
            if exc.errno in _PROCESS_ERRNOS:
                raise os_failure("read", path, exc) from exc
            # The C reader stops at the first file it cannot read (EACCES, EIO, ...): rare, so read each file in
            # Python, which returns that one's MemoryFileUnreadable in its place and reads the rest.
            return [_read_or_unusable(self.root / name) for name in names]
        finally:
            os.close(dir_fd)
        return _read_in_c(names, found)

    def write(self, name: str, data: bytes) -> None:
        refuse_link(self.root / name)
        self._own_change(lambda: atomic_write_bytes(self.root / name, data))

    def delete(self, name: str) -> bool:
        return self._own_change(lambda: self._delete(name))

    def _delete(self, name: str) -> bool:
        try:
            os.unlink(self.root / name)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise os_failure("delete", self.root / name, exc) from exc
        return True

    def _own_change(self, change: Callable[[], _T]) -> _T:
        """Make one of this process's changes to the root, following :attr:`own_stamp` across it (a stat
        before and after: the directory moved before it by something else ends the chain)."""
        if self.own_stamp is not None and self.stamp() != self.own_stamp:
            self.own_stamp = None
        try:
            return change()
        finally:
            if self.own_stamp is not None:
                self.own_stamp = self.stamp()

    def _timeline(self) -> Path:
        directory = self.root / TIMELINE_DIR
        refuse_link(directory)
        return directory

    def timeline_files(self) -> list[str]:
        directory = self._timeline()
        names = []
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    if entry.name.startswith("."):
                        continue
                    if entry.is_symlink():
                        raise link_error(directory / entry.name)
                    if entry.is_file(follow_symlinks=False):
                        names.append(entry.name)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise os_failure("list the timeline in", directory, exc) from exc
        return sorted(names)

    def read_timeline(self, name: str) -> bytes | None:
        """The bytes of the day file ``timeline/<name>``, ``None`` when it is gone; one over the bound of a memory
        file (``filesize``: a day is parsed whole, at about 14 times its size) raises :class:`MemoryFileTooLarge`
        naming it, read no further than the bound; one the OS refuses to read, :class:`MemoryFileUnreadable`."""
        return _read(self._timeline() / name, MAX_MEMORY_BYTES, f"timeline/{name}")

    def append_timeline(self, name: str, line: bytes) -> None:
        directory = self._own_change(lambda: ensure_real_dir(self._timeline()))  # made here: the root moves
        try:
            fd = open_nofollow(directory / name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        except OSError as exc:
            raise os_failure("append to", directory / name, exc) from exc
        try:
            # One write per line: with O_APPEND the line lands whole at the end.
            written = os.write(fd, line)
            if written != len(line):
                raise MemoryStoreError(f"short write appending to timeline/{name}; check free disk space")
            os.fsync(fd)
        except OSError as exc:
            raise os_failure("append to", directory / name, exc) from exc
        finally:
            os.close(fd)

    def write_timeline(self, name: str, data: bytes) -> None:
        directory = self._timeline()
        refuse_link(directory / name)
        self._own_change(lambda: atomic_write_bytes(directory / name, data))  # it may make the folder

    def delete_timeline(self, name: str) -> bool:
        try:
            os.unlink(self._timeline() / name)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise os_failure("delete", self.root / TIMELINE_DIR / name, exc) from exc
        return True

    def hold(self, *, wait: bool = True) -> AbstractContextManager[None]:
        """The tree's lock for the ``with`` body; not ``wait``: :class:`LockTimeoutError` at once when it is held."""
        return self._hold(wait)

    @contextmanager
    def _hold(self, wait: bool = True) -> Iterator[None]:
        with self._lock.hold(wait=wait):
            if not self._swept:
                self._swept = True
                self._sweep_dead_temps((self.root / TIMELINE_DIR, self.root / HIDDEN_DIR))
                self._root_sweep_due = True
            try:
                yield
            finally:
                if self._root_sweep_due:  # nothing listed the root under this hold
                    self._root_sweep_due = False
                    self._sweep_dead_temps((self.root,))

    def _sweep_dead_temps(self, folders: tuple[Path, ...]) -> None:
        """Remove the temps a killed writer left in ``folders`` (the root, ``timeline/``, the store's folder).

        ``_fs.sweep_stale_temps`` decides (pid gone, untouched for a minute); it runs
        once per backend, at its first write under the lock, so a ``kill -9`` mid-write
        costs disk only until the next writing command. The root is swept from the
        hidden names of the first listing under the lock (a write lists it anyway:
        10,000 names are not listed twice), or at the end of that hold if none
        listed it. A folder that is a link is skipped (the commands refuse it; a
        sweep must not reach outside the tree).
        """
        for folder in folders:
            try:
                if stat.S_ISDIR(os.lstat(folder).st_mode):
                    sweep_stale_temps(folder)
            except OSError:
                continue


class InMemoryBackend:
    """A memory tree held in dicts: fully working, nothing written anywhere (mode ``none``)."""

    persistent = False

    def __init__(self) -> None:
        self._files: dict[str, bytes] = {}
        self._versions: dict[str, int] = {}
        self._timeline: dict[str, bytes] = {}
        self._counter = 0
        self._lock = threading.RLock()

    def scan(self, *, read: bool = False) -> Scan:
        """The files held, with their versions as signatures (``read``: nothing is read ahead here)."""
        return Scan({name: (0, self._versions[name], len(data)) for name, data in self._files.items()}, None)

    def stamp(self) -> object:
        return self._counter, len(self._files)

    def signature(self, name: str) -> Signature | None:
        data = self._files.get(name)
        return None if data is None else (0, self._versions[name], len(data))

    def read(self, name: str) -> bytes | None:
        return self._files.get(name)

    def read_many(self, names: list[str]) -> list[bytes | MemoryFileUnusable | None]:
        return [self._files.get(name) for name in names]

    def digest(self, name: str) -> str | None:
        data = self._files.get(name)
        return None if data is None else hashlib.sha256(data).hexdigest()

    def write(self, name: str, data: bytes) -> None:
        if name == INDEX_NAME:
            return  # the index is always regenerated; no need to keep a copy
        self._counter += 1
        self._files[name] = data
        self._versions[name] = self._counter

    def delete(self, name: str) -> bool:
        self._counter += 1
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
