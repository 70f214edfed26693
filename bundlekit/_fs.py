"""Durable file-system writes: the one place that knows how to make a write survive a crash.

Lowest layer beside ``bundlekit.errors``: every module that lands bytes in a
user's files goes through here (``atomic_write``, ``atomic_write_bytes`` or
``AtomicFile`` for a file, ``create_file_bytes`` for a new file that must not replace one,
``atomic_directory`` for a whole tree, made durable by ``sync_tree``, its files written by ``TreeFiles``).

The pattern: write to a temp file (or directory) beside the destination,
fsync it, ``os.replace`` it onto the destination, fsync the directory. A
reader sees the old content or the new, never a torn file. On any exception
the temp is removed and the destination is untouched; an ``OSError`` becomes
the caller's error class (a ``BundlekitError``), with a message naming the
destination and the OS reason. No raw ``OSError`` leaves these functions.

Temp names are hidden and recognisable, ``.<name>.<pid>.<8 hex>.tmp`` (a
directory too), so a crash's leftovers can be found later: ``is_temp_name``.
``sweep_stale_temps`` removes the ones a dead process left (its pid no longer
runs here and the temp is older than ``DEAD_TEMP_AGE`` seconds); a directory
write (``atomic_directory``: unpack, load, layers), ``pack -o`` and
``store gc`` sweep the directory they write into, so a ``kill -9`` costs disk
only until the next of them.

File-mode rule (the one rule for everything bundlekit writes):

* A new file gets ``0o666 & ~umask`` and a new directory ``0o777 & ~umask``,
  exactly what a plain ``open()`` or ``mkdir()`` gives (default ACLs apply).
* Replacing an existing file keeps that file's permission bits; replacing an
  existing directory keeps the directory's.
* A caller writing secrets passes ``mode=`` (``0o600`` for a file, ``0o700``
  for a directory), applied exactly. Callers that do: ``bundle.load``
  (a tree decrypted from an encrypted bundle) and ``bundle.layers`` (a
  merged view read with a key), both ``0o700`` on the tree's directory.

A temp directory is created ``0o700`` (nobody else can place a symlink in it
while it is filled) and given its final mode just before it is moved.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from bundlekit._signals import shielded
from bundlekit.errors import BundlekitError

__all__ = [
    "CREATE_NEW",
    "DEAD_TEMP_AGE",
    "AtomicFile",
    "ErrorClass",
    "TreeFiles",
    "atomic_directory",
    "atomic_write",
    "atomic_write_bytes",
    "create_file_bytes",
    "fsync_dir",
    "is_temp_name",
    "move_files",
    "open_regular",
    "os_reason",
    "read_up_to",
    "sweep_stale_temps",
    "sync_files",
    "sync_tree",
]

ErrorClass = Callable[[str], BundlekitError]
"""What a caller passes as ``error``: a ``BundlekitError`` subclass (called with the message)."""

_TEMP_NAME = re.compile(r"\..*\.(?P<pid>[0-9]+)\.[0-9a-f]{8}\.tmp")
#: Seconds a dead process's temp is left alone: a pid seen dead is only trusted on a temp
#: that nothing has touched for this long (a writer in another pid namespace stays safe).
DEAD_TEMP_AGE = 60.0
# Room for the pid, the token and the suffix within the usual 255-byte name limit.
_NAME_KEEP = 160
_ATTEMPTS = 100
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
#: ``link(2)`` errors of a file system that has no hard links (FAT, some network and FUSE mounts).
_NO_LINKS = frozenset(e for e in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS))
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BINARY = getattr(os, "O_BINARY", 0)
#: ``os.open`` flags of a file created new for writing: never an existing name, never through a
#: symlink, not inherited by child processes, no newline translation (mode: 0o666 & ~umask).
CREATE_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC | _BINARY


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make a rename or a new entry in ``path`` durable; a platform that cannot open a directory skips it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _libc_syncfs() -> Callable[[int], int] | None:
    """glibc's (or musl's) ``syncfs(2)``: Linux only, and the stdlib ``os`` has no wrapper for it."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # ~1 ms at import, and only a durable tree write needs it: not every memory command

    try:
        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):  # no dynamic libc, or one older than syncfs (glibc 2.14)
        return None
    syncfs.argtypes = [ctypes.c_int]
    syncfs.restype = ctypes.c_int
    return syncfs  # type: ignore[no-any-return]


