"""``MEMORY.md`` left unrendered by a write whose changed lines are none of those shown (issue 37,
``Indexer._same_index``), attacked: lines around the 200-line limit, a type change, a hand edit of ``MEMORY.md``
before the write, a forget, an add. After each, ``MEMORY.md`` is exactly what a render from scratch (the same
files, no index, no ``MEMORY.md``) gives."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bundlekit.memory import Memory
from bundlekit.memory.naming import HIDDEN_DIR


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("template") / "tree"
    mem = Memory(root)
    for i in range(210):  # 150 users, then 60 projects: the limit falls among the projects
        mem.write(f"m{i:03d}", name=f"N{i}", description=f"d{i}", type="user" if i < 150 else "project", body=f"b{i}")
    mem.close()
    return root


@pytest.fixture
def tree(template: Path, tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(template, root)
    return root


def _rewrite(tree: Path, key: str, **change: str) -> None:
    mem = Memory(tree)
    try:
        record = mem.read(key)
        assert record is not None
        fields = {"name": record.name, "description": record.description, "type": record.type, "body": record.body}
        mem.write(key, **{**fields, **change})
    finally:
        mem.close()


def _is_a_render_from_scratch(tree: Path, tmp_path: Path) -> None:
    copy = tmp_path / "scratch"
    shutil.copytree(tree, copy)
    (copy / "MEMORY.md").unlink()
    shutil.rmtree(copy / HIDDEN_DIR, ignore_errors=True)
    mem = Memory(copy)
    try:
        assert (tree / "MEMORY.md").read_text(encoding="utf-8") == mem.index_text()
    finally:
        mem.close()


@pytest.mark.parametrize("at", [0, 149, 150, 186, 187, 188, 189, 190, 199, 200, 201, 209])
def test_a_description_changed_at_any_place_leaves_memory_md_a_render_from_scratch(
    tree: Path, tmp_path: Path, at: int
) -> None:
    _rewrite(tree, f"m{at:03d}", description=f"changed {at}")
    _is_a_render_from_scratch(tree, tmp_path)


@pytest.mark.parametrize("at", [0, 189, 205])
def test_a_type_change_leaves_memory_md_a_render_from_scratch(tree: Path, tmp_path: Path, at: int) -> None:
    _rewrite(tree, f"m{at:03d}", type="feedback")
    _is_a_render_from_scratch(tree, tmp_path)


def test_a_hand_edit_of_memory_md_is_undone_by_a_write_outside_the_lines_shown(tree: Path, tmp_path: Path) -> None:
    index = tree / "MEMORY.md"
    index.write_text(index.read_text(encoding="utf-8") + "- [Planted](planted.md) — by hand\n", encoding="utf-8")
    _rewrite(tree, "m208", description="after the hand edit")
    _is_a_render_from_scratch(tree, tmp_path)


def test_a_hand_edit_of_a_memory_outside_the_lines_then_a_write_of_another(tree: Path, tmp_path: Path) -> None:
    path = tree / "m206.md"
    path.write_text(path.read_text(encoding="utf-8").replace("description: d206", "description: hand"), "utf-8")
    _rewrite(tree, "m204", description="after the hand edit of m206")
    _is_a_render_from_scratch(tree, tmp_path)


def test_a_forget_and_an_add_leave_memory_md_a_render_from_scratch(tree: Path, tmp_path: Path) -> None:
    mem = Memory(tree)
    try:
        mem.forget("m001")
        mem.write("a000", name="A", description="new", type="user", body="x")
    finally:
        mem.close()
    _is_a_render_from_scratch(tree, tmp_path)
