"""Attacks on the first follow (``bundle/firstload.py``): a tree whose shape refuses a move midway, hostile
bundle names; each refusal must leave the tree exactly as it was (validate, then act)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import bundlekit.bundle.load
from bundlekit.bundle.lineage import heads
from bundlekit.errors import BundlekitError, MemoryStoreError
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


def test_a_memory_an_agent_writes_without_the_lock_while_the_files_move_is_never_overwritten(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent writing its memory files directly (no lock) between the check of every name and the move of a
    later one: the move must not replace what it wrote; the next sync merges the rest."""
    _writer(_tree(tmp_path / "w", 3))
    follower = tmp_path / "f"
    Memory(follower).init()
    mine = _text("note_000002", "Written by the agent meanwhile.", updated="2026-04-16T12:00:00Z", revision=5)
    real_replace, real_link = os.replace, os.link

    def agent_writes_first(src: Any, dst: Any, *args: Any, **kwargs: Any) -> Any:
        if str(dst).endswith("note_000000.md") and not (follower / "note_000002.md").exists():
            (follower / "note_000002.md").write_text(mine, "utf-8")
        return (real_link if kwargs.pop("_link", False) else real_replace)(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", agent_writes_first)
    monkeypatch.setattr(os, "link", lambda src, dst, *a, **k: agent_writes_first(src, dst, *a, _link=True, **k))
    with pytest.raises(BundlekitError, match="note_000002.md"):
        sync(follower, name=NAME)
    monkeypatch.setattr(os, "replace", real_replace)
    monkeypatch.setattr(os, "link", real_link)
    assert (follower / "note_000002.md").read_text("utf-8") == mine and heads(follower) == []
    assert not _staged(follower)
    report = sync(follower, name=NAME)  # the tree holds memories now: merged, the agent's newer revision kept
    assert report.merge is not None and (follower / "note_000002.md").read_text("utf-8") == mine
    assert (follower / "note_000001.md").exists()


def test_a_link_planted_as_the_hidden_folder_is_refused_before_anything_is_loaded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The staging folder lives in ``.bundlekit/``: a link there would have the bundle (decrypted, when it is
    encrypted) written outside the tree before the tree's lock refused the link."""
    _writer(_tree(tmp_path / "w", 2))
    follower, elsewhere = tmp_path / "f", tmp_path / "elsewhere"
    follower.mkdir()
    elsewhere.mkdir()
    (follower / ".bundlekit").symlink_to(elsewhere, target_is_directory=True)
    loads: list[object] = []
    monkeypatch.setattr(bundlekit.bundle.load, "load_bundle", lambda *a, **k: loads.append(a))
    with pytest.raises(MemoryStoreError, match="symbolic link"):
        sync(follower, name=NAME)
    assert loads == [] and list(elsewhere.iterdir()) == [] and heads(follower) == []
