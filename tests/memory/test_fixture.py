"""The committed sample tree (fixtures/memory) is valid and exactly what its generator builds."""

from __future__ import annotations

from pathlib import Path

from bundlekit.memory import Memory

from . import fixture_tree


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        # The store's hidden folder (the derived index, the lock) is a cache, not part of the tree.
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    }


def test_fixture_tree_passes_check() -> None:
    Memory(fixture_tree.FIXTURE_DIR).check()


def test_fixture_tree_matches_its_generator(tmp_path: Path) -> None:
    fixture_tree.build(tmp_path / "fresh")
    assert _files(tmp_path / "fresh") == _files(fixture_tree.FIXTURE_DIR)


def test_fixture_index_is_current() -> None:
    memory = Memory(fixture_tree.FIXTURE_DIR)
    assert (fixture_tree.FIXTURE_DIR / "MEMORY.md").read_text(encoding="utf-8") == memory.index_text()


def test_fixture_has_every_type_and_several_timeline_days() -> None:
    memory = Memory(fixture_tree.FIXTURE_DIR)
    assert {r.type for r in memory.list()} == {"user", "feedback", "project", "reference"}
    assert len(list((fixture_tree.FIXTURE_DIR / "timeline").glob("*.jsonl"))) >= 3


def test_bundle_files_are_sorted_with_regenerated_index_and_raw_bytes() -> None:
    root = fixture_tree.FIXTURE_DIR
    files = Memory(root).bundle_files()
    paths = [p for p, _ in files]
    assert paths == sorted(paths)
    assert paths[0] == "MEMORY.md"
    assert dict(files) == _files(root)
