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
   The walk (every check above and below) runs in the calling thread; the
   ``mkdir``/``open``/``write`` calls run in order on a worker thread
   (``_tree_writer.TreeWriter``), so the kernel's work overlaps the hashing.
3. Nothing half-written: the finished tree is flushed to disk in one step
   (``_fs.sync_tree``: ``syncfs(2)`` of its file system on Linux, one
   ``os.sync()`` or an fsync per file elsewhere; an fsync per small file costs
   more than writing it) and renamed onto ``dest`` in one step (a file root:
   ``_fs.atomic_write``, fsynced). On any error or interrupt the worker stops,
   the temporary tree is removed and ``dest`` is untouched. Modes follow
   ``_fs``'s rule (umask; a replaced file or directory keeps its mode).
4. Limits (specs/car.md, "Limits"): before anything is created, the DAG's
   claimed expansion (``UnixFSReader.claim``: every reuse counted) is checked
   against ``max_entries`` and ``max_bytes`` (default 64 GiB) and its declared
   size against the free space where the tree is built; while writing, the
   same budget counts visits, entries and bytes (``DAGLimitExceeded``).
5. ``dest`` may be absent or an empty directory. Anything else is refused
   (``UsageError``) unless ``force``, which replaces it: the old ``dest`` is
   renamed aside, the new tree renamed in, then the old one deleted.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from bundlekit._fs import atomic_directory, atomic_write, os_reason, sync_tree
from bundlekit.errors import BundlekitError, DAGLimitExceeded, UnsafePathError, UsageError
from bundlekit.ipld.cid import cid_to_str
from bundlekit.ipld.walk import WalkBudget, WalkLimits
from bundlekit.unixfs._tree_writer import TreeWriter
from bundlekit.unixfs.reader import UnixFSReader

__all__ = ["UnpackOptions", "UnpackResult", "unpack"]

_HINT = "choose another -o"


@dataclass(frozen=True)
class UnpackOptions:
    """How an extraction runs: one value for ``unpack``, ``unpack_car`` and ``bundlekit unpack``.

    ``force`` replaces an occupied ``dest`` (rule 5). ``limits`` bound the
    work (rule 4; ``max_bytes=None``: no byte cap): a DAG can reuse one
    subtree many times to claim a huge size. ``fsync=False`` skips making the
    tree durable before the rename (rule 3), for output nobody keeps.
    """

    force: bool = False
    limits: WalkLimits = field(default_factory=WalkLimits)
    fsync: bool = True


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
    options: UnpackOptions | None = None,
    verify: bool = True,
    raw_size: Callable[[bytes], int | None] | None = None,
) -> UnpackResult:
    """Extract the UnixFS DAG at ``root`` to ``dest`` atomically (see the module rules).

    A directory root becomes the directory ``dest``; a file root becomes the
    file ``dest``. ``options`` (``UnpackOptions()`` when None) holds ``force``,
    the limits and ``fsync``. Past a limit: ``DAGLimitExceeded``, before
    anything is written when the DAG's claim already passes it. A DAG
    declaring more bytes than the free space beside ``dest`` is refused up
    front (``BundlekitError``). ``raw_size`` (a block's stored length, or
    ``None``) spares the up-front claim a read of every raw file (a CAR index
    knows their lengths); the walk still reads and verifies each.

    Raises ``UsageError`` when ``dest`` is occupied and ``options.force`` is off,
    ``UnsafePathError`` for hostile names or symlinks, the verification and
    codec errors of ``UnixFSReader``, and ``BundlekitError`` when the file
    system refuses a write.
    """
    options = options or UnpackOptions()
    written = WalkBudget(options.limits, what=cid_to_str(root))
    reader = UnixFSReader(get_block, verify=verify, budget=written, raw_size=raw_size)
    # Absolute, so "." or "x/.." name a real directory with a real parent to build beside.
    dest = Path(os.path.abspath(dest))
    _check_dest(dest, options.force)  # rule 5
    _make_parent(dest)
    # ``dest`` was checked above: whatever still stands there (an empty directory,
    # or anything with ``force``) is replaced.
    stat = reader.stat(root)
    is_file = stat.kind in ("file", "raw")
    _check_claim(reader, root, dest, stat.size if is_file else None)  # rule 4
    if is_file:
        with atomic_write(
            dest, error=BundlekitError, hint=_HINT, sync=options.fsync, replace_any=True
        ) as out:
            for chunk in reader.iter_file(root):
                out.write(chunk)
        return UnpackResult(root, dest, 1, 0, written.bytes)

    # sync: the whole tree made durable by one flush of its file system before the rename (rule 3).
    with (
        atomic_directory(dest, error=BundlekitError, hint=_HINT, replace_any=True, sync=options.fsync) as tmp,
        # Left (the worker stopped) before the tree is synced, renamed or removed.
        TreeWriter(partial(sync_tree, tmp, head_start=True) if options.fsync else None) as writer,
    ):
        files, directories = _extract_tree(reader, root, os.fspath(tmp), writer)
    return UnpackResult(root, dest, files, directories, written.bytes)


def _check_claim(reader: UnixFSReader, root: bytes, dest: Path, file_size: int | None) -> None:
    """Rule 4, up front: the claimed entries and bytes against the limits, the bytes against free space."""
    budget = reader.budget
    if file_size is None:
        claim = reader.claim(root)
        if claim.entries > budget.limits.max_entries:
            raise DAGLimitExceeded(
                f"{budget.what} claims {claim.entries} entries, more than {budget.limits.max_entries}; "
                "refusing to extract it (raise --max-entries only for DAGs you trust)"
            )
        size = claim.bytes
    else:
        size = file_size
    budget.check_bytes(size)
    try:
        free = shutil.disk_usage(dest.parent).free
    except OSError:
        return  # no figure to compare against: writing reports a full disk itself
    if size > free:
        raise BundlekitError(
            f"{budget.what} declares {size} bytes of content but only {free} bytes are free in "
            f"{dest.parent}; free some space or {_HINT}"
        )


def _make_parent(dest: Path) -> None:
    """Create ``dest``'s parent (the temporary tree is built there)."""
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BundlekitError(
            f"cannot create the output's parent {dest.parent}: {os_reason(exc)}; {_HINT}"
        ) from exc


def _extract_tree(reader: UnixFSReader, root: bytes, top: str, writer: TreeWriter) -> tuple[int, int]:
    """Rules 1-2: walk the DAG at ``root`` (names checked by the reader) into the empty directory ``top``.

    ``writer`` creates the directories and the files (``O_EXCL | O_NOFOLLOW``)
    in walk order; the reader's budget counts the bytes as they are read. A
    symlink (or any other kind) is refused. Returns (files, directories), the
    root directory included.
    """
    files = directories = 0
    for path, cid, kind, _size in reader.walk(root):
        # Plain string joins: pathlib costs more than the syscalls for small files.
        target = os.path.join(top, path) if path else top
        if kind == "directory":
            directories += 1
            if path:
                writer.mkdir(target, path)
        elif kind == "file":
            files += 1
            writer.open_file(target, path)
            for chunk in reader.iter_file(cid):
                writer.write(chunk)
            writer.close_file()
        else:
            raise UnsafePathError(
                f"{path!r} is a UnixFS {kind}; bundlekit does not extract symlinks (they could point "
                "outside the output directory)"
            )
    return files, directories


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
