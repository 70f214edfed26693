from __future__ import annotations

from pathlib import Path

import pytest

from bundlekit.errors import ConflictError, FrontmatterError, UsageError
from bundlekit.memory import Memory

from .conftest import Clock, fields


def test_first_write_sets_created_updated_and_revision_one(mem: Memory) -> None:
    record = mem.write("feedback_tone", **fields())
    assert record.meta["created"] == record.meta["updated"] == "2026-04-14T12:03:12Z"
    assert record.revision == 1


def test_update_keeps_created_and_bumps_updated_and_revision(mem: Memory, clock: Clock) -> None:
    mem.write("feedback_tone", **fields())
    clock.advance(days=2)
    record = mem.write("feedback_tone", **fields(body="New body."))
    assert record.meta["created"] == "2026-04-14T12:03:12Z"
    assert record.meta["updated"] == "2026-04-16T12:03:12Z"
    assert record.revision == 2
    assert mem.read("feedback_tone") == record


def test_written_file_is_what_read_returns(mem: Memory, tree: Path) -> None:
    record = mem.write("feedback_tone", **fields(tags=["tone"], important=True, source="s4", decay="90d"))
    assert (tree / "feedback_tone.md").read_text(encoding="utf-8") == record.raw
    assert record.tags == ["tone"] and record.important and record.decay == "90d"


def test_stale_expected_revision_raises_and_changes_nothing(mem: Memory, tree: Path) -> None:
    mem.write("feedback_tone", **fields())
    mem.write("feedback_tone", **fields(body="second"))
    before = (tree / "feedback_tone.md").read_bytes()
    index_before = (tree / "MEMORY.md").read_bytes()
    with pytest.raises(ConflictError, match="revision 2"):
        mem.write("feedback_tone", **fields(body="third"), expected_revision=1)
    assert (tree / "feedback_tone.md").read_bytes() == before
    assert (tree / "MEMORY.md").read_bytes() == index_before


def test_current_expected_revision_is_accepted(mem: Memory) -> None:
    mem.write("feedback_tone", **fields())
    assert mem.write("feedback_tone", **fields(body="2"), expected_revision=1).revision == 2


def test_expected_revision_zero_means_must_not_exist(mem: Memory) -> None:
    assert mem.write("k", **fields(), expected_revision=0).revision == 1
    with pytest.raises(ConflictError):
        mem.write("k", **fields(), expected_revision=0)


def test_optional_fields_left_out_keep_their_value(mem: Memory) -> None:
    mem.write("k", **fields(tags=["a", "b"], important=True, source="s1"))
    record = mem.write("k", **fields(body="changed"))
    assert record.tags == ["a", "b"] and record.important and record.meta["source"] == "s1"


def test_extra_sets_unknown_keys_and_none_removes_them(mem: Memory) -> None:
    mem.write("k", **fields(), extra={"mood": "calm", "links": ["x"]})
    record = mem.write("k", **fields(), extra={"mood": None, "weight": 2})
    assert "mood" not in record.meta
    assert record.meta["links"] == ["x"] and record.meta["weight"] == 2


def test_unknown_keys_written_by_hand_survive_a_write(mem: Memory, tree: Path) -> None:
    tree.mkdir(parents=True)
    (tree / "k.md").write_text(
        "---\nname: N\ndescription: D\ntype: user\ncreated: 2026-03-22\nupdated: 2026-03-22\n"
        "mood: calm\nlinks: [a, b]\n---\n\nbody\n",
        encoding="utf-8",
    )
    record = mem.write("k", **fields())
    assert record.meta["mood"] == "calm" and record.meta["links"] == ["a", "b"]
    assert record.meta["created"] == "2026-03-22T00:00:00Z"
    assert record.revision == 2


def test_extra_cannot_set_known_keys(mem: Memory) -> None:
    with pytest.raises(UsageError, match="revision"):
        mem.write("k", **fields(), extra={"revision": 9})


def test_invalid_fields_raise_and_write_nothing(mem: Memory, tree: Path) -> None:
    with pytest.raises(FrontmatterError, match="type"):
        mem.write("k", **fields(type="opinion"))
    assert not (tree / "k.md").exists()


def test_no_temp_files_are_left_behind(mem: Memory, tree: Path) -> None:
    for i in range(5):
        mem.write(f"k{i}", **fields())
    leftovers = [p.name for p in tree.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_read_of_missing_memory_is_none(mem: Memory) -> None:
    assert mem.read("nothing_here") is None


def test_list_is_sorted_by_key(mem: Memory) -> None:
    for key in ["b", "a", "C"]:
        mem.write(key, **fields())
    assert [r.key for r in mem.list()] == ["C", "a", "b"]


def test_list_of_missing_tree_is_empty(tmp_path: Path) -> None:
    assert Memory(tmp_path / "absent").list() == []


def test_bad_file_on_disk_is_left_out_of_list_with_a_warning_naming_it(mem: Memory, tree: Path) -> None:
    mem.write("good", **fields())
    (tree / "broken.md").write_text("no frontmatter\n", encoding="utf-8")
    assert [r.key for r in mem.list()] == ["good"]
    assert mem.warnings[-1].startswith("broken.md: no YAML frontmatter") and "left out" in mem.warnings[-1]


def test_edit_by_another_writer_is_seen_despite_the_cache(tree: Path, clock: Clock) -> None:
    first, second = Memory(tree, clock=clock), Memory(tree, clock=clock)
    first.write("k", **fields(description="one"))
    assert first.list()[0].description == "one"
    second.write("k", **fields(description="two"))
    assert first.list()[0].description == "two"


def test_rewriting_a_memory_keeps_the_mode_its_owner_gave_it(mem: Memory, tree: Path) -> None:
    mem.write("k", **fields())
    (tree / "k.md").chmod(0o600)
    mem.write("k", **fields(body="New body."))
    assert (tree / "k.md").stat().st_mode & 0o777 == 0o600
