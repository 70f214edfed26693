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
