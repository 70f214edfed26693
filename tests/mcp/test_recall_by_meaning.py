"""The MCP ``memory_recall`` tool ranks by meaning by default (hybrid with the `semantic` extra), names the
ranking in each hit, and the served tree keeps its embedder loaded between calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlekit.errors import UsageError
from bundlekit.mcp_server import MemoryTools, ServedMemory
from bundlekit.memory import Memory
from tests.embed.counting import CountingEmbedder


@pytest.fixture
def served(tree: Path) -> tuple[MemoryTools, CountingEmbedder]:
    embedder = CountingEmbedder()
    return MemoryTools(ServedMemory(Memory(tree, embedder=embedder), read_only=False, origin="x")), embedder


def test_recall_ranks_by_meaning_by_default(served: tuple[MemoryTools, CountingEmbedder]) -> None:
    tools, _embedder = served
    hits = tools.recall("what does the user like to drink")
    assert hits[0]["key"] == "user_role" and hits[0]["ranking"] == "hybrid" and "body" in hits[0]


def test_recall_takes_the_ranking_asked_for(served: tuple[MemoryTools, CountingEmbedder]) -> None:
    tools, _embedder = served
    assert [h["ranking"] for h in tools.recall("green tea", rank="salience")] == ["salience"]
    with pytest.raises(UsageError, match="rank must be one of"):
        tools.recall("tea", rank="psychic")


def test_the_served_tree_embeds_its_memories_once_across_calls(served: tuple[MemoryTools, CountingEmbedder]) -> None:
    tools, embedder = served
    tools.recall("drills for practice")
    tools.recall("how should feedback sound")
    assert embedder.texts == 2 * 3 + 2  # three memories' texts and heads once, then one text per query
