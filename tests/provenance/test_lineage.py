"""Lineage: trees remember where they came from, manifests name their parents, `log` walks them back."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.bundle.fork import fork_bundle
from bundlekit.bundle.lineage import LINEAGE_NAME, read_parents
from bundlekit.bundle.load import load_bundle
from bundlekit.bundle.log import walk_lineage
from bundlekit.bundle.manifest import validate_manifest
from bundlekit.errors import ManifestError
from bundlekit.memory import Memory

from .conftest import CREATED, make_tree


def _into_store(*cars: Path) -> None:
    store = BlockStore()
    for car in cars:
        with open(car, "rb") as fh:
            store.import_car(fh)


def test_load_into_a_directory_remembers_the_root(tree: Path, tmp_path: Path) -> None:
    a = build_bundle(tree, tmp_path / "a.car", options=BuildOptions(created=CREATED))
    load_bundle(str(a.car), out_dir=tmp_path / "copy")
    assert read_parents(tmp_path / "copy") == [a.root_cid]


def test_next_build_records_parents_and_the_lineage_file_stays_out_of_the_bundle(tree: Path, tmp_path: Path) -> None:
    a = build_bundle(tree, tmp_path / "a.car", options=BuildOptions(created=CREATED))
    load_bundle(str(a.car), out_dir=tmp_path / "copy")
    b = build_bundle(tmp_path / "copy", tmp_path / "b.car", options=BuildOptions(created=CREATED))
    assert b.manifest["parents"] == [a.root_cid]
    assert not any(LINEAGE_NAME in path for path in b.paths)


def test_fork_of_two_bundles_records_both_as_merged_parents(tmp_path: Path) -> None:
    a = build_bundle(make_tree(tmp_path / "a"), tmp_path / "a.car", options=BuildOptions(created=CREATED))
    b = build_bundle(make_tree(tmp_path / "b", extra={"project_b": "b"}), tmp_path / "b.car",
                     options=BuildOptions(created=CREATED))
    fork_bundle(str(a.car), tmp_path / "merged")
    fork_bundle(str(b.car), tmp_path / "merged")
    built = build_bundle(tmp_path / "merged", tmp_path / "m.car", options=BuildOptions(created=CREATED))
    assert built.manifest["parents"] == sorted([a.root_cid, b.root_cid])


def test_tree_without_lineage_builds_a_manifest_without_parents(tree: Path, tmp_path: Path) -> None:
    assert "parents" not in build_bundle(tree, tmp_path / "a.car",
                                         options=BuildOptions(created=CREATED)).manifest


def test_manifest_parents_must_be_cids(tree: Path, tmp_path: Path) -> None:
    manifest = dict(build_bundle(tree, tmp_path / "a.car",
                                 options=BuildOptions(created=CREATED)).manifest, parents=["not-a-cid"])
    with pytest.raises(ManifestError, match="not a CID"):
        validate_manifest(manifest)


def _chain(tmp_path: Path) -> tuple[list[str], list[Path]]:
    """A -> B -> C: B loaded from A plus one memory, C loaded from B plus one more."""
    a = build_bundle(make_tree(tmp_path / "a"), tmp_path / "a.car", options=BuildOptions(created=CREATED))
    load_bundle(str(a.car), out_dir=tmp_path / "tb")
    Memory(tmp_path / "tb").write("project_b", name="b", description="b", type="project", body="b")
    b = build_bundle(tmp_path / "tb", tmp_path / "b.car", options=BuildOptions(created=CREATED))
    load_bundle(str(b.car), out_dir=tmp_path / "tc")
    Memory(tmp_path / "tc").write("project_c", name="c", description="c", type="project", body="c")
    c = build_bundle(tmp_path / "tc", tmp_path / "c.car", options=BuildOptions(created=CREATED))
    return [c.root_cid, b.root_cid, a.root_cid], [c.car, b.car, a.car]


def test_log_walks_parents_back_with_a_diff_per_step(tmp_path: Path) -> None:
    roots, cars = _chain(tmp_path)
    _into_store(*cars)
    lineage = walk_lineage(f"ipfs://{roots[0]}")
    assert [s.root for s in lineage.steps] == roots and lineage.note is None
    assert lineage.steps[0].diff == {"added": 1, "removed": 0, "changed": 0, "unchanged": 3}
    assert lineage.steps[-1].parents == [] and lineage.steps[-1].diff is None


def test_log_stops_at_the_depth_limit_with_a_note(tmp_path: Path) -> None:
    roots, cars = _chain(tmp_path)
    _into_store(*cars)
    lineage = walk_lineage(f"ipfs://{roots[0]}", depth=2)
    assert len(lineage.steps) == 2 and lineage.note is not None and "depth limit" in lineage.note


def test_log_stops_at_the_first_unreachable_parent_with_a_note(tmp_path: Path) -> None:
    roots, cars = _chain(tmp_path)
    _into_store(cars[0], cars[1])  # A is nowhere
    lineage = walk_lineage(f"ipfs://{roots[0]}")
    assert [s.root for s in lineage.steps] == roots[:2]
    assert lineage.note is not None and f"parent {roots[2]} is not reachable" in lineage.note
