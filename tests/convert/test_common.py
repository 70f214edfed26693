"""Key derivation, timestamps and the shared YAML helpers."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bundlekit.convert._common import (
    atomic_write,
    derive_keys,
    dump_yaml,
    is_valid_key,
    load_yaml,
    parse_time,
    sanitize_key,
)
from bundlekit.convert.threews import blob_to_tree, tree_to_blob
from bundlekit.errors import ConvertError


def test_valid_names_are_kept() -> None:
    assert derive_keys(["user_prefs", "a.b-c"]) == ["user_prefs", "a.b-c"]


def test_invalid_characters_become_underscores() -> None:
    assert sanitize_key("My notes: café/2!") == "My_notes_caf_2_"


def test_leading_dots_are_dropped_and_empty_names_get_a_key() -> None:
    assert derive_keys(["..hidden", "", "///"]) == ["hidden", "untitled", "_"]


def test_reserved_index_name_is_avoided() -> None:
    assert derive_keys(["MEMORY", "memory"]) == ["MEMORY_", "memory_-2"]


def test_keys_differing_only_in_case_are_disambiguated_in_order() -> None:
    assert derive_keys(["Notes", "notes", "NOTES"]) == ["Notes", "notes-2", "NOTES-3"]


def test_long_names_are_cut_to_128_with_room_for_the_suffix() -> None:
    keys = derive_keys(["x" * 300, "x" * 200])
    assert [len(k) for k in keys] == [128, 128] and keys[1].endswith("-2")
    assert all(is_valid_key(k) for k in keys)


def test_time_without_zone_is_utc() -> None:
    assert parse_time("2025-01-12T10:30:00") == datetime(2025, 1, 12, 10, 30, tzinfo=UTC)
    assert parse_time("2025-01-12") == datetime(2025, 1, 12, tzinfo=UTC)
    assert parse_time("2025-01-12T12:30:00+02:00") == datetime(2025, 1, 12, 10, 30, tzinfo=UTC)


def test_bad_time_is_refused_naming_the_field() -> None:
    with pytest.raises(ConvertError, match="created in x.md"):
        parse_time("yesterday", what="created in x.md")


def test_yaml_dates_are_read_and_written_as_text() -> None:
    data = load_yaml("created: 2026-03-22\nn: 3\n", where="x")
    assert data == {"created": "2026-03-22", "n": 3}
    assert dump_yaml(data) == "created: 2026-03-22\nn: 3\n"


def test_threews_values_bundlekit_refuses_are_carried_aside() -> None:
    blob = {
        "files": {
            "a.md": "---\nname: A\ndescription: d\ntype: user\ncreated: 2026-01-01\n"
            "updated: 2026-01-01\ndecay: 7d\nimportant: yes please\n---\n\nbody\n"
        }
    }
    tree = blob_to_tree(blob)
    meta = tree.entries[0].meta
    assert "decay" not in meta and meta["x-threews-decay"] == "7d"
    assert "important" not in meta and meta["x-threews-important"] == "yes please"
    assert tree_to_blob(tree, namespace=None)["files"]["a.md"] == blob["files"]["a.md"]


@pytest.mark.usefixtures("default_recursion_limit")
def test_deeply_nested_yaml_frontmatter_is_malformed() -> None:
    with pytest.raises(ConvertError, match="malformed YAML frontmatter in a.md"):
        load_yaml("tags: " + "[" * 3_000 + "]" * 3_000 + "\n", where="a.md")


def test_atomic_write_failure_removes_its_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "adir"
    target.mkdir()
    with pytest.raises(ConvertError, match="cannot write"):
        atomic_write(target, "data")
    assert sorted(os.listdir(tmp_path)) == ["adir"]
