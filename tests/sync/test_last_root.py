"""The root a tree was last built into, merged or synced with (bundle/lineage.py: `.bundlekit/last-root`)."""

from __future__ import annotations

from pathlib import Path

from bundlekit.bundle.build import build_bundle
from bundlekit.bundle.lineage import LAST_ROOT_NAME, heads, read_last, record_parent
from bundlekit.memory import Memory


def _tree(path: Path) -> Path:
    Memory(path).write("project_a", name="A", description="about a", type="project", body="A.")
    return path


def test_a_build_remembers_its_root_as_the_trees_last_root(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "a")
    built = build_bundle(tree, tmp_path / "a.car")
    assert read_last(tree) == built.root_cid and heads(tree) == [built.root_cid]


def test_the_last_root_never_enters_the_manifest_so_rebuilding_gives_the_same_root(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "a")
    first = build_bundle(tree, tmp_path / "a.car")
    assert build_bundle(tree, tmp_path / "b.car").root_cid == first.root_cid


def test_a_tree_the_last_root_cannot_be_written_in_still_builds(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "a")
    (tree / LAST_ROOT_NAME).mkdir(parents=True)  # something in the way of the file
    build_bundle(tree, tmp_path / "a.car")
    assert read_last(tree) is None


def test_heads_are_the_parents_and_the_last_root(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "a")
    built = build_bundle(tree, tmp_path / "a.car")
    other = build_bundle(_tree(tmp_path / "b"), tmp_path / "b.car")
    record_parent(tree, other.root_bytes)
    assert heads(tree) == sorted({built.root_cid, other.root_cid})
    assert (tree / LAST_ROOT_NAME).read_text("ascii").strip() == built.root_cid
