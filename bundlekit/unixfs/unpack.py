"""Safe extraction of a UnixFS DAG to a directory (or, for a file root, a file).

Rules (specs/car.md, "Unpacking"):

1. Every block read is verified against its CID; file sizes are checked
   (``UnixFSReader``). Link names are checked before anything is created:
   empty, ``.``, ``..``, ``/``, ``\\``, NUL, non-UTF-8 or duplicated names raise
   ``UnsafePathError`` naming the name and its directory.
2. Nothing is written outside ``dest``: the tree is built inside a fresh
   private temporary directory beside ``dest`` (``_fs.atomic_directory``, so
   nobody else has placed symlinks in it), files are created with
   ``O_EXCL | O_NOFOLLOW``, and UnixFS symlinks are refused rather than recreated.
3. Nothing half-written: the finished tree is flushed to disk (one
   ``os.sync()``, or an fsync per file where that does not exist) and renamed
   onto ``dest`` in one step (a file root: ``_fs.atomic_write``). On any error
   the temporary tree is removed and ``dest`` is untouched. Modes follow
   ``_fs``'s rule (umask; a replaced file or directory keeps its mode).
4. ``dest`` may be absent or an empty directory. Anything else is refused
   (``UsageError``) unless ``force``, which replaces it: the old ``dest`` is
   renamed aside, the new tree renamed in, then the old one deleted.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bundlekit._fs import atomic_directory, atomic_write, fsync_dir, os_reason
from bundlekit.errors import BundlekitError, DAGLimitExceeded, UnsafePathError, UsageError
from bundlekit.ipld.cid import cid_to_str
from bundlekit.ipld.walk import MAX_DEPTH
from bundlekit.unixfs.reader import MAX_ENTRIES, UnixFSReader

__all__ = ["UnpackResult", "unpack"]

_HINT = "choose another -o"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_BINARY = getattr(os, "O_BINARY", 0)


@dataclass(frozen=True)
class UnpackResult:
    """What was extracted: the root, where it went, and counts (the root directory included)."""

    root: bytes
    path: Path
    files: int
    directories: int
    bytes: int


def unpack(
    get_block: Callable[[bytes], bytes],
    root: bytes,
    dest: str | os.PathLike[str],
    *,
    force: bool = False,
    verify: bool = True,
    max_bytes: int | None = None,
    max_entries: int = MAX_ENTRIES,
    max_depth: int = MAX_DEPTH,
    fsync: bool = True,
) -> UnpackResult:
    """Extract the UnixFS DAG at ``root`` to ``dest`` atomically (see the module rules).

    A directory root becomes the directory ``dest``; a file root becomes the
    file ``dest``. ``max_bytes`` caps the total content written (a DAG can
    reuse one subtree many times to claim a huge size): ``DAGLimitExceeded``.

    Raises ``UsageError`` when ``dest`` is occupied and ``force`` is off,
    ``UnsafePathError`` for hostile names or symlinks, the verification and
    codec errors of ``UnixFSReader``, and ``BundlekitError`` when the file
    system refuses a write.
    """
    reader = UnixFSReader(get_block, verify=verify, max_depth=max_depth, max_entries=max_entries)
    # Absolute, so "." or "x/.." name a real directory with a real parent to build beside.
    dest = Path(os.path.abspath(dest))
    _check_dest(dest, force)  # rule 4
    _make_parent(dest)
    written = _Budget(max_bytes, root)
    # ``dest`` was checked above: whatever still stands there (an empty directory,
    # or anything with ``force``) is replaced.
    if reader.stat(root).kind in ("file", "raw"):
        with atomic_write(dest, error=BundlekitError, hint=_HINT, sync=fsync, replace_any=True) as out:
            for chunk in reader.iter_file(root):
                written.spend(len(chunk))
                out.write(chunk)
        return UnpackResult(root, dest, 1, 0, written.used)

    # One os.sync() before the rename makes the whole tree durable at the cost of
    # one flush; an fsync per file costs ~8 ms each (80 s for 10,000 small files).
    # Without os.sync (Windows) each file is fsynced instead.
    sync_all = fsync and hasattr(os, "sync")
    with atomic_directory(dest, error=BundlekitError, hint=_HINT, replace_any=True) as tmp:
        files, directories = _extract_tree(reader, root, os.fspath(tmp), written, fsync and not sync_all)
        if sync_all:
            os.sync()
        elif fsync:
            fsync_dir(tmp)
    return UnpackResult(root, dest, files, directories, written.used)


def _make_parent(dest: Path) -> None:
    """Create ``dest``'s parent (the temporary tree is built there)."""
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BundlekitError(
            f"cannot create the output's parent {dest.parent}: {os_reason(exc)}; {_HINT}"
        ) from exc


