"""``--share TYPES`` and ``--share-timeline``: one spelling of a shared bundle for ``build`` and ``pin``.

The policy is resolved (``bundle.share.share_policy``: the options, else the
tree's ``[share]`` config) before anything is built, so an unknown type, an
empty list or a malformed config stops the command with exit 2 and nothing
written.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from bundlekit.bundle.share import SharePolicy, share_policy

__all__ = ["share_options", "shared"]


def share_options(command: Callable[..., None]) -> Callable[..., None]:
    """Add ``--share TYPES`` (repeatable, comma-separated) and ``--share-timeline`` to ``command``."""

    @click.option("--share", "share_types", multiple=True, metavar="TYPES",
                  help="Build a shared bundle of only these memory types (comma-separated or repeated; "
                       "never a memory marked share: private). Default: the tree's [share] config.")
    @click.option("--share-timeline", is_flag=True, help="With --share: the timeline goes too.")
    @functools.wraps(command)
    def with_share(*args: Any, **kwargs: Any) -> None:
        command(*args, **kwargs)

    return with_share


def shared(share_types: tuple[str, ...], share_timeline: bool, tree: Path | None) -> SharePolicy | None:
    """The share policy of a build of ``tree`` (None: the whole tree); ``UsageError`` when it fails closed."""
    root = tree if tree is not None and tree.is_dir() else None
    return share_policy(share_types, timeline=share_timeline, root=root)
