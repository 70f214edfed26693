"""MassGen files read as MassGen itself reads them, and written so MassGen reads them back.

The fixtures in ``fixtures/interop/massgen`` and ``expected.json`` come from
``fixtures/interop/massgen/generate.py``: MassGen 0.1.97's own code archived the
workspace and parsed every file (``SystemMessageBuilder._parse_memory_file``,
``_get_all_memories``, ``_load_archived_memories``; github massgen/MassGen).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bundlekit.convert._common import Entry, ForeignTree
from bundlekit.convert.massgen import parse_massgen_file, read_massgen, write_massgen

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "interop" / "massgen"
EXPECTED: dict[str, Any] = json.loads((FIXTURES / "expected.json").read_text(encoding="utf-8"))
WORKSPACE = FIXTURES / "workspace"
ARCHIVE = FIXTURES / ".massgen" / "sessions" / "session_1" / "archived_memories"
# MassGen globs <tier>/*.md: a file in a subfolder is never read (its parse is recorded all the same).
PARSED = [rel for rel, value in EXPECTED["parsed"].items() if value is not None and rel.count("/") == 1]


def by_file(tree: ForeignTree) -> dict[str, Entry]:
    return {
        f"{e.meta['x-massgen-tier']}/{e.meta.get('x-massgen-file', e.meta['name'])}.md": e
        for e in tree.entries
    }


@pytest.mark.parametrize("rel", PARSED)
def test_every_field_massgen_reads_is_read_the_same(rel: str) -> None:
    want = EXPECTED["parsed"][rel]
    e = by_file(read_massgen(WORKSPACE, timezone="UTC"))[rel]
    assert e.meta["name"] == want["name"]
    assert e.body == want["content"]
    if want["description"]:
        assert e.meta["description"] == want["description"]
    for field in ("created", "updated"):
        if want[field]:
            assert e.meta[f"x-massgen-{field}"] == want[field]
    if want["agent_id"]:
        assert e.meta["x-massgen-agent-id"] == want["agent_id"]


def test_a_value_holding_three_dashes_ends_the_frontmatter_as_in_massgen() -> None:
    e = by_file(read_massgen(WORKSPACE, timezone="UTC"))["long_term/dash_value.md"]
    assert e.meta["description"] == "before"
    assert e.body.startswith("after\ncreated: 2025-11-23T20:00:00")


def test_quotes_and_colons_stay_as_written() -> None:
    e = by_file(read_massgen(WORKSPACE, timezone="UTC"))["short_term/quick_notes.md"]
    assert e.meta["description"] == '"Tactical observations: what worked"'


def test_a_list_value_is_kept_as_the_text_massgen_sees() -> None:
    e = by_file(read_massgen(WORKSPACE, timezone="UTC"))["long_term/tagged.md"]
    assert e.meta["x-massgen-extra"] == {"tags": "[alpha, beta]"}


def test_the_directory_wins_over_a_stale_tier_line() -> None:
    e = by_file(read_massgen(WORKSPACE, timezone="UTC"))["long_term/promoted.md"]
    assert (e.meta["x-massgen-tier"], e.meta["type"], e.meta["x-massgen-tier-field"]) == (
        "long_term",
        "reference",
        "short_term",
    )
    assert "promoted" in EXPECTED["injected"]["long_term"]


def test_the_file_massgen_skips_is_imported_by_its_stem_with_a_warning() -> None:
    assert EXPECTED["parsed"]["short_term/loose.md"] is None
    tree = read_massgen(WORKSPACE, timezone="UTC")
    e = by_file(tree)["short_term/loose.md"]
    assert (e.meta["name"], e.body) == ("loose", "Just a note without frontmatter.")
    assert any("loose.md has no frontmatter" in w for w in tree.warnings)


def test_files_that_are_not_memories_are_listed_as_skipped() -> None:
    warnings = read_massgen(WORKSPACE, timezone="UTC").warnings
    assert any("skipped" in w and "essential_files_manifest.json" in w for w in warnings)
    assert any("skipped" in w and "archive/old.md" in w for w in warnings)


def test_naive_timestamps_follow_the_given_zone() -> None:
    e = by_file(read_massgen(WORKSPACE, timezone="Europe/Berlin"))["short_term/user_prefs.md"]
    assert e.meta["created"] == "2025-11-23T19:00:00Z"


def test_without_a_zone_the_machine_zone_is_used_and_said() -> None:
    warnings = read_massgen(WORKSPACE).warnings
    assert any("local time" in w and "--timezone" in w for w in warnings)


def test_the_archived_answer_layout_imports_what_massgen_recalls() -> None:
    tree = read_massgen(ARCHIVE, timezone="UTC")
    files = {(e.meta["x-massgen-tier"], e.meta.get("x-massgen-file", e.meta["name"])) for e in tree.entries}
    for tier, memories in EXPECTED["archived"].items():
        for name in memories:
            assert (tier, name) in files
    assert {e.meta["x-massgen-archive"] for e in tree.entries} == {"agent_a_answer_1"}


def test_export_reads_back_in_massgen_to_the_same_fields(tmp_path: Path) -> None:
    tree = read_massgen(WORKSPACE, timezone="UTC")
    write_massgen(tree, tmp_path)
    for rel in PARSED:
        fields, content = parse_massgen_file((tmp_path / "memory" / rel).read_text(encoding="utf-8"))
        want = EXPECTED["parsed"][rel]
        assert fields is not None
        assert (fields["name"], content) == (want["name"], want["content"])
        assert fields.get("description", "") == want["description"]
