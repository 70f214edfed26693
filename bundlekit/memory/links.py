"""No symbolic links inside a memory tree: every read and write goes through these checks.

A link planted in a tree (``x.md``, ``timeline/``, a day file, ``.bundlekit/``
or its lock and index) would make a read publish content from outside the tree
and a write land outside it. The tree's own root may be a link (the user chose
it); anything *inside* it that is a link is refused with a
:class:`MemoryStoreError` naming the link. Opens use ``O_NOFOLLOW`` so a link
planted between a check and the open is refused too, never followed.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from bundlekit._fs import os_reason
from bundlekit.errors import MemoryStoreError

__all__ = ["NOFOLLOW", "ensure_real_dir", "link_error", "open_nofollow", "refuse_link", "refuse_special"]

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_HINT = "choose another path or fix its permissions"


def link_error(path: Path | str) -> MemoryStoreError:
    """The error for a symbolic link found at ``path`` inside a memory tree."""
    return MemoryStoreError(
        f"{path} is a symbolic link; a memory tree holds only regular files and folders "
        "(a link could read or write outside it): replace it with the real file or folder, or remove it"
    )


def refuse_link(path: Path) -> bool:
    """True when ``path`` exists (as a non-link); False when it does not.

    Raises :class:`MemoryStoreError` when ``path`` is a symbolic link.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise MemoryStoreError(f"cannot inspect {path}: {os_reason(exc)}; {_HINT}") from exc
    if stat.S_ISLNK(st.st_mode):
        raise link_error(path)
    return True


_KINDS = ((stat.S_ISDIR, "folder"), (stat.S_ISFIFO, "named pipe (FIFO)"), (stat.S_ISSOCK, "socket"),
          (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"))


def refuse_special(path: Path) -> bool:
    """As :func:`refuse_link`, for a path that must be a regular file (the index and its companions): a
    folder, named pipe, socket or device there is a :class:`MemoryStoreError` naming it too. SQLite would
    open a pipe and answer "disk I/O error" (a retry never helps) or a folder "unable to open"."""
    if not refuse_link(path):
        return False
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise MemoryStoreError(f"cannot inspect {path}: {os_reason(exc)}; {_HINT}") from exc
    for test, kind in _KINDS:
        if test(mode):
            raise MemoryStoreError(f"{path} is a {kind}, not a regular file; it is where the derived memory "
                                   "index lives: remove it, and the index is built again from the memory files")
    return True


def ensure_real_dir(path: Path) -> Path:
    """Create the folder ``path`` (and its parents) unless it exists; refuse it when it is a link.

    Raises :class:`MemoryStoreError` for a link, a file in the way, or an OS error.
    """
    if not refuse_link(path):
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            reason = (
                "a file is in the way where a folder is needed"
                if isinstance(exc, (FileExistsError, NotADirectoryError))
                else os_reason(exc)
            )
            raise MemoryStoreError(f"cannot create {path}: {reason}; {_HINT}") from exc
        refuse_link(path)  # a link planted while we created it
    if not path.is_dir():
        raise MemoryStoreError(f"cannot use {path}: a file is in the way where a folder is needed; {_HINT}")
    return path


def open_nofollow(path: Path, flags: int, mode: int = 0o666) -> int:
    """``os.open`` that refuses a symbolic link at ``path`` (``O_NOFOLLOW``; ELOOP becomes :func:`link_error`).

    Other ``OSError`` subclasses pass through for the caller to word.
    """
    try:
        return os.open(path, flags | NOFOLLOW | _CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP or os.path.islink(path):  # ELOOP: O_NOFOLLOW met a link
            raise link_error(path) from exc
        raise
