from __future__ import annotations

import os
from pathlib import Path

import pytest

from bundlekit.memory import Memory

from .conftest import Clock, fields


@pytest.fixture
def none_mem(tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> Memory:
    monkeypatch.chdir(tmp_path)
    return Memory(None, clock=clock)


def test_none_mode_is_fully_working_and_writes_nothing(none_mem: Memory, tmp_path: Path) -> None:
    assert none_mem.mode == "none"
    none_mem.write("user_role", **fields(type="user", body="5-a-side"))
    none_mem.write("user_role", **fields(type="user", body="5-a-side on Saturdays"), expected_revision=1)
    none_mem.write("feedback_tone", **fields())
    none_mem.note("waved")
    assert none_mem.read("user_role").revision == 2  # type: ignore[union-attr]
    assert [r.key for r in none_mem.list()] == ["feedback_tone", "user_role"]
    assert none_mem.recall("saturdays")[0].key == "user_role"
    assert "5-a-side on Saturdays" in none_mem.context_block()
    none_mem.forget("feedback_tone")
    assert [e["type"] for e in none_mem.timeline()] == ["waved", "forgot"]
    assert os.listdir(tmp_path) == []


def test_none_mode_bundle_files_and_export_work(none_mem: Memory) -> None:
    none_mem.write("a", **fields())
    none_mem.note("x")
    assert [p for p, _ in none_mem.bundle_files()] == ["MEMORY.md", "a.md", "timeline/2026-04-14.jsonl"]
    other = Memory(None)
    other.import_(none_mem.export())
    assert other.read("a") == none_mem.read("a")


def test_two_none_mode_memories_are_independent(clock: Clock) -> None:
    first, second = Memory(None, clock=clock), Memory(None, clock=clock)
    first.write("a", **fields())
    assert second.list() == []
