"""Attacks on the first follow (``bundle/firstload.py``): a tree whose shape refuses a move midway, hostile
bundle names; each refusal must leave the tree exactly as it was (validate, then act)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlekit.bundle.lineage import heads
from bundlekit.errors import BundlekitError
from bundlekit.memory import Memory
from bundlekit.syncer import sync

from .test_first_follow import _files, _publish_files, _staged
from .test_tree_difference import NAME, _text, _tree, _writer


def test_a_file_where_the_timeline_folder_belongs_refuses_the_follow_before_any_memory_moves(tmp_path: Path) -> None:
    _writer(_tree(tmp_path / "w", 3))
    follower = tmp_path / "f"
    follower.mkdir()
    (follower / "timeline").write_bytes(b"not a folder")
    with pytest.raises(BundlekitError, match="timeline"):
        sync(follower, name=NAME)
    assert _files(follower) == {"timeline": b"not a folder"} and heads(follower) == [] and not _staged(follower)


def test_a_folder_where_the_index_belongs_refuses_the_follow_before_any_memory_moves(tmp_path: Path) -> None:
    _publish_files(tmp_path, {"memory/MEMORY.md": b"# Memory\n", "memory/Alpha.md": _text("Alpha", "First.").encode()})
    follower = tmp_path / "f"
    follower.mkdir()
    (follower / "MEMORY.md").mkdir()
    (follower / "MEMORY.md" / "x").write_bytes(b"mine")
    with pytest.raises(BundlekitError, match="MEMORY.md"):
        sync(follower, name=NAME)
    assert _files(follower) == {"MEMORY.md/x": b"mine"} and heads(follower) == [] and not _staged(follower)