_SYNCFS: list[Callable[[int], int] | None] = []  # looked up on the first sync_tree, then kept
#: Whether ``sync(2)`` returns only once the writes are done: Linux's waits (since 1.3.20, sync(2)); POSIX only
#: schedules them ("not necessarily complete upon return", sync(3p)), and macOS's and the BSDs' may return first.
_SYNC_WAITS = sys.platform.startswith("linux")
# syncfs(2) itself never fails so: a seccomp filter (EPERM is Docker's default answer) or an
# emulating kernel (ENOSYS) refuses the system call, where os.sync() still works.
_SYNCFS_REFUSED = frozenset((errno.ENOSYS, errno.EPERM))


def sync_tree(path: str | os.PathLike[str], *, head_start: bool = False, opened: int | None = None) -> None:
    """Make everything written under the directory ``path`` durable, as cheaply as the platform allows.

    One flush for the whole tree instead of an fsync per file (a tree of
    10,000 small files is 10,000 flushes of the disk cache):

    * Linux: ``syncfs(2)`` on ``path``'s file system (through libc): it writes
      back that file system only, where ``os.sync()`` would flush every mounted
      file system of a shared machine, and (Linux 5.8+) it reports a writeback
      error, where ``sync`` reports nothing. Where a sandbox refuses the
      system call itself (``ENOSYS``, ``EPERM``), ``os.sync()`` instead.
    * elsewhere (macOS, the BSDs, Windows): an fsync of every file and directory under ``path``: their
      ``sync(2)`` may return before the writes are done (POSIX sync(3p): "not necessarily complete upon
      return"), so it makes nothing durable before a rename.

    ``head_start=True`` is an early start while the tree is still being
    written (the final call then has less to write); it does nothing where the
    flush is an fsync per file, which would then run twice. Raises ``OSError``
    when the file system reports the flush failed. ``opened``: a descriptor of
    ``path`` opened before its files were written (``atomic_directory``):
    ``syncfs(2)`` reports only the writeback errors since its descriptor was
    opened, so one opened at the flush would miss an error the kernel met
    writing a file back before it (the file then renamed onto lost bytes).
    """
    if not _SYNCFS:
        _SYNCFS.append(_libc_syncfs())
    syncfs = _SYNCFS[0]
    if syncfs is not None:
        fd = os.open(path, os.O_RDONLY | _CLOEXEC) if opened is None else opened
        try:
            err = 0
            if syncfs(fd) != 0:
                import ctypes  # loaded already: _libc_syncfs found the function through it

                err = ctypes.get_errno()
        finally:
            if opened is None:
                os.close(fd)
        if err == 0:
            return
        if err not in _SYNCFS_REFUSED:
            raise OSError(err, os.strerror(err), os.fspath(path))
        _SYNCFS[0] = None  # a sandbox refuses the call itself: os.sync() from now on
    if _SYNC_WAITS and hasattr(os, "sync"):
        os.sync()
    elif not head_start:
        _fsync_each(path)


def sync_files(files: Sequence[AtomicFile], where: str | os.PathLike[str], *, opened: int | None = None) -> bool:
    """Make the temp files of ``files`` (written, not committed) durable together: one flush of the file system
    of ``where`` (a directory holding them; ``sync_tree``'s ``syncfs(2)``, or ``os.sync()`` where a sandbox
    refuses it) instead of an fsync each, then each counts as synced (its commit renames without an fsync).
    False, nothing done, where the platform has no flush that waits for the writes (Linux only: ``sync_tree``):
    the caller fsyncs each. ``opened``: a descriptor of ``where`` opened before the files were written (see
    ``sync_tree``: else a writeback error met before the flush goes unreported)."""
    if not _SYNCFS:
        _SYNCFS.append(_libc_syncfs())
    if _SYNCFS[0] is None and not (_SYNC_WAITS and hasattr(os, "sync")):
        return False
    for file in files:
        file.close()
    try:
        sync_tree(where, opened=opened)
    except OSError as exc:
        if not files:
            raise BundlekitError(f"cannot flush {where}: {os_reason(exc)}") from exc
        raise files[0].fail(exc) from exc
    for file in files:
        file._synced = True  # noqa: SLF001 - this module's own class
    return True


