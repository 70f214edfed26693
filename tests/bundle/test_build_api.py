"""build_bundle as a library: one index renderer, a Memory as the tree, the result's text root and URI."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bundlekit.bundle.build import BuildOptions, build_bundle, render_encrypted_index
from bundlekit.bundle.load import load_bundle
from bundlekit.errors import UsageError
from bundlekit.ipld.cid import cid_to_str
from bundlekit.memory import Memory, MemoryRecord
from bundlekit.memory.record import MEMORY_TYPES

from .conftest import CREATED

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "memory"

# sha256 of render_encrypted_index's bytes in three.ws's encrypted link form
# (``- [key.md](ipfs://cid) — description``, issue 11), pinned so the one renderer cannot drift.
PINNED = {
    (3, False): "896cf6e92b7df5d78422a15450c3b77ded6a0df5cee59991a079f7cd4145743d",
    (3, True): "b3db9a3d8a2ec79fe84d8db79c07567ddf54a21e62172ebf01287de4e471aa58",
    (260, False): "c2b175bcb23e590f12d8952022fa61418f0294cd6e0b3c6d50a7b7d956701539",
    (260, True): "d6fd5880d5aab80aa661e4b03148a1ed17a684d0eaaae5f138cfa2696ad71e51",
}


def _records(count: int) -> list[MemoryRecord]:
    mem = Memory(None, clock=lambda: datetime(2026, 4, 14, tzinfo=UTC))
    for i in range(count):
        kind = MEMORY_TYPES[i % 4]
        mem.write(f"{kind}_{i:03d}", name=f"Name {i}", description=f"desc {i}", type=kind, body="b")
    return mem.list()


@pytest.mark.parametrize(("count", "redact"), sorted(PINNED))
def test_encrypted_index_bytes_are_unchanged_by_the_one_renderer(count: int, redact: bool) -> None:
    records = _records(260)[:count]
    links = {r.key: f"bafy{r.key}" for r in records}
    data = render_encrypted_index(records, links, redact=redact)
    assert hashlib.sha256(data).hexdigest() == PINNED[(count, redact)]


def test_plain_bundle_index_is_the_fixture_trees_committed_index(tmp_path: Path) -> None:
    result = build_bundle(FIXTURE, tmp_path / "b.car", options=BuildOptions(created=CREATED))
    loaded = load_bundle(str(result.car))
    assert loaded.files["MEMORY.md"] == (FIXTURE / "MEMORY.md").read_bytes()


def test_build_takes_the_namespace_of_a_memory_object(tree: Path, tmp_path: Path) -> None:
    mem = Memory(tree, namespace="coach-v2")
    result = build_bundle(mem, tmp_path / "b.car", options=BuildOptions(created=CREATED))
    assert result.manifest["namespace"] == "coach-v2"


def test_namespace_option_wins_over_the_memory_objects(tree: Path, tmp_path: Path) -> None:
    result = build_bundle(Memory(tree, namespace="coach-v2"), tmp_path / "b.car",
                          options=BuildOptions(created=CREATED, namespace="ns"))
    assert result.manifest["namespace"] == "ns"


def test_a_memory_object_builds_the_same_root_as_its_directory_under_the_same_namespace(
    tree: Path, tmp_path: Path
) -> None:
    by_dir = build_bundle(tree, tmp_path / "a.car", options=BuildOptions(created=CREATED, namespace="coach"))
    by_memory = build_bundle(Memory(tree, namespace="coach"), tmp_path / "b.car",
                             options=BuildOptions(created=CREATED))
    assert by_dir.root == by_memory.root


def test_an_in_memory_tree_builds_a_bundle(tmp_path: Path) -> None:
    mem = Memory(None, namespace="scratch", clock=lambda: CREATED)
    mem.write("user_role", name="Role", description="d", type="user", body="b")
    result = build_bundle(mem, tmp_path / "b.car", options=BuildOptions(created=CREATED))
    assert result.paths == ["memory/MEMORY.md", "memory/user_role.md"]
    assert result.manifest["namespace"] == "scratch"


def test_a_memory_object_over_a_missing_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a directory"):
        build_bundle(Memory(tmp_path / "nowhere"), tmp_path / "b.car")


def test_result_gives_the_root_as_text_and_the_manifest_uri(tree: Path, tmp_path: Path) -> None:
    result = build_bundle(tree, tmp_path / "b.car", options=BuildOptions(created=CREATED))
    assert result.root_cid == cid_to_str(result.root)
    assert result.manifest_uri == f"ipfs://{result.root_cid}/manifest.json"


def test_load_result_gives_the_root_as_text_and_the_directory_it_wrote(tree: Path, tmp_path: Path) -> None:
    result = build_bundle(tree, tmp_path / "b.car", options=BuildOptions(created=CREATED))
    loaded = load_bundle(str(result.car), out_dir=tmp_path / "out")
    assert loaded.root_cid == result.root_cid
    assert loaded.out_dir == tmp_path / "out" and loaded.summary()["out_dir"] == str(tmp_path / "out")
