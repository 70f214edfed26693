"""A refresh that indexes edited memories again leaves ``MEMORY.md`` unrendered when it cannot change: none added or
removed, none of them shown in ``MEMORY.md`` before, and the same keys shown after (``Indexer._shown_before``,
``Indexer._shown_kept``; a writer's round at 10,000 memories read and parsed ~200 files to write the same bytes).
Whatever the refresh decides, ``MEMORY.md`` is the index rendered from every memory file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bundlekit.memory import Memory, indexer
from bundlekit.memory.index import MAX_INDEX_LINES, render_index
from bundlekit.memory.record import parse_memory_file, render_memory_file

_COUNT = MAX_INDEX_LINES + 30  # the last project memories are counted, not shown


def _text(i: int, kind: str, body: str, description: str = "") -> str:
    meta = {"name": f"Note {i}", "description": description or f"about drill {i}", "type": kind,
            "created": "2025-01-01T00:00:00Z", "updated": "2025-02-01T00:00:00Z", "revision": 1}
    return render_memory_file(meta, body)


def _edit(root: Path, i: int, kind: str, body: str, description: str = "") -> None:
    path = root / f"note_{i:03d}.md"
    path.write_text(_text(i, kind, body, description), encoding="utf-8")
    os.utime(path, ns=(path.stat().st_mtime_ns + 5_000_000_000,) * 2)  # the signature moves, whatever the clock


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    for i in range(_COUNT):
        (root / f"note_{i:03d}.md").write_text(_text(i, ("user", "project")[i % 2], f"rondo {i}\n"), encoding="utf-8")
    Memory(root).list()  # the index and MEMORY.md written
    return root


def _renders(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    seen: list[int] = []
    render = indexer.Indexer.render

    def counted(self: indexer.Indexer, catalog: object) -> str:
        seen.append(1)
        return render(self, catalog)  # type: ignore[arg-type]

    monkeypatch.setattr(indexer.Indexer, "render", counted)
    return seen


def _rendered_from_files(root: Path) -> str:
    records = [parse_memory_file(path.read_text(encoding="utf-8"), key=path.name[:-3], where=path.name)
               for path in sorted(root.glob("note_*.md"))]
    return render_index(records)


def test_an_edit_of_a_memory_not_shown_leaves_memory_md_unrendered(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    renders = _renders(monkeypatch)
    _edit(root, _COUNT - 1, "project", "rondo edited, a longer body than before\n")
    mem = Memory(root)
    assert "longer body" in (mem.read(f"note_{_COUNT - 1:03d}") or pytest.fail("gone")).body
    mem.list()
    assert renders == []
    assert (root / "MEMORY.md").read_text(encoding="utf-8") == _rendered_from_files(root)


def test_a_memory_not_shown_whose_type_changed_to_one_still_not_shown_leaves_memory_md_unrendered(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    renders = _renders(monkeypatch)
    _edit(root, _COUNT - 1, "reference", "rondo, now a reference\n")  # reference sorts after project: not shown
    Memory(root).list()
    assert renders == []
    assert (root / "MEMORY.md").read_text(encoding="utf-8") == _rendered_from_files(root)


def test_a_memory_not_shown_whose_type_brings_it_into_memory_md_renders_it(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    renders = _renders(monkeypatch)
    _edit(root, _COUNT - 1, "user", "rondo, now about the user\n")  # user sorts first: now shown
    Memory(root).list()
    assert renders
    text = (root / "MEMORY.md").read_text(encoding="utf-8")
    assert f"note_{_COUNT - 1:03d}" in text and text == _rendered_from_files(root)


def test_an_edit_of_a_shown_memory_renders_memory_md(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    renders = _renders(monkeypatch)
    _edit(root, 0, "user", "rondo 0\n", description="a description seen in MEMORY.md")
    Memory(root).list()
    assert renders
    text = (root / "MEMORY.md").read_text(encoding="utf-8")
    assert "a description seen in MEMORY.md" in text and text == _rendered_from_files(root)


def test_a_memory_added_renders_memory_md(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    renders = _renders(monkeypatch)
    (root / "note_999.md").write_text(_text(999, "project", "rondo added\n"), encoding="utf-8")
    Memory(root).list()
    assert renders
    assert (root / "MEMORY.md").read_text(encoding="utf-8") == _rendered_from_files(root)


def test_a_memory_not_shown_that_no_longer_parses_renders_memory_md(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    renders = _renders(monkeypatch)
    path = root / f"note_{_COUNT - 1:03d}.md"
    path.write_text("---\nname: [unclosed\n---\nbody\n", encoding="utf-8")
    mem = Memory(root)
    mem.list()
    assert renders and f"note_{_COUNT - 1:03d}" in mem.broken()
    path.unlink()  # MEMORY.md counts what it can show: the broken one is left out of it, as of the files left
    assert (root / "MEMORY.md").read_text(encoding="utf-8") == _rendered_from_files(root)