def move_files(src: str | os.PathLike[str], dest: str | os.PathLike[str], paths: Iterable[str], *,
               error: ErrorClass, replace: Iterable[str] = ()) -> None:
    """Move the files ``paths`` (relative, ``/``-separated) from the directory ``src`` to the same places under
    ``dest``: one rename each (both on one file system: the caller stages ``src`` inside ``dest``'s; a name not in
    ``replace`` is moved by a hard link then an unlink, so a file a writer that takes no lock made there meanwhile is
    never replaced, and the move stops there, ``error``), missing
    directories made, then each directory that got an entry fsynced once. The files must be durable already
    (``atomic_directory(sync=True)`` wrote them): a rename never points a name at unsynced data.

    Refuses (``error``) before moving anything when one of ``paths`` exists under ``dest`` and is not in
    ``replace`` (or is a folder, which no rename replaces), or a folder on its way is a symbolic link or not a
    folder at all (``dest`` then holds exactly what it held). The moves
    run shielded from a second signal, each into its folder as opened (:data:`_AT_FDS`: a folder replaced by a
    link after the checks stops the moves there, never leads one out of ``dest``); an ``OSError`` midway becomes
    ``error``: the files moved stay (whole, durable: their folders are fsynced all the same), the rest remain in
    ``src``."""
    source, target = Path(src), Path(dest)
    moves = sorted(set(paths))
    allowed = set(replace)
    checked: set[str] = set()  # the folders on the way already checked (10,000 files share a few)
    for rel in moves:
        _check_move(target, rel, error, replaceable=rel in allowed, checked=checked)
    if not _AT_FDS:
        _move_by_paths(source, target, moves, allowed, error)
        return
    folders: dict[str, int] = {}  # each folder on the way, opened once, never through a link
    staged: dict[str, int] = {}  # the staged source's folders, opened once: a move names a file, not a path
    with shielded():
        try:
            folders[""] = os.open(target, os.O_RDONLY | os.O_DIRECTORY)
            staged[""] = os.open(source, os.O_RDONLY | os.O_DIRECTORY)
            for rel in moves:
                parent, _sep, name = rel.rpartition("/")
                if parent not in folders:
                    folders[parent] = _open_folder(folders[""], parent)
                if parent not in staged:  # never through a link, at any of its names (a file from outside)
                    staged[parent] = _open_folder(staged[""], parent)
                if rel in allowed:
                    os.replace(name, name, src_dir_fd=staged[parent], dst_dir_fd=folders[parent])
                elif not _move_new(name, name, folders[parent], src_dir_fd=staged[parent]):
                    raise error(f"cannot move {rel} into {target}: a file of that name was written there "
                                "meanwhile (left as it is)")
        except OSError as exc:
            raise _failure(error, target, exc, None) from exc
        finally:
            for fd in staged.values():
                os.close(fd)
            for fd in folders.values():  # what moved is durable, however the moves ended
                with contextlib.suppress(OSError):
                    os.fsync(fd)
                os.close(fd)


# The moves go through folders opened one name at a time (``O_NOFOLLOW``), each rename or link into an opened
# folder: a folder of the tree replaced by a symbolic link after the checks (another program, mid-batch) makes the
# move fail there, never leads it out of the tree. A platform without ``*at`` calls moves by paths.
_AT_FDS = (os.rename in os.supports_dir_fd and os.link in os.supports_dir_fd and os.mkdir in os.supports_dir_fd
           and os.open in os.supports_dir_fd and os.unlink in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW")
           and hasattr(os, "O_DIRECTORY"))


def _open_folder(root: int, parent: str) -> int:
    """The folder ``parent`` (``/``-separated) under the opened folder ``root``, opened one name at a time, each
    made where missing, none followed when it is a symbolic link (``OSError``: ``ELOOP`` or ``ENOTDIR``)."""
    fd = os.dup(root)
    try:
        for part in parent.split("/"):
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, dir_fd=fd)
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def _move_by_paths(source: Path, target: Path, moves: list[str], allowed: set[str], error: ErrorClass) -> None:
    """:func:`move_files`'s moves where the platform has no ``*at`` calls: by paths, each folder made once."""
    touched: set[Path] = set()
    with shielded():
        try:
            for rel in moves:
                where = target / rel
                if where.parent not in touched:
                    where.parent.mkdir(parents=True, exist_ok=True)
                    touched.add(where.parent)
                if rel in allowed:
                    os.replace(source / rel, where)
                elif not _move_new(source / rel, where):
                    raise error(f"cannot move {rel} into {target}: a file of that name was written there "
                                "meanwhile (left as it is)")
        except OSError as exc:
            raise _failure(error, target, exc, None) from exc
        finally:
            for folder in sorted(touched):  # what moved is durable, however the moves ended
                fsync_dir(folder)


