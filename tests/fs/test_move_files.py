"""``_fs.move_files`` into a tree another program changes meanwhile: the checks run before any move, so a folder
replaced by a symbolic link after them (mid-batch) must stop the moves there, never lead a file out of the tree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bundlekit import _fs
from bundlekit.errors import MemoryStoreError


def _staged(tmp_path: Path) -> tuple[Path, Path, Path]:
    source, tree, outside = tmp_path / "staging", tmp_path / "tree", tmp_path / "outside"
    for folder in (source / "timeline", tree, outside):
        folder.mkdir(parents=True)
    (source / "a.md").write_text("a\n", encoding="utf-8")
    (source / "timeline" / "2026-01-01.jsonl").write_text("{}\n", encoding="utf-8")
    return source, tree, outside


@pytest.mark.parametrize("folder_before", [False, True])
def test_a_folder_replaced_by_a_link_mid_batch_leads_no_file_out_of_the_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder_before: bool
) -> None:
    source, tree, outside = _staged(tmp_path)
    if folder_before:
        (tree / "timeline").mkdir()
    link = os.link

    def swap_then_link(*args: object, **kwargs: object) -> None:
        if not (tree / "timeline").is_symlink():  # the first move: another program swaps the folder for a link
            if (tree / "timeline").exists():
                (tree / "timeline").rmdir()
            (tree / "timeline").symlink_to(outside)
        link(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "link", swap_then_link)
    with pytest.raises(MemoryStoreError):
        _fs.move_files(source, tree, ["a.md", "timeline/2026-01-01.jsonl"], error=MemoryStoreError)
    assert list(outside.iterdir()) == []
    assert (tree / "a.md").read_text(encoding="utf-8") == "a\n"  # the move before stays, whole
    assert (source / "timeline" / "2026-01-01.jsonl").exists()  # the rest remain staged


def test_a_batch_moves_every_file_into_its_folders(tmp_path: Path) -> None:
    source, tree, _outside = _staged(tmp_path)
    (source / "MEMORY.md").write_text("index\n", encoding="utf-8")
    (tree / "MEMORY.md").write_text("old\n", encoding="utf-8")
    _fs.move_files(source, tree, ["a.md", "MEMORY.md", "timeline/2026-01-01.jsonl"], error=MemoryStoreError,
                   replace=["MEMORY.md"])
    assert (tree / "MEMORY.md").read_text(encoding="utf-8") == "index\n"
    assert (tree / "timeline" / "2026-01-01.jsonl").read_text(encoding="utf-8") == "{}\n"
    assert sorted(p.name for p in source.rglob("*") if p.is_file()) == []


def test_a_staged_folder_replaced_by_a_link_moves_no_file_from_outside_the_staging(tmp_path: Path) -> None:
    # Found by attack (issue 37 round): the staged folders were opened by path with O_NOFOLLOW on the last name
    # alone, so a link planted at an upper staged folder moved a file from outside the staging (bytes no check
    # saw) into the tree.
    source, tree, outside = _staged(tmp_path)
    (source / "deep" / "er").mkdir(parents=True)
    (source / "deep" / "er" / "x.md").write_text("checked\n", encoding="utf-8")
    (outside / "er").mkdir()
    (outside / "er" / "x.md").write_text("never checked\n", encoding="utf-8")
    (source / "deep" / "er" / "x.md").unlink()
    (source / "deep" / "er").rmdir()
    (source / "deep").rmdir()
    (source / "deep").symlink_to(outside)
    with pytest.raises(MemoryStoreError):
        _fs.move_files(source, tree, ["deep/er/x.md"], error=MemoryStoreError)
    assert (outside / "er" / "x.md").read_text(encoding="utf-8") == "never checked\n"
    assert not (tree / "deep" / "er" / "x.md").exists()


@pytest.mark.parametrize("replaceable", [False, True])
def test_a_target_file_that_is_a_folder_is_refused_before_any_move(tmp_path: Path, replaceable: bool) -> None:
    source, tree, _outside = _staged(tmp_path)
    (tree / "a.md").mkdir()
    (tree / "a.md" / "inside").write_text("kept\n", encoding="utf-8")
    paths = ["a.md", "timeline/2026-01-01.jsonl"]
    with pytest.raises(MemoryStoreError):
        _fs.move_files(source, tree, paths, error=MemoryStoreError, replace=paths if replaceable else ())
    assert (tree / "a.md" / "inside").read_text(encoding="utf-8") == "kept\n"
    assert (source / "a.md").read_text(encoding="utf-8") == "a\n"
    assert not (tree / "timeline" / "2026-01-01.jsonl").exists()  # validate, then act: nothing moved
