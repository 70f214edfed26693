"""The one conversion from loaded files to memories gives the same memories through all four callers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bundlekit.bundle.build import BuildOptions, BundleResult, build_bundle
from bundlekit.bundle.diff import read_side
from bundlekit.bundle.fork import fork_bundle
from bundlekit.bundle.lineage import read_parents
from bundlekit.bundle.layers import layered_memory
from bundlekit.bundle.load import load_memory
from bundlekit.memory import Memory, MemoryRecord

from .conftest import CREATED

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "memory"


@pytest.fixture
def bundle(tmp_path: Path) -> BundleResult:
    return build_bundle(FIXTURE, tmp_path / "fixture.car", options=BuildOptions(created=CREATED))


def _content(records: Any) -> list[tuple[str, dict[str, Any], str]]:
    """Key, frontmatter without ``source`` (fork sets it) and body of each memory."""
    listed: list[MemoryRecord] = list(records)
    return [(r.key, {k: v for k, v in r.meta.items() if k != "source"}, r.body) for r in listed]


@pytest.fixture(scope="module")
def expected() -> list[tuple[str, dict[str, Any], str]]:
    """The fixture tree's memories, read when a test asks (never while collecting: every test process
    collects at once, and a module-level read opened the same new index in all of them together)."""
    return _content(Memory(FIXTURE).list())


def test_load_memory_gives_the_trees_memories(bundle: BundleResult) -> None:
    assert [(r.key, r.raw) for r in load_memory(str(bundle.car)).list()] == [
        (r.key, r.raw) for r in Memory(FIXTURE).list()
    ]


def test_a_layer_gives_the_same_memories(bundle: BundleResult, expected: list[Any]) -> None:
    assert _content(layered_memory([("agent", str(bundle.car))]).list()) == expected


def test_a_diff_side_gives_the_same_memories(bundle: BundleResult, expected: list[Any]) -> None:
    side = read_side(str(bundle.car))
    assert _content(side.records.values()) == expected
    assert len(side.timeline) == len(Memory(FIXTURE).timeline())


def test_a_fork_gives_the_same_memories_with_the_bundle_as_its_lineage(
    bundle: BundleResult, tmp_path: Path, expected: list[Any]
) -> None:
    fork_bundle(str(bundle.car), tmp_path / "forked")
    forked = Memory(tmp_path / "forked")
    assert _content(forked.list()) == expected
    assert {r.key: r.raw for r in forked.list()} == {r.key: r.raw for r in Memory(FIXTURE).list()}
    assert read_parents(tmp_path / "forked") == [bundle.root_cid]
    assert forked.timeline() == Memory(FIXTURE).timeline()