def _move_new(
    src: Path | str, dest: Path | str, dir_fd: int | None = None, *, src_dir_fd: int | None = None
) -> bool:
    """Move ``src`` (in the opened folder ``src_dir_fd`` when given) to ``dest`` (in the opened folder
    ``dir_fd`` when given) only while no name is there: a hard link (refused when a writer that takes no lock
    made ``dest`` since the checks: never replaced; False, ``src`` left), then the source's name removed. A file
    system without hard links gets a plain rename."""
    try:
        os.link(src, dest, src_dir_fd=src_dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno not in _NO_LINKS:
            raise
        os.replace(src, dest, src_dir_fd=src_dir_fd, dst_dir_fd=dir_fd)
        return True
    os.unlink(src, dir_fd=src_dir_fd)
    return True


def _check_move(target: Path, rel: str, error: ErrorClass, *, replaceable: bool, checked: set[str]) -> None:
    """Refuse (``error``) a move of ``rel`` into ``target`` that could not complete, before any move: a name that
    is there already (unless ``replaceable``, and then only a file: a rename cannot replace a folder), a folder on
    its way that is a symbolic link (never moved through) or anything but a folder (a rename would fail midway,
    after the moves before it). ``checked``: the folders found fine (or absent) by an earlier file's check of
    this batch, not looked at again (no move runs between the checks); this file's are added."""
    try:
        st = os.lstat(f"{os.fspath(target)}/{rel}")  # a string: no Path made for each of 10,000 files
    except FileNotFoundError:
        pass
    except OSError as exc:  # a file on its way ("Not a directory"): said below, naming that file
        if not isinstance(exc, NotADirectoryError):
            raise error(f"cannot move {rel} into {target}: {os_reason(exc)}") from exc
    else:
        if not replaceable or stat.S_ISDIR(st.st_mode):
            raise error(f"cannot move {rel} into {target}: "
                        + ("a folder of that name is there" if stat.S_ISDIR(st.st_mode) else
                           "a file of that name is there already"))
    parent = rel.rpartition("/")[0]
    if not parent or parent in checked:
        return
    checked.add(parent)
    for folder in reversed(Path(rel).parents):
        if str(folder) == ".":
            continue
        try:
            st = os.lstat(target / folder)
        except FileNotFoundError:
            return  # made by the move
        except OSError as exc:
            raise error(f"cannot move {rel} into {target}: {os_reason(exc)}") from exc
        if stat.S_ISLNK(st.st_mode):  # never through a link planted where a folder of dest should be
            raise error(f"cannot move {rel} into {target}: {target / folder} is a symbolic link")
        if not stat.S_ISDIR(st.st_mode):
            raise error(f"cannot move {rel} into {target}: {target / folder} is a file where a folder is needed")


def _fsync_each(top: str | os.PathLike[str]) -> None:
    """fsync every file under ``top`` (opened for writing: Windows' fsync needs it), then every directory."""
    for where, _dirs, names in os.walk(top):
        for name in names:
            fd = os.open(os.path.join(where, name), os.O_RDWR | _BINARY | _NOFOLLOW)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(where)


def open_regular(path: str | os.PathLike[str]) -> int:
    """A read-only descriptor of the regular file ``path``: never through a symbolic link, never waiting on a
    FIFO planted under its name (``O_NONBLOCK``); ``OSError`` for anything else there (``ELOOP`` for a link,
    ``EINVAL`` for a directory, FIFO or device), as for a file that is absent. Asked of its ``lstat`` first: a
    device is never opened (an open alone acts on some: a tape rewinds, a watchdog arms; ``O_NOCTTY``: a terminal
    never becomes the controlling one), and the kind is checked again on the descriptor (a swap between the two)."""
    kind = os.lstat(path).st_mode
    if not stat.S_ISREG(kind):
        raise OSError(errno.ELOOP if stat.S_ISLNK(kind) else errno.EINVAL,
                      "a symbolic link" if stat.S_ISLNK(kind) else "not a regular file (a directory, FIFO or device)",
                      os.fspath(path))
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | _CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a directory, FIFO or device)", os.fspath(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_up_to(fd: int, limit: int) -> bytes:
    """At most ``limit`` bytes of ``fd`` from where it is (a short read is not its end)."""
    parts: list[bytes] = []
    while limit > 0 and (chunk := os.read(fd, min(limit, 1 << 20))):
        parts.append(chunk)
        limit -= len(chunk)
    return b"".join(parts)


