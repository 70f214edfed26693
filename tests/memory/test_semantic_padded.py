"""A question padded to megabytes (issue 35, item 10: hybrid recall of one peaked at 425 MB): recall by
meaning reads its words up to what an embedder takes (``ranking.meaning_query``), so the memory it uses
does not grow with the padding, and padding does not change the answer."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from bundlekit.memory import Memory
from bundlekit.memory.ranking import MEANING_QUERY_CHARS, meaning_query
from tests.embed.trees import write_memories

QUESTION = "where are the videos"
MB = 1_000_000
#: Each padded question, made when its test runs: built at import they were 64 MB held by every test process for the
#: whole run (collection imports every module), a quarter of a worker's peak.
PADDINGS: dict[str, Callable[[], str]] = {
    "spaces": lambda: QUESTION + " " * (16 * MB),
    "newlines and tabs": lambda: QUESTION + "\n\t" * (8 * MB),
    "one long word": lambda: QUESTION + " " + "v" * (16 * MB),
    "repeated words": lambda: QUESTION + " videos" * (16 * MB // 7),
}


@pytest.fixture(scope="module")
def mem(tmp_path_factory: pytest.TempPathFactory) -> Memory:
    tree: Path = tmp_path_factory.mktemp("padded") / "memory"
    memory = write_memories(Memory(tree))
    memory.recall("warm up: embed the tree, load the model", rank="hybrid")
    return memory


def _peak(mem: Memory, query: str, rank: str) -> tuple[int, list[str]]:
    tracemalloc.start()
    try:
        keys = [hit.key for hit in mem.recall(query, rank=rank)]
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, keys


@pytest.mark.parametrize("padding", list(PADDINGS))
@pytest.mark.parametrize("rank", ["hybrid", "semantic"])
def test_a_padded_question_costs_memory_for_what_is_used_not_for_the_padding(
    mem: Memory, padding: str, rank: str
) -> None:
    # Each question is 16 MB; folding it whole took two copies (32 MB and more) before the fix. What is
    # used is at most 32,768 characters of words: the bound is 8 MB, a quarter of one copy.
    peak, _keys = _peak(mem, PADDINGS[padding](), rank)
    assert peak < 8 * MB


@pytest.mark.parametrize("padding", ["spaces", "newlines and tabs"])
def test_whitespace_padding_does_not_change_the_answer(mem: Memory, padding: str) -> None:
    assert _peak(mem, PADDINGS[padding](), "hybrid")[1][0] == _peak(mem, QUESTION, "hybrid")[1][0] == "reel"


def test_the_meaning_query_is_the_words_joined_by_single_spaces_up_to_the_bound() -> None:
    assert meaning_query("  where\tare \n the   videos  ") == "where are the videos"
    assert len(meaning_query("word " * MB)) <= MEANING_QUERY_CHARS
    assert meaning_query("x" * (2 * MEANING_QUERY_CHARS)) == "x" * MEANING_QUERY_CHARS
