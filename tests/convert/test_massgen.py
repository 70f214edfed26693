"""MassGen filesystem memory: reading, writing, and the round trip through bundlekit."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlekit.convert._common import Entry, ForeignTree
from bundlekit.convert.massgen import parse_massgen_file, read_massgen, render_massgen_file, write_massgen
from bundlekit.errors import ConvertError

from .conftest import MASSGEN_HISTORY, MASSGEN_PREFS, through_bundlekit, tree_files, write


def by_key(tree: ForeignTree) -> dict[str, Entry]:
    return {e.key: e for e in tree.entries}


def test_reads_short_term_as_important_project_memory(massgen_workspace: Path) -> None:
    e = by_key(read_massgen(massgen_workspace))["user_preferences"]
    assert e.meta["type"] == "project"
    assert e.meta["important"] is True
    assert e.meta["x-massgen-tier"] == "short_term"
    assert e.meta["x-massgen-agent-id"] == "agent_a"
    assert e.body.startswith("# User Preferences")


def test_reads_long_term_as_reference_memory(massgen_workspace: Path) -> None:
    e = by_key(read_massgen(massgen_workspace))["project_history"]
    assert e.meta["type"] == "reference"
    assert "important" not in e.meta
    assert e.meta["x-massgen-tier"] == "long_term"


def test_timestamps_without_zone_are_read_in_the_given_zone(massgen_workspace: Path) -> None:
    e = by_key(read_massgen(massgen_workspace, timezone="UTC"))["project_history"]
    assert e.meta["created"] == "2025-01-12T10:30:00Z"
    assert e.meta["updated"] == "2025-01-13T08:00:00Z"
    assert e.meta["x-massgen-created"] == "2025-01-12T10:30:00.123456"


def test_value_holding_a_colon_is_split_on_the_first_colon_only(massgen_workspace: Path) -> None:
    e = by_key(read_massgen(massgen_workspace))["project_history"]
    assert e.meta["description"] == "Project background: decisions and dates"


def test_accepts_the_memory_directory_itself(massgen_workspace: Path) -> None:
    assert sorted(by_key(read_massgen(massgen_workspace / "memory"))) == [
        "project_history",
        "user_preferences",
    ]


def test_folder_of_workspaces_records_each_workspace(tmp_path: Path) -> None:
    write(tmp_path / "ws1" / "memory" / "short_term" / "a.md", MASSGEN_PREFS)
    write(tmp_path / "ws2" / "memory" / "short_term" / "a.md", MASSGEN_PREFS)
    tree = read_massgen(tmp_path)
    assert [(e.key, e.meta["x-massgen-workspace"]) for e in tree.entries] == [
        ("user_preferences", "ws1"),
        ("user_preferences-2", "ws2"),
    ]
    assert tree.entries[1].meta["x-massgen-name"] == "user_preferences"


def test_same_name_in_both_tiers_gets_distinct_keys(tmp_path: Path) -> None:
    write(tmp_path / "memory" / "short_term" / "notes.md", "---\nname: notes\ndescription: a\n---\nA\n")
    write(tmp_path / "memory" / "long_term" / "Notes.md", "---\nname: Notes\ndescription: b\n---\nB\n")
    keys = [e.key for e in read_massgen(tmp_path).entries]
    assert keys == ["notes", "Notes-2"]


def test_file_without_frontmatter_is_imported_by_its_stem_with_a_warning_naming_it(tmp_path: Path) -> None:
    write(tmp_path / "memory" / "short_term" / "bad.md", "just text\n")
    tree = read_massgen(tmp_path, timezone="UTC")
    assert (tree.entries[0].meta["name"], tree.entries[0].body) == ("bad", "just text")
    assert any("bad.md" in w and "no frontmatter" in w for w in tree.warnings)


def test_directory_named_like_a_memory_file_is_skipped(tmp_path: Path) -> None:
    # It was opened as a file: an IsADirectoryError traceback instead of a conversion.
    write(tmp_path / "memory" / "short_term" / "notes.md", "---\nname: notes\ndescription: a\n---\nA\n")
    (tmp_path / "memory" / "short_term" / "folder.md").mkdir()
    assert [e.key for e in read_massgen(tmp_path).entries] == ["notes"]


def test_round_trip_through_bundlekit_gives_identical_files(massgen_workspace: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_massgen(through_bundlekit(read_massgen(massgen_workspace)), out)
    assert tree_files(out) == {
        "memory/short_term/user_preferences.md": MASSGEN_PREFS,
        "memory/long_term/project_history.md": MASSGEN_HISTORY,
    }


def test_written_values_are_single_line_and_unquoted() -> None:
    text = render_massgen_file({"name": "n", "description": "two\nlines: 'quoted'"}, "body")
    fields, content = parse_massgen_file(text)
    assert fields["description"] == "two lines: 'quoted'"
    assert content == "body"


def test_native_memory_goes_to_short_term_when_important(tmp_path: Path) -> None:
    tree = ForeignTree(
        [
            Entry(
                "pinned",
                {
                    "name": "Pinned",
                    "description": "d",
                    "type": "user",
                    "important": True,
                    "created": "2026-01-01T00:00:00Z",
                    "updated": "2026-01-02T00:00:00Z",
                },
                "x",
            ),
            Entry(
                "ref",
                {
                    "name": "Ref",
                    "description": "d",
                    "type": "reference",
                    "created": "2026-01-01T00:00:00Z",
                    "updated": "2026-01-02T00:00:00Z",
                },
                "y",
            ),
        ]
    )
    write_massgen(tree, tmp_path, agent_id="agent_z")
    fields, _ = parse_massgen_file((tmp_path / "memory" / "short_term" / "pinned.md").read_text())
    assert fields == {
        "name": "pinned",
        "description": "d",
        "tier": "short_term",
        "agent_id": "agent_z",
        "created": "2026-01-01T00:00:00Z",
        "updated": "2026-01-02T00:00:00Z",
    }
    assert (tmp_path / "memory" / "long_term" / "ref.md").is_file()


def test_changed_timestamp_is_written_in_the_new_value(massgen_workspace: Path, tmp_path: Path) -> None:
    tree = read_massgen(massgen_workspace)
    entry = by_key(tree)["project_history"]
    entry.meta["updated"] = "2026-02-02T02:02:02Z"
    write_massgen(tree, tmp_path)
    fields, _ = parse_massgen_file((tmp_path / "memory" / "long_term" / "project_history.md").read_text())
    assert fields["updated"] == "2026-02-02T02:02:02Z"
    assert fields["created"] == "2025-01-12T10:30:00.123456"


def test_unsafe_recorded_workspace_gives_way_to_memory_dir_with_a_warning(tmp_path: Path) -> None:
    tree = ForeignTree(
        [
            Entry(
                "x",
                {
                    "name": "x",
                    "description": "d",
                    "type": "user",
                    "x-massgen-workspace": "..",
                    "created": "2026-01-01T00:00:00Z",
                    "updated": "2026-01-01T00:00:00Z",
                },
                "b",
            )
        ]
    )
    paths = write_massgen(tree, tmp_path / "out")
    assert paths == [tmp_path / "out" / "memory" / "long_term" / "x.md"]
    assert any("memory 'x': x-massgen-workspace" in w for w in tree.warnings)


def test_file_that_is_not_utf8_is_left_out_naming_it_while_the_others_are_read(tmp_path: Path) -> None:
    tier = tmp_path / "memory" / "short_term"
    tier.mkdir(parents=True)
    (tier / "latin1.md").write_bytes(b"---\nname: caf\xe9\n---\nbody\n")
    write(tier / "ok.md", "---\nname: ok\ndescription: d\n---\nbody\n")
    tree = read_massgen(tmp_path, timezone="UTC")
    assert [e.key for e in tree.entries] == ["ok"]
    said = "latin1.md is not UTF-8 text; convert it and retry; left out (the other files are read)"
    assert any(w.endswith(said) for w in tree.warnings)
    assert [(loss.left_out, loss.key.endswith("latin1.md")) for loss in tree.losses] == [(True, True)]