def is_temp_name(name: str) -> bool:
    """Whether ``name`` is a temp file or directory these helpers create (a crash leaves them behind)."""
    return _TEMP_NAME.fullmatch(name) is not None


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # someone else's process, or no answer: assume it is writing
    return True


def sweep_stale_temps(
    directory: str | os.PathLike[str],
    *,
    min_age: float = DEAD_TEMP_AGE,
    max_age: float | None = None,
    now: float | None = None,
    names: Iterable[str] | None = None,
) -> int:
    """Remove the temps in ``directory`` whose writer is dead; return how many went.

    A temp (``is_temp_name``) is stale when the pid in its name runs no
    process here and it was last modified ``min_age`` seconds ago or more,
    or (with ``max_age``) when it is older than ``max_age`` whatever its pid
    (the block store's hour: no put takes that long). Files and symlinks are unlinked, directories removed whole (never
    following a link). Best effort: an unreadable directory or a temp that
    vanishes or resists removal is skipped, never an error. ``names``: the
    entries to look at, from a listing the caller made anyway (else
    ``directory`` is listed).
    """
    clock = time.time() if now is None else now
    cutoff = clock - min_age
    ancient = None if max_age is None else clock - max_age
    removed = 0
    try:
        listed = os.listdir(directory) if names is None else names
    except OSError:
        return 0
    for name in listed:
        match = _TEMP_NAME.fullmatch(name)
        if match is None:
            continue
        path = os.path.join(directory, name)
        try:
            st = os.lstat(path)
            if not (ancient is not None and st.st_mtime < ancient) and (
                st.st_mtime > cutoff or _pid_alive(int(match["pid"]))
            ):
                continue
            if stat.S_ISDIR(st.st_mode):
                shutil.rmtree(path)
            else:
                os.unlink(path)
            removed += 1
        except OSError:
            continue
    return removed


def os_reason(exc: OSError) -> str:
    """An OS error in words: a file standing where a directory must be is said plainly.

    ``mkdir`` reports that as "File exists", ``open`` below a file as "Not a directory".
    """
    if isinstance(exc, (FileExistsError, NotADirectoryError)):
        return "a file is in the way where a directory is needed"
    return exc.strerror or str(exc)


def _failure(error: ErrorClass, dest: Path, exc: OSError, hint: str | None) -> BundlekitError:
    return error(f"cannot write {dest}: {os_reason(exc)}" + (f"; {hint}" if hint else ""))


def _temp_name(dest: Path) -> Path:
    # os.urandom: what secrets.token_hex reads, without the ~2 ms import of hmac every memory command paid
    return dest.with_name(f".{dest.name[:_NAME_KEEP]}.{os.getpid()}.{os.urandom(4).hex()}.tmp")


def _create_temp(dest: Path, make: Callable[[Path], int | None]) -> tuple[Path, int | None]:
    """Create a fresh temp beside ``dest`` with ``make`` (which must fail if the name exists)."""
    for _ in range(_ATTEMPTS):
        tmp = _temp_name(dest)
        try:
            return tmp, make(tmp)
        except FileExistsError:
            continue  # a clash with another writer's temp name: draw again
    raise FileExistsError(f"no free temporary name beside {dest}")


def _existing_mode(dest: Path, is_kind: Callable[[int], bool]) -> int | None:
    """Permission bits of ``dest`` if it is an entry of the given kind (not following a symlink)."""
    try:
        st = os.lstat(dest)
    except OSError:
        return None
    return stat.S_IMODE(st.st_mode) & 0o777 if is_kind(st.st_mode) else None