def _extract_tree(reader: UnixFSReader, root: bytes, top: str, budget: _Budget, fsync: bool) -> tuple[int, int]:
    """Rules 1-2: walk the DAG at ``root`` (names checked by the reader) into the empty directory ``top``.

    Directories are created, files written with ``O_EXCL | O_NOFOLLOW`` and
    counted against ``budget``; a symlink (or any other kind) is refused.
    Returns (files, directories), the root directory included.
    """
    files = directories = 0
    for path, cid, kind, _size in reader.walk(root):
        # Plain string joins: pathlib costs more than the syscalls for small files.
        target = os.path.join(top, path) if path else top
        if kind == "directory":
            directories += 1
            if path:
                _mkdir(target, path)
        elif kind == "file":
            files += 1
            _write_file(reader, cid, _create(target, path), path, budget, fsync)
        else:
            raise UnsafePathError(
                f"{path!r} is a UnixFS {kind}; bundlekit does not extract symlinks (they could point "
                "outside the output directory)"
            )
    return files, directories


class _Budget:
    def __init__(self, limit: int | None, root: bytes) -> None:
        self.limit = limit
        self.root = root
        self.used = 0

    def spend(self, n: int) -> None:
        self.used += n
        if self.limit is not None and self.used > self.limit:
            raise DAGLimitExceeded(
                f"{cid_to_str(self.root)} holds more than {self.limit} bytes of content; "
                "refusing to extract it (raise the limit if you expect that much)"
            )


def _is_empty_dir(path: Path) -> bool:
    if path.is_symlink() or not path.is_dir():
        return False
    try:
        with os.scandir(path) as it:
            return not any(it)
    except OSError as exc:
        raise BundlekitError(f"cannot read output directory {path}: {exc.strerror}") from exc


def _check_dest(dest: Path, force: bool) -> None:
    if not os.path.lexists(dest) or _is_empty_dir(dest):
        return
    if dest.is_dir() and not dest.is_symlink():
        what = "is a directory that is not empty"
    else:
        what = "already exists"
    if not force:
        raise UsageError(f"output {dest} {what}; choose another path or pass --force to replace it")
    _refuse_to_replace_home_or_cwd(dest)


def _refuse_to_replace_home_or_cwd(dest: Path) -> None:
    """``--force`` replaces ``dest`` whole: never the file system root, the home directory,
    or the current directory or one of its parents (``-o . --force`` would delete the
    user's working tree, ``-o ~ --force`` their home)."""
    real = Path(os.path.realpath(dest))
    protected = {Path(real.anchor)}
    home = os.path.expanduser("~")
    if home != "~":  # no $HOME and no password entry: no home to protect
        protected.add(Path(os.path.realpath(home)))
    try:
        cwd = Path(os.path.realpath(os.getcwd()))
    except OSError:  # the working directory was deleted: nothing to protect
        cwd = None
    if real in protected or (cwd is not None and (real == cwd or real in cwd.parents)):
        raise UsageError(
            f"refusing to replace {dest} with --force: it is the root, your home, or the current "
            "directory or one of its parents; unpack into a new directory"
        )


def _mkdir(target: str, path: str) -> None:
    try:
        os.mkdir(target, 0o777)  # & ~umask: the _fs mode rule
    except FileExistsError as exc:
        # Names are unique per directory, so this is a case-insensitive file system folding two names.
        raise UnsafePathError(
            f"{path!r} collides with another entry on this file system (case folding?)"
        ) from exc
    except OSError as exc:
        raise BundlekitError(f"cannot create directory {path!r}: {exc.strerror}") from exc


def _create(target: str, path: str) -> int:
    try:  # 0o666 & ~umask: the _fs mode rule
        return os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY, 0o666)
    except FileExistsError as exc:
        raise UnsafePathError(
            f"{path!r} collides with another entry on this file system (case folding?)"
        ) from exc
    except OSError as exc:
        raise BundlekitError(f"cannot create file {path!r}: {exc.strerror}") from exc


def _write_file(reader: UnixFSReader, cid: bytes, fd: int, target: str, budget: _Budget, fsync: bool) -> None:
    """Stream the file at ``cid`` into ``fd`` (closed on return), counting bytes against ``budget``."""
    try:
        for chunk in reader.iter_file(cid):
            budget.spend(len(chunk))
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]
        if fsync:
            os.fsync(fd)
    except OSError as exc:
        raise BundlekitError(f"cannot write {target}: {exc.strerror}") from exc
    finally:
        os.close(fd)
