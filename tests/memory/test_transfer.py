from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from bundlekit.errors import FrontmatterError, InvalidKeyError, MemoryStoreError, SecretDetectedError
from bundlekit.memory import Memory

from .conftest import Clock, fields


def _snapshot(tree: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tree)): p.read_bytes() for p in sorted(tree.rglob("*")) if p.is_file()}


@pytest.fixture
def source(tmp_path: Path, clock: Clock) -> Memory:
    mem = Memory(tmp_path / "source", namespace="agent-a", clock=clock)
    mem.write("user_role", **fields(name="Role", type="user", body="Plays 5-a-side."))
    mem.write("feedback_tone", **fields(body="Be direct."))
    mem.note("waved", style="big")
    return mem


def test_export_has_the_blob_shape(source: Memory) -> None:
    blob = source.export()
    assert list(blob) == ["version", "namespace", "index", "files", "timeline"]
    assert blob["version"] == "memory/0.1" and blob["namespace"] == "agent-a"
    assert blob["index"] == source.index_text()
    assert list(blob["files"]) == ["feedback_tone.md", "user_role.md"]
    assert blob["files"]["user_role.md"] == source.read("user_role").raw  # type: ignore[union-attr]
    assert blob["timeline"] == source.timeline()


def test_import_into_an_empty_tree_reproduces_the_files(source: Memory, mem: Memory, tree: Path) -> None:
    report = mem.import_(source.export())
    assert report.added == ["feedback_tone", "user_role"] and report.timeline_added == 1
    assert source.root is not None
    theirs, ours = _snapshot(source.root), _snapshot(tree)
    # The store's own folder (derived index, lock) is a cache of each tree, not part of it.
    assert any(name.startswith(".bundlekit/") for name in ours)
    ours = {k: v for k, v in ours.items() if not k.startswith(".bundlekit/")}
    theirs = {k: v for k, v in theirs.items() if not k.startswith(".bundlekit/")}
    assert ours == theirs


def test_merge_keeps_the_local_file_on_conflict(source: Memory, mem: Memory) -> None:
    local = mem.write("user_role", **fields(name="Local role", type="user"))
    report = mem.import_(source.export(), "merge")
    assert report.kept == ["user_role"] and report.added == ["feedback_tone"]
    assert mem.read("user_role") == local


def test_replace_takes_the_incoming_file(source: Memory, mem: Memory) -> None:
    mem.write("user_role", **fields(name="Local role", type="user"))
    report = mem.import_(source.export(), "replace")
    assert report.replaced == ["user_role"]
    assert mem.read("user_role").name == "Role"  # type: ignore[union-attr]


def test_replace_of_a_key_differing_in_case_swaps_the_file(source: Memory, mem: Memory, tree: Path) -> None:
    mem.write("User_Role", **fields(type="user"))
    mem.import_(source.export(), "replace")
    assert sorted(p.name for p in tree.glob("*.md")) == ["MEMORY.md", "feedback_tone.md", "user_role.md"]


def test_timelines_merge_by_timestamp_without_duplicates(source: Memory, mem: Memory, clock: Clock) -> None:
    clock.advance(seconds=-5)
    mem.note("earlier")
    clock.advance(seconds=10)
    mem.note("later")
    blob = source.export()
    mem.import_(blob)
    report = mem.import_(blob)
    assert report.timeline_added == 0
    assert [e["type"] for e in mem.timeline()] == ["earlier", "waved", "later"]


def test_index_is_rebuilt_after_import(source: Memory, mem: Memory, tree: Path) -> None:
    mem.import_(source.export())
    assert (tree / "MEMORY.md").read_text(encoding="utf-8") == source.index_text()


@pytest.mark.parametrize(
    ("mutate", "error"),
    [
        (lambda b: b["files"].__setitem__("bad name.md", b["files"]["user_role.md"]), InvalidKeyError),
        (lambda b: b["files"].__setitem__("USER_ROLE.md", b["files"]["user_role.md"]), InvalidKeyError),
        (lambda b: b["files"].__setitem__("notes.txt", "x"), InvalidKeyError),
        (lambda b: b["files"].__setitem__("zz_broken.md", "no frontmatter"), FrontmatterError),
        (lambda b: b["files"].__setitem__("zz_typeless.md", "---\nname: a\n---\n"), FrontmatterError),
        (
            lambda b: b["files"].__setitem__(
                "zz_secret.md", b["files"]["user_role.md"] + "AKIA" + "IOSFODNN7EXAMPLE\n"
            ),
            SecretDetectedError,
        ),
        (lambda b: b["timeline"].append({"type": "no-ts"}), MemoryStoreError),
        (
            lambda b: b["timeline"].append(
                {"ts": "2026-04-14T00:00:00Z", "type": "x", "k": "gho_" + "A1b2" * 9}
            ),
            SecretDetectedError,
        ),
        (lambda b: b.__setitem__("version", "memory/9"), MemoryStoreError),
    ],
)
def test_import_is_all_or_nothing(source: Memory, mem: Memory, tree: Path, mutate: Any, error: type) -> None:
    mem.write("local_only", **fields())
    mem.note("local")
    before = _snapshot(tree)
    blob = copy.deepcopy(source.export())
    mutate(blob)
    with pytest.raises(error):
        mem.import_(blob, "replace")
    assert _snapshot(tree) == before


def test_import_allow_secrets_bypasses_the_guard(source: Memory, mem: Memory) -> None:
    blob = copy.deepcopy(source.export())
    blob["files"]["user_role.md"] += "AKIA" + "IOSFODNN7EXAMPLE\n"
    mem.import_(blob, allow_secrets=True)
    assert "IOSFODNN7EXAMPLE" in mem.read("user_role").raw  # type: ignore[union-attr]


def test_index_entry_in_files_is_ignored(source: Memory, mem: Memory, tree: Path) -> None:
    blob = copy.deepcopy(source.export())
    blob["files"]["MEMORY.md"] = "# forged\n"
    mem.import_(blob)
    assert (tree / "MEMORY.md").read_text(encoding="utf-8").startswith("# Memory")