def _install(tmp: Path, dest: Path, *, replace_any: bool) -> None:
    """Rename ``tmp`` onto ``dest`` in one step.

    ``os.replace`` covers an absent ``dest``, a file over a file and (POSIX) a
    directory over an empty directory. With ``replace_any``, whatever else
    stands at ``dest`` (a directory with content, a file under a directory)
    is renamed aside first, put back if the rename fails, deleted after.
    """
    try:
        os.replace(tmp, dest)
        return
    except OSError:
        if not (replace_any and os.path.lexists(dest)):
            raise
    aside, _ = _create_temp(dest, lambda p: os.mkdir(p, 0o700))
    old = aside / "old"
    try:
        os.rename(dest, old)
        try:
            os.rename(tmp, dest)
        except OSError:
            os.rename(old, dest)  # put the original back
            raise
    except OSError:
        with contextlib.suppress(OSError):
            os.rmdir(aside)  # only when empty: never delete an original that could not be put back
        raise
    shutil.rmtree(aside, ignore_errors=True)


class AtomicFile:
    """A temp file beside ``dest`` that becomes ``dest`` on ``commit()``, or vanishes on ``discard()``.

    As a context manager (spelled ``atomic_write``) it yields the file and
    commits when the block ends. Writers that hold the file open for a long
    time or commit many files together (the CAR writer, the block store) call
    ``commit()`` themselves.
    Write through ``file`` inside ``with guard():``. Every failure here raises
    ``error`` and removes the temp file; for an ``OSError`` of its own
    elsewhere, a caller raises ``fail(exc)``.

    ``parents`` creates missing parent directories. ``sync=False`` skips the
    file's fsync (scratch data), ``sync_dir=False`` the directory's (a rename
    that may be lost in a crash, where redoing it is cheap). ``replace_any``
    also replaces a directory standing at ``dest``. ``mode``: see the module's
    file-mode rule.
    """

    def __init__(
        self,
        dest: str | os.PathLike[str],
        *,
        error: ErrorClass,
        mode: int | None = None,
        hint: str | None = None,
        parents: bool = False,
        sync: bool = True,
        sync_dir: bool = True,
        replace_any: bool = False,
    ) -> None:
        self.dest = Path(dest)
        self._error, self._hint = error, hint
        self._sync, self._sync_dir, self._replace_any = sync, sync_dir, replace_any
        self._synced = self._done = False
        keep = mode if mode is not None else _existing_mode(self.dest, stat.S_ISREG)
        try:
            if parents:
                self.dest.parent.mkdir(parents=True, exist_ok=True)
            self.temp, fd = _create_temp(self.dest, lambda p: os.open(p, CREATE_NEW, 0o666))
        except OSError as exc:
            raise _failure(error, self.dest, exc, hint) from exc
        assert fd is not None
        try:
            if keep is not None:
                os.fchmod(fd, keep)
            self._file: BinaryIO | None = os.fdopen(fd, "wb")
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.close(fd)
            self._file = None
            raise self.fail(exc) from exc

    @property
    def file(self) -> BinaryIO:
        """The open temp file (the caller's error after ``close``, ``commit`` or ``discard``)."""
        if self._file is None:
            raise self._error(f"the temporary file for {self.dest} is already closed")
        return self._file

    def fail(self, exc: OSError) -> BundlekitError:
        """Discard the temp file and return the caller's error for ``exc``, naming ``dest``."""
        self.discard()
        return _failure(self._error, self.dest, exc, self._hint)

    def close(self) -> None:
        """Flush and close the temp file without committing it (frees its descriptor in a batch)."""
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:
                raise self.fail(exc) from exc
            finally:
                self._file = None

    def sync(self) -> None:
        """fsync the temp file now (several can sync in parallel before their commits)."""
        try:
            if self._file is not None:
                self._file.flush()
                os.fsync(self._file.fileno())
            else:
                fd = os.open(self.temp, os.O_RDONLY | _CLOEXEC)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        except OSError as exc:
            raise self.fail(exc) from exc
        self._synced = True

    @contextlib.contextmanager
    def guard(self) -> Iterator[BinaryIO]:
        """Wrap a run of writes to ``file``: an exception discards the temp file, an ``OSError`` becomes ``error``."""
        try:
            yield self.file
        except OSError as exc:
            raise self.fail(exc) from exc
        except BaseException:
            self.discard()
            raise

    def commit(self) -> Path:
        """fsync (unless ``sync=False`` or already synced), close, rename onto ``dest``; return ``dest``."""
        try:
            if self._sync and not self._synced:
                self.sync()
            self.close()
            _install(self.temp, self.dest, replace_any=self._replace_any)
        except OSError as exc:
            raise self.fail(exc) from exc
        except BaseException:
            self.discard()
            raise
        self._done = True
        if self._sync_dir:
            fsync_dir(self.dest.parent)
        return self.dest

    def discard(self) -> None:
        """Close and remove the temp file; ``dest`` is left untouched. Safe to call twice."""
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
        if not self._done:
            with contextlib.suppress(OSError):
                os.unlink(self.temp)
            self._done = True

    def __enter__(self) -> BinaryIO:
        return self.file

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if exc is None:
            self.commit()
        elif isinstance(exc, OSError):
            raise self.fail(exc) from exc
        else:
            self.discard()


