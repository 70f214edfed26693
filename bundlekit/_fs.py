"""Durable file-system writes: the one place that knows how to make a write survive a crash.

Lowest layer beside ``bundlekit.errors``: every module that lands bytes in a
user's files goes through here.
"""

from __future__ import annotations

import os

__all__ = ["fsync_dir"]


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
