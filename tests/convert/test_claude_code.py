"""Claude Code memory directories: both frontmatter forms, the MEMORY.md index, round trips."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlekit.convert._common import Entry, ForeignTree
from bundlekit.convert.claude_code import parse_index, read_claude_code, render_index, write_claude_code
from bundlekit.errors import ConvertError

from .conftest import through_bundlekit, tree_files, write


def by_key(tree: ForeignTree) -> dict[str, Entry]:
    return {e.key: e for e in tree.entries}


def test_reads_top_level_frontmatter(claude_dir: Path) -> None:
    e = by_key(read_claude_code(claude_dir))["feedback_tone"]
    assert (e.meta["name"], e.meta["type"]) == ("Tone", "feedback")
    assert e.meta["description"] == "direct critique, not encouragement-first"
    assert e.body.startswith("Lead with the issue.")


def test_reads_frontmatter_under_metadata(claude_dir: Path) -> None:
    e = by_key(read_claude_code(claude_dir))["user_role"]
    assert (e.meta["name"], e.meta["type"]) == ("User role", "user")
    assert e.meta["x-claude-code-form"] == "metadata"


def test_index_order_is_recorded(claude_dir: Path) -> None:
    tree = by_key(read_claude_code(claude_dir))
    assert tree["feedback_tone"].meta["x-claude-code-order"] == 0
    assert tree["user_role"].meta["x-claude-code-order"] == 1


def test_file_missing_from_index_is_still_read_and_stays_unlinked(claude_dir: Path, tmp_path: Path) -> None:
    write(claude_dir / "stray.md", "---\nname: Stray\ndescription: s\ntype: project\n---\nbody\n")
    tree = read_claude_code(claude_dir)
    assert by_key(tree)["stray"].meta["x-claude-code-indexed"] is False
    write_claude_code(tree, tmp_path / "out")
    assert "stray.md" not in (tmp_path / "out" / "MEMORY.md").read_text()
    assert (tmp_path / "out" / "stray.md").is_file()


def test_unknown_type_reads_as_reference_and_is_kept(tmp_path: Path) -> None:
    write(tmp_path / "x.md", "---\nname: X\ndescription: d\ntype: scratch\n---\nbody\n")
    e = read_claude_code(tmp_path).entries[0]
    assert (e.meta["type"], e.meta["x-claude-code-type"]) == ("reference", "scratch")


def test_index_line_parsing_accepts_dashes_and_escaped_brackets() -> None:
    text = "# Memory\n- [A \\] b](a.md) — hook one\n* [C](c.md) - hook two\n- [D](d.md)\nprose\n"
    assert parse_index(text) == [("A ] b", "a.md", "hook one"), ("C", "c.md", "hook two"), ("D", "d.md", "")]


def test_rendered_index_parses_back() -> None:
    rows = [("Title [x]", "t.md", "the hook"), ("Other", "o.md", "")]
    assert parse_index(render_index(rows)) == rows


def test_round_trip_through_bundlekit_gives_identical_files(claude_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_claude_code(through_bundlekit(read_claude_code(claude_dir)), out, form="source")
    assert tree_files(out) == tree_files(claude_dir)


def test_default_export_writes_top_level_form(claude_dir: Path, tmp_path: Path) -> None:
    write_claude_code(read_claude_code(claude_dir), tmp_path)
    text = (tmp_path / "user_role.md").read_text()
    assert text.startswith(
        "---\nname: User role\ndescription: mechanical engineer, metric units\ntype: user\n"
    )


def test_metadata_form_on_request_writes_what_claude_code_writes(claude_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_claude_code(read_claude_code(claude_dir), out, form="metadata")
    assert (out / "feedback_tone.md").read_text().startswith(
        "---\nname: Tone\ndescription: direct critique, not encouragement-first\nmetadata:\n"
        "  node_type: memory\n  type: feedback\n---\n"
    )
    assert {e.key: e.meta["name"] for e in read_claude_code(out).entries} == {
        "feedback_tone": "Tone",
        "user_role": "User role",
    }


def test_unknown_frontmatter_keys_survive_the_round_trip(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write(src / "x.md", "---\nname: X\ndescription: d\ntype: project\nowner: alex\n---\nbody\n")
    write_claude_code(through_bundlekit(read_claude_code(src)), tmp_path / "out")
    assert "owner: alex" in (tmp_path / "out" / "x.md").read_text()


def test_malformed_frontmatter_is_read_line_by_line_with_a_warning_naming_the_file(tmp_path: Path) -> None:
    write(tmp_path / "bad.md", "---\nname: [unclosed\n---\nbody\n")
    tree = read_claude_code(tmp_path)
    assert tree.entries[0].meta["name"] == "[unclosed"
    assert any("bad.md" in w and "line by line" in w for w in tree.warnings)


def test_unknown_form_is_refused(claude_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ConvertError, match="form"):
        write_claude_code(read_claude_code(claude_dir), tmp_path, form="nested")


def test_dates_in_unknown_keys_stay_bare(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write(src / "x.md", "---\nname: X\ndescription: d\ntype: project\nreviewed: 2026-02-03\n---\nbody\n")
    write_claude_code(through_bundlekit(read_claude_code(src)), tmp_path / "out")
    assert "reviewed: 2026-02-03\n" in (tmp_path / "out" / "x.md").read_text()


def test_an_unsafe_recorded_path_gives_way_to_the_key_with_a_warning(tmp_path: Path) -> None:
    ok = Entry("a", {"name": "A", "description": "d", "type": "user"}, "x")
    bad = Entry("b", {"name": "B", "description": "d", "type": "user", "x-claude-code-file": "../b"}, "y")
    tree = ForeignTree([ok, bad])
    write_claude_code(tree, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["MEMORY.md", "a.md", "b.md"]
    assert any(w.startswith("memory 'b': x-claude-code-file is not a plain relative") for w in tree.warnings)


def test_nothing_is_written_when_a_strict_export_meets_an_unsafe_path(tmp_path: Path) -> None:
    ok = Entry("a", {"name": "A", "description": "d", "type": "user"}, "x")
    bad = Entry("b", {"name": "B", "description": "d", "type": "user", "x-claude-code-file": "../b"}, "y")
    with pytest.raises(ConvertError, match="strict"):
        write_claude_code(ForeignTree([ok, bad]), tmp_path / "out", strict=True)
    assert not (tmp_path / "out").exists()
