"""Recall by meaning returns the nearest memories, never nothing (issue 34, item 9: `recall --rank semantic`
answered nothing for a question whose memory was plainly the nearest), each with its similarity; a threshold
is an option (`--min-similarity`, the MCP tool's `min_similarity`), off by default."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result
from numpy.typing import NDArray

from bundlekit.cli import cli
from bundlekit.errors import UsageError
from bundlekit.mcp_server import MemoryTools, ServedMemory
from bundlekit.memory import Memory
from bundlekit.memory.bymeaning import MIN_SIMILARITY
from tests.embed.trees import MEMORIES, memory_tree, write_memories

# A query about videos, and memories at hand-chosen cosines from it: the reel plainly nearest, yet under
# MIN_SIMILARITY (as an embedder whose cosines run low gives: every one a "no hit" before the fix).
_QUERY = np.array([1.0, 0.0, 0.0, 0.0])
_NEAR = {"clips": 0.03, "green": -0.01, "release": -0.2, "backend": -0.3}


class LowCosineEmbedder:
    """Vectors whose cosine to any query mentioning videos is ``_NEAR`` of the word the text holds."""

    name = "low-cosine"
    model_id = "test/low-cosine"
    dimension = 4

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return np.asarray([self._vector(text) for text in texts], dtype=np.float32)

    @staticmethod
    def _vector(text: str) -> list[float]:
        if "videos" in text:
            return list(_QUERY)
        cosine = next((value for word, value in _NEAR.items() if word in text), 0.0)
        return [cosine, math.sqrt(1 - cosine**2), 0.0, 0.0]

    def close(self) -> None:
        pass


@pytest.fixture
def low(tmp_path: Path) -> Memory:
    return write_memories(Memory(tmp_path / "memory", embedder=LowCosineEmbedder()))


@pytest.mark.parametrize("rank", ["semantic", "hybrid"])
def test_the_nearest_memory_is_returned_even_when_none_is_above_the_similarity_floor(low: Memory, rank: str) -> None:
    hits = low.recall("where are the videos", rank=rank, limit=10)
    assert all(hit.similarity is not None and hit.similarity < MIN_SIMILARITY for hit in hits)
    assert [hit.key for hit in hits] == ["reel", "drinks", "deploy", "team"]  # nearest first
    assert [hit.similarity for hit in hits] == pytest.approx([0.03, -0.01, -0.2, -0.3], abs=1e-3)


def test_the_limit_takes_the_nearest(low: Memory) -> None:
    assert [hit.key for hit in low.recall("where are the videos", rank="semantic", limit=2)] == ["reel", "drinks"]


def test_min_similarity_leaves_out_the_memories_less_similar(low: Memory) -> None:
    assert [h.key for h in low.recall("where are the videos", rank="semantic", min_similarity=-0.05)] == [
        "reel", "drinks"]
    assert low.recall("where are the videos", rank="hybrid", min_similarity=0.5) == []


@pytest.mark.parametrize("value", [1.5, -1.01, float("nan"), float("inf"), "0.5", True])
def test_a_min_similarity_outside_minus_one_to_one_is_a_usage_error(low: Memory, value: object) -> None:
    with pytest.raises(UsageError, match="from -1 to 1"):
        low.recall("videos", rank="semantic", min_similarity=value)  # type: ignore[arg-type]


def test_min_similarity_with_a_substring_ranking_is_a_usage_error(low: Memory) -> None:
    with pytest.raises(UsageError, match="recall by meaning"):
        low.recall("videos", rank="salience", min_similarity=0.1)


def test_the_mcp_tool_takes_min_similarity(low: Memory) -> None:
    tools = MemoryTools(ServedMemory(low, read_only=True, origin="x"))
    hits = tools.recall("where are the videos", rank="semantic", min_similarity=0.0)
    assert [(h["key"], round(h["similarity"], 3)) for h in hits] == [("reel", 0.03)]


# The README's own example ("Recall by meaning"), typed at the CLI with the real model (the `semantic` extra).

@pytest.fixture
def readme_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("BUNDLEKIT_MEMORY_DIR", "BUNDLEKIT_EMBEDDER", "BUNDLEKIT_EMBED_URL", "BUNDLEKIT_EMBED_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return memory_tree(tmp_path / "memory")


def recall(tree: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["memory", "-d", str(tree), "recall", "where are the videos", *args])


@pytest.mark.parametrize("rank", ["semantic", "hybrid"])
def test_the_readme_example_returns_the_nearest_memory_with_its_similarity(readme_tree: Path, rank: str) -> None:
    assert "match clips is stored in a shared Drive folder" in MEMORIES["reel"][2]
    result = recall(readme_tree, "--rank", rank, "--json", "--limit", "10")
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)
    assert hits[0]["key"] == "reel" and len(hits) == len(MEMORIES)
    assert all(isinstance(hit["similarity"], float) for hit in hits)
    assert hits[0]["similarity"] == max(hit["similarity"] for hit in hits)


def test_the_text_listing_shows_each_hit_s_similarity(readme_tree: Path) -> None:
    result = recall(readme_tree, "--rank", "semantic")
    first = result.stdout.splitlines()[0].split("\t")
    assert first[1] == "reel" and first[-1].startswith("similarity 0.")


def test_a_min_similarity_no_memory_reaches_answers_no_hits_and_says_so(readme_tree: Path) -> None:
    result = recall(readme_tree, "--rank", "semantic", "--min-similarity", "0.99", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout) == []
    assert "no memory matches" in result.stderr


@pytest.mark.parametrize("value", ["2", "nan", "-1.5"])
def test_a_min_similarity_out_of_range_exits_2_naming_the_option(readme_tree: Path, value: str) -> None:
    result = recall(readme_tree, "--rank", "semantic", "--min-similarity", value)
    assert result.exit_code == 2 and "--min-similarity" in result.stderr and "Traceback" not in result.output


def test_min_similarity_with_rank_salience_exits_2(readme_tree: Path) -> None:
    result = recall(readme_tree, "--rank", "salience", "--min-similarity", "0.1")
    assert result.exit_code == 2 and "recall by meaning" in result.stderr
