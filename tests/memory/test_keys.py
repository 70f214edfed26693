from __future__ import annotations

from pathlib import Path

import pytest

from bundlekit.errors import InvalidKeyError
from bundlekit.memory import Memory
from bundlekit.memory.naming import MAX_KEY_LENGTH, validate_key

from .conftest import fields


@pytest.mark.parametrize("key", ["user_role", "a", "A-b.c_9", "x" * MAX_KEY_LENGTH, "memory_notes", "v1.2"])
def test_portable_keys_are_accepted(key: str) -> None:
    assert validate_key(key) == key


@pytest.mark.parametrize(
    ("key", "rule"),
    [
        ("", "empty"),
        ("x" * (MAX_KEY_LENGTH + 1), "limit"),
        ("has space", "characters"),
        ("a/b", "characters"),
        ("../escape", "characters"),
        ("café", "characters"),
        ("colon:x", "characters"),
        (".hidden", "dot"),
        ("MEMORY", "reserved"),
        ("memory", "reserved"),
        ("Memory", "reserved"),
    ],
)
def test_bad_keys_are_refused_naming_the_rule(key: str, rule: str) -> None:
    with pytest.raises(InvalidKeyError, match=rule):
        validate_key(key)


def test_write_with_bad_key_writes_nothing(mem: Memory, tree: Path) -> None:
    with pytest.raises(InvalidKeyError):
        mem.write("bad key", **fields())
    assert not tree.exists() or not any(p.suffix == ".md" for p in tree.iterdir())


def test_keys_differing_only_in_case_are_refused(mem: Memory, tree: Path) -> None:
    mem.write("user_role", **fields())
    with pytest.raises(InvalidKeyError, match="differs only in case"):
        mem.write("User_Role", **fields())
    assert sorted(p.name for p in tree.glob("*.md")) == ["MEMORY.md", "user_role.md"]


def test_a_case_clash_is_found_among_neighbours_that_share_its_letters(mem: Memory, tree: Path) -> None:
    """Issue 37: the clash is looked up in the tree's listing (one pass over its packed names): a prefix, a
    suffix or a longer name with the same letters is no clash; the one name equal ignoring case is named."""
    for key in ("a_user_role", "user_role_2", "user_rol", "xuser_role", "Zuser_role"):
        mem.write(key, **fields())
    mem.write("user_Role", **fields())
    with pytest.raises(InvalidKeyError, match="existing 'user_Role'"):
        mem.write("USER_ROLE", **fields())
    mem.write("user_Role", **fields(description="again"))  # the same key is its own, no clash


def test_a_case_clash_with_a_file_that_does_not_parse_is_refused(mem: Memory, tree: Path) -> None:
    mem.write("other", **fields())
    (tree / "Broken_Note.md").write_text("no frontmatter here\n", encoding="utf-8")
    with pytest.raises(InvalidKeyError, match="differs only in case"):
        mem.write("broken_note", **fields())
    assert not (tree / "broken_note.md").exists()


def test_tree_with_case_duplicate_files_fails_check(mem: Memory, tree: Path) -> None:
    record = mem.write("notes", **fields())
    (tree / "Notes.md").write_text(record.raw, encoding="utf-8")
    with pytest.raises(InvalidKeyError, match="differ only in case"):
        mem.check()


def test_tree_with_badly_named_memory_file_fails_check(mem: Memory, tree: Path) -> None:
    record = mem.write("notes", **fields())
    (tree / "my notes.md").write_text(record.raw, encoding="utf-8")
    with pytest.raises(InvalidKeyError, match="my notes"):
        mem.check()