atomic_write = AtomicFile
"""``with atomic_write(path, error=...) as fh:`` yields a binary file that becomes ``path``
when the block ends without an exception; an exception removes the temp file and an
``OSError`` becomes ``error`` (``cannot write <path>: <reason>[; <hint>]``). The keywords
are ``AtomicFile``'s: it is the same object, used as a context manager."""


def atomic_write_bytes(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    error: ErrorClass,
    mode: int | None = None,
    hint: str | None = None,
    parents: bool = False,
    sync_dir: bool = True,
) -> None:
    """Write ``data`` to ``path`` atomically (see ``atomic_write``)."""
    with atomic_write(path, error=error, mode=mode, hint=hint, parents=parents, sync_dir=sync_dir) as fh:
        fh.write(data)


def create_file_bytes(
    path: str | os.PathLike[str], data: bytes, *, error: ErrorClass, mode: int, exists_hint: str | None = None
) -> None:
    """Write ``data`` to a new file at ``path``, whole or not at all, never over anything already there.

    The temp file is written, fsynced and hard-linked to ``path`` (the link fails if the name
    exists, even when another process made it a moment ago, or is a symlink, dangling or not),
    then removed. A secret's file (``bundlekit key new``) passes ``mode=0o600``. Any failure
    raises ``error`` naming ``path``; ``exists_hint`` is added when the name is taken.
    """
    temp = AtomicFile(path, error=error, mode=mode)
    try:
        with temp.guard() as fh:
            fh.write(data)
        temp.sync()
        temp.close()
        os.link(temp.temp, temp.dest)
    except FileExistsError:
        raise error(f"{temp.dest} already exists" + (f"; {exists_hint}" if exists_hint else "")) from None
    except OSError as exc:
        raise _failure(error, temp.dest, exc, None) from exc
    finally:
        temp.discard()
    fsync_dir(temp.dest.parent)


@contextlib.contextmanager
def atomic_directory(
    dest: str | os.PathLike[str],
    *,
    error: ErrorClass,
    mode: int | None = None,
    hint: str | None = None,
    parents: bool = False,
    replace_any: bool = False,
    sync: bool = False,
) -> Iterator[Path]:
    """Yield a fresh private temp directory beside ``dest``; fill it, and it becomes ``dest`` in one rename.

    ``dest`` may be absent or an empty directory; with ``replace_any``,
    anything at ``dest`` is replaced (renamed aside, then deleted). With
    ``sync`` the filled tree is made durable (``sync_tree``: one flush, not
    an fsync per file) before the rename; without it the caller makes the
    files durable. The directory gets its final mode (module rule), is
    renamed into place, and the parent is fsynced. Any exception removes the
    temp tree; an ``OSError`` becomes ``error`` naming ``dest``.
    """
    target = Path(dest)
    keep = mode if mode is not None else _existing_mode(target, stat.S_ISDIR)
    try:
        if parents:
            target.parent.mkdir(parents=True, exist_ok=True)
        sweep_stale_temps(target.parent)  # a killed unpack's tree (module docstring)
        tmp, _ = _create_temp(target, lambda p: os.mkdir(p, 0o700))
    except OSError as exc:
        raise _failure(error, target, exc, hint) from exc
    watch = None  # opened before any file is written: the flush reports every writeback error since (sync_tree)
    try:
        if sync:
            watch = os.open(tmp, os.O_RDONLY | _CLOEXEC)
        if keep is None:
            keep = _new_directory_mode(tmp)
        yield tmp
        if sync:
            sync_tree(tmp, opened=watch)
        os.chmod(tmp, keep)
        _install(tmp, target, replace_any=replace_any)
    except BaseException as exc:
        with shielded():  # a second Ctrl-C or SIGTERM must not leave half a tree (of plaintext) behind
            shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):
            raise _failure(error, target, exc, hint) from exc
        raise
    finally:
        if watch is not None:
            os.close(watch)
    fsync_dir(target.parent)


