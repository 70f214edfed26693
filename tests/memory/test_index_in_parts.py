"""A refresh reads and parses the files it indexes :data:`indexer.PARSED_AT_ONCE` at a time (a first index of
100,000 memories held every file's bytes and record at once: 750 MB): the index it builds is the one built whole,
a broken file in any part is named, and a file gone between the listing and its part is not indexed."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlekit.memory import Memory, indexer
from bundlekit.memory.record import render_memory_file


def _write(root: Path, count: int) -> list[str]:
    root.mkdir(parents=True, exist_ok=True)
    keys = [f"note_{i:03d}" for i in range(count)]
    for i, key in enumerate(keys):
        meta = {"name": f"Note {i}", "description": f"about drill {i}", "type": ("user", "project")[i % 2],
                "created": "2025-01-01T00:00:00Z", "updated": "2025-02-01T00:00:00Z", "revision": 1}
        (root / f"{key}.md").write_text(render_memory_file(meta, f"rondo pacing {i}\n"), encoding="utf-8")
    return keys


def _answers(root: Path) -> tuple[list[str], str, list[str], dict[str, str]]:
    memory = Memory(root)
    return ([r.key for r in memory.list()], memory.list_text(), [r.key for r in memory.recall("rondo", limit=50)],
            memory.broken())


def test_an_index_built_in_parts_answers_as_one_built_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path / "whole", 23)
    _write(tmp_path / "parts", 23)
    for root in (tmp_path / "whole", tmp_path / "parts"):
        (root / "note_011.md").write_text("---\nname: [unclosed\n---\nbody\n", encoding="utf-8")
    whole = _answers(tmp_path / "whole")
    monkeypatch.setattr(indexer, "PARSED_AT_ONCE", 4)
    parts = _answers(tmp_path / "parts")
    assert parts == whole
    assert list(parts[3]) == ["note_011"] and "note_000" in parts[0] and "note_022" in parts[0]


def test_a_file_gone_before_its_part_is_read_is_not_indexed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "tree"
    _write(root, 12)
    monkeypatch.setattr(indexer, "PARSED_AT_ONCE", 4)
    read = indexer.parse_files
    calls: list[list[str]] = []

    def parse_then_remove(backend: object, names: list[str], broken: object = None) -> object:
        calls.append(list(names))
        if len(calls) == 1:
            (root / "note_010.md").unlink()  # listed, then gone before the third part is read
        return read(backend, names, broken)  # type: ignore[arg-type]

    monkeypatch.setattr(indexer, "parse_files", parse_then_remove)
    keys = [r.key for r in Memory(root).list()]
    assert [len(names) for names in calls[:3]] == [4, 4, 4]
    assert "note_010" not in keys and len(keys) == 11
