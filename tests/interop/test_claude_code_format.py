"""Claude Code auto-memory directories read by Claude Code's rules, and written in the form it writes.

Claude Code is not open source: ``fixtures/interop/claude-code`` is hand-built
after its documented and observed format (see that folder's README: code.claude.com
docs, anthropics/claude-code#23402, TrishaAdio/codingagent Understanding_Claude_Code.md
at 125877b, and memory files Claude Code wrote into public repositories).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bundlekit.convert._common import Entry, ForeignTree, load_yaml, split_at_dashes
from bundlekit.convert.claude_code import read_claude_code, write_claude_code
from bundlekit.errors import ConvertError

MEMORY = Path(__file__).resolve().parents[2] / "fixtures" / "interop" / "claude-code" / "memory"
TO_ISO_STRING = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")

# What each file must read as under Claude Code's rules: (name, description, type, updated or None).
EXPECTED = {
    "user_role": ("User role", "mechanical engineer, metric units", "user", None),
    "feedback_tests": (
        "Integration tests",
        'Integration tests: hit a real database, not "mocks"',
        "feedback",
        "2026-09-08T19:29:56Z",
    ),
    "project_flake": ("Flaky outbox test", "re-run before investigating", "project", "2026-09-09T08:00:00Z"),
    "team.reference_grafana": (
        "Grafana board",
        "latency dashboard for the API",
        "reference",
        "2026-09-28T09:28:23Z",
    ),
    "project_dashes": ("Dashes", "before", "reference", None),
    "loose_note": ("loose_note", "A note written without any frontmatter.", "reference", None),
}


def entries(tree: ForeignTree) -> dict[str, Entry]:
    return {e.key: e for e in tree.entries}


@pytest.mark.parametrize("key", list(EXPECTED))
def test_every_memory_reads_with_every_field_right(key: str) -> None:
    e = entries(read_claude_code(MEMORY))[key]
    name, description, mtype, updated = EXPECTED[key]
    assert (e.meta["name"], e.meta["description"], e.meta["type"]) == (name, description, mtype)
    if updated is not None:
        assert e.meta["updated"] == updated


def test_metadata_type_wins_over_the_top_level_type() -> None:
    e = entries(read_claude_code(MEMORY))["project_flake"]
    assert (e.meta["type"], e.meta["x-claude-code-top-type"]) == ("project", "reference")


def test_origin_session_is_kept_in_the_metadata() -> None:
    e = entries(read_claude_code(MEMORY))["feedback_tests"]
    assert e.meta["x-claude-code-metadata"]["originSessionId"] == "885ee114-3071-4b9e-9b32-e55329684a43"


def test_a_subfolder_memory_gets_a_key_that_finds_its_way_back(tmp_path: Path) -> None:
    tree = read_claude_code(MEMORY)
    assert entries(tree)["team.reference_grafana"].meta["x-claude-code-file"] == "team/reference_grafana"
    write_claude_code(tree, tmp_path, form="source")
    assert (tmp_path / "team" / "reference_grafana.md").is_file()
    assert "](team/reference_grafana.md)" in (tmp_path / "MEMORY.md").read_text(encoding="utf-8")


def test_frontmatter_ends_at_the_first_three_dashes_anywhere() -> None:
    e = entries(read_claude_code(MEMORY))["project_dashes"]
    assert e.body.startswith("after\ntype: project\n---")


def test_list_values_are_kept() -> None:
    e = entries(read_claude_code(MEMORY))["project_flake"]
    assert e.meta["x-claude-code-extra"] == {"tags": ["ci", "flaky"]}


def test_prose_in_the_index_and_a_file_without_frontmatter_are_reported() -> None:
    warnings = read_claude_code(MEMORY).warnings
    assert any("lines of MEMORY.md that are not memory links" in w for w in warnings)
    assert any("loose_note.md has no frontmatter" in w for w in warnings)


def test_round_trip_keeps_what_claude_code_reads(tmp_path: Path) -> None:
    write_claude_code(read_claude_code(MEMORY), tmp_path, form="source")
    again = entries(read_claude_code(tmp_path))
    for key, e in entries(read_claude_code(MEMORY)).items():
        for field in ("name", "description", "type", "x-claude-code-metadata", "x-claude-code-extra"):
            assert again[key].meta.get(field) == e.meta.get(field), (key, field)
        assert again[key].body == e.body


def test_metadata_form_writes_exactly_what_claude_code_writes(tmp_path: Path) -> None:
    write_claude_code(read_claude_code(MEMORY), tmp_path, form="metadata")
    for path in sorted(tmp_path.rglob("*.md")):
        if path.name == "MEMORY.md":
            continue
        fm_text, _body = split_at_dashes(path.read_text(encoding="utf-8"))
        fm = load_yaml(fm_text or "", where=str(path))  # timestamps kept as the text written
        assert list(fm)[:3] == ["name", "description", "metadata"], path
        meta = fm["metadata"]
        assert set(meta) <= {"node_type", "type", "originSessionId", "modified"}, path
        assert meta["node_type"] == "memory" and meta["type"] in ("user", "feedback", "project", "reference")
        # A file that had no timestamp gets none (its file time is not written back).
        assert "modified" not in meta or TO_ISO_STRING.match(str(meta["modified"])), path


def test_a_description_holding_three_dashes_is_written_with_an_em_dash_and_a_warning(tmp_path: Path) -> None:
    bad = Entry(
        "x", {"name": "X", "description": "a --- b", "type": "user", "updated": "2026-01-01T00:00:00Z"}, "b"
    )
    tree = ForeignTree([bad])
    write_claude_code(tree, tmp_path / "out")
    assert entries(read_claude_code(tmp_path / "out"))["x"].meta["description"] == "a \u2014 b"
    assert [loss.key for loss in tree.losses] == ["x"]


def test_a_description_holding_three_dashes_refuses_a_strict_export(tmp_path: Path) -> None:
    bad = Entry(
        "x", {"name": "X", "description": "a --- b", "type": "user", "updated": "2026-01-01T00:00:00Z"}, "b"
    )
    with pytest.raises(ConvertError, match="strict"):
        write_claude_code(ForeignTree([bad]), tmp_path / "out", strict=True)
    assert not (tmp_path / "out").exists()