class TreeFiles:
    """New files written into a private temp tree (``atomic_directory``'s, made durable whole by its flush): each
    folder opened once, each file opened by its name in it (``O_NOFOLLOW``), written with ``os.write`` and closed.
    A load writes 10,000 files this way: no path walked from the root and no buffered file object per file
    (issue 37, a first follow). A name written twice is truncated and rewritten, as ``open(path, "wb")`` does;
    mode ``0o666 & ~umask`` (module rule). ``close`` closes the folders; ``OSError`` is the caller's to map."""

    def __init__(self, top: Path) -> None:
        self.top = top
        self._folders: dict[str, int] = {}

    def write(self, rel: str, data: bytes) -> None:
        """Write ``data`` as the file ``rel`` (``/``-separated) under the tree, its folders made where missing."""
        parent, _sep, name = rel.rpartition("/")
        folder = self._folders.get(parent)
        if folder is None:
            if not _AT_FDS:  # -1: a platform without ``*at`` calls (or folders that open) writes by path
                (self.top / parent).mkdir(parents=True, exist_ok=True)
                folder = -1
            else:  # one name at a time from the tree's top, none followed when it is a link (ELOOP, ENOTDIR)
                folder = _open_folder(self._top(), parent) if parent else self._top()
            self._folders[parent] = folder
        if folder >= 0:
            fd = os.open(name, _REWRITE, 0o666, dir_fd=folder)
        else:
            fd = os.open(self.top / rel, _REWRITE, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)

    def _top(self) -> int:
        """The tree's top folder, opened once (a folder planted under it as a link is never followed from it)."""
        folder = self._folders.get("")
        if folder is None:
            folder = self._folders[""] = os.open(self.top, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
        return folder

    def close(self) -> None:
        """Close the folders opened (idempotent)."""
        folders, self._folders = self._folders, {}
        for fd in folders.values():
            if fd >= 0:
                os.close(fd)


#: ``os.open`` flags of a file of a private temp tree written whole (``TreeFiles``): made or truncated, never
#: through a symlink, not inherited by child processes, no newline translation.
_REWRITE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW | _CLOEXEC | _BINARY


def _new_directory_mode(inside: Path) -> int:
    """The mode a plain ``mkdir`` gives here (``0o777 & ~umask``), learnt by making one.

    Reading the umask with ``os.umask`` would change it for a moment under
    every other thread; a probe inside the still empty private temp directory does not.
    """
    probe = inside / ".mode-probe"
    os.mkdir(probe, 0o777)
    try:
        return stat.S_IMODE(os.stat(probe).st_mode) & 0o777
    finally:
        os.rmdir(probe)


def scratch_file() -> int:
    """The descriptor of a new unnamed temporary file (read and written with ``os.pread``/``os.write``),
    owner-only: nothing of it outlives the process, not even after ``kill -9`` (Linux's ``O_TMPFILE``;
    elsewhere a private temp file unlinked at once). The gateway's kept CARs (``gateway.car_cache``)
    are such files. Raises ``OSError`` when none can be made."""
    directory = tempfile.gettempdir()
    flag = getattr(os, "O_TMPFILE", 0)
    if flag:
        with contextlib.suppress(OSError):
            return os.open(directory, flag | os.O_RDWR, 0o600)
    fd, name = tempfile.mkstemp(dir=directory, prefix=".bundlekit-scratch-")
    try:
        os.unlink(name)
    except OSError:
        os.close(fd)
        raise
    return fd
