"""read_tree_files: a memory tree's loaded files back into records and timeline entries."""

from __future__ import annotations

import pytest

from bundlekit.errors import FrontmatterError, InvalidKeyError, MemoryStoreError
from bundlekit.memory import Memory
from bundlekit.memory.files import read_tree_files

from . import fixture_tree


def _fixture_files() -> dict[str, bytes]:
    return dict(Memory(fixture_tree.FIXTURE_DIR).bundle_files())


def test_records_and_timeline_are_those_of_the_tree() -> None:
    tree = Memory(fixture_tree.FIXTURE_DIR)
    loaded = read_tree_files(_fixture_files())
    assert [(r.key, r.raw) for r in loaded.records.values()] == [(r.key, r.raw) for r in tree.list()]
    assert loaded.timeline == tree.timeline()


def test_pairs_and_a_mapping_give_the_same_result() -> None:
    files = _fixture_files()
    assert read_tree_files(list(files.items())) == read_tree_files(files)


def test_the_index_and_files_outside_the_tree_layout_are_left_out() -> None:
    files = {"MEMORY.md": b"# not parsed", "notes.txt": b"\xff", "sub/x.md": b"\xff"}
    loaded = read_tree_files(files)
    assert loaded.records == {} and loaded.timeline == []


def test_a_memory_file_that_is_not_utf8_names_the_source_and_file() -> None:
    with pytest.raises(FrontmatterError, match=r"ipfs://bafyx: user_role\.md is not UTF-8"):
        read_tree_files({"user_role.md": b"\xff\xfe"}, source="ipfs://bafyx")


def test_keys_that_differ_only_in_case_are_refused() -> None:
    files = _fixture_files()
    files["User_Role.md"] = files["user_role.md"]
    with pytest.raises(InvalidKeyError, match="differ only in case"):
        read_tree_files(files)


def test_a_bad_timeline_day_file_is_refused() -> None:
    with pytest.raises(MemoryStoreError, match="not valid JSON"):
        read_tree_files({"timeline/2026-04-10.jsonl": b"{oops\n"})


def test_export_blob_imports_into_an_equal_tree() -> None:
    blob = read_tree_files(_fixture_files()).export_blob(namespace="coach")
    memory = Memory(None)
    memory.import_(blob, "replace")
    assert memory.bundle_files() == Memory(fixture_tree.FIXTURE_DIR).bundle_files()
