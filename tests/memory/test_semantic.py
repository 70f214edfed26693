"""Recall by meaning: the index's vectors (computed once, refreshed on edit, rename and delete, never text)
and the semantic and hybrid rankings, with the real wordllama model (the `semantic` extra)."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

from bundlekit.errors import UsageError
from bundlekit.memory import Memory
from bundlekit.memory.bymeaning import MIN_SIMILARITY
from bundlekit.memory.ranking import FLOOR
from tests.embed.counting import CountingEmbedder
from tests.embed.trees import MEMORIES, write_memories

from .conftest import Clock



@pytest.fixture
def embedder() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture
def smem(tree: Path, clock: Clock, embedder: CountingEmbedder) -> Memory:
    return write_memories(Memory(tree, clock=clock, embedder=embedder))


def _vectors(tree: Path) -> dict[str, bytes]:
    with sqlite3.connect(tree / ".bundlekit" / "index.sqlite") as conn:
        return dict(conn.execute("SELECT m.key, v.vec FROM vector v JOIN memory m ON m.id = v.id"))


def test_semantic_recall_finds_by_meaning_what_substring_recall_misses(smem: Memory) -> None:
    assert smem.recall("where are the videos", rank="salience") == []
    hits = smem.recall("where are the videos", rank="semantic")
    assert hits[0].key == "reel" and hits[0].ranking == "semantic" and hits[0].similarity is not None


def test_hybrid_recall_ranks_by_meaning_and_words(smem: Memory) -> None:
    hits = smem.recall("what does the user drink", rank="hybrid")
    assert hits[0].key == "drinks" and hits[0].to_dict()["ranking"] == "hybrid"


def test_the_tree_is_embedded_once_and_not_again_while_no_file_changes(smem: Memory, embedder: CountingEmbedder) -> None:
    smem.recall("videos", rank="semantic")
    assert embedder.texts == 2 * len(MEMORIES) + 1  # every memory's text and head, then the query
    smem.recall("coffee", rank="hybrid")
    fresh = CountingEmbedder()
    Memory(smem.root, embedder=fresh).recall("coffee", rank="hybrid")  # another process: the index has them
    assert embedder.texts == 2 * len(MEMORIES) + 2 and fresh.texts == 1


def test_an_edited_memory_gets_a_new_vector(smem: Memory, tree: Path, embedder: CountingEmbedder) -> None:
    smem.recall("videos", rank="semantic")
    before = _vectors(tree)
    smem.write("drinks", name="Drinks", description="what the user likes", type="project",
               body="The user drinks espresso all day.")
    smem.recall("videos", rank="semantic")
    after = _vectors(tree)
    assert embedder.batches[-3:-1] == [["drinks\nwhat the user likes\nthe user drinks espresso all day."],
                                       ["drinks\nwhat the user likes"]]  # its text, then its name and description
    assert after["drinks"] != before["drinks"] and after["reel"] == before["reel"]


def test_an_edit_by_hand_gets_a_new_vector(smem: Memory, tree: Path) -> None:
    smem.recall("videos", rank="semantic")
    before = _vectors(tree)["team"]
    path = tree / "team.md"
    path.write_text(path.read_text().replace("Ana leads the backend", "Ana bakes bread on weekends"))
    smem.close()
    smem.recall("videos", rank="semantic")
    assert _vectors(tree)["team"] != before


def test_a_renamed_memory_has_its_vector_under_the_new_key_only(smem: Memory, tree: Path) -> None:
    smem.recall("videos", rank="semantic")
    (tree / "reel.md").rename(tree / "footage.md")
    smem.close()
    hits = smem.recall("where are the videos", rank="semantic")
    assert hits[0].key == "footage" and set(_vectors(tree)) == {"footage", "drinks", "deploy", "team"}


def test_a_deleted_memory_loses_its_vector(smem: Memory, tree: Path) -> None:
    smem.recall("videos", rank="semantic")
    smem.forget("reel")
    assert "reel" not in _vectors(tree)
    assert all(hit.key != "reel" for hit in smem.recall("where are the videos", rank="semantic"))


def test_vectors_of_another_model_are_computed_again(smem: Memory, tree: Path) -> None:
    smem.recall("videos", rank="semantic")
    other = CountingEmbedder(model_id="wordllama-other/l2_supercat_256")
    Memory(tree, embedder=other).recall("videos", rank="semantic")
    assert other.texts == 2 * len(MEMORIES) + 1


def test_the_index_keeps_vectors_not_text(smem: Memory, tree: Path) -> None:
    smem.recall("videos", rank="semantic")
    blobs = _vectors(tree)
    assert {len(b) for b in blobs.values()} == {256 * 2}  # float16
    assert all(b"Drive" not in blob and b"drive" not in blob for blob in blobs.values())


def test_hybrid_order_follows_the_documented_formula(smem: Memory) -> None:
    hits = smem.recall("shared folder for match clips", rank="semantic", limit=10)
    for hit in hits:
        semantic = max(hit.similarity - MIN_SIMILARITY, 0) / (1 - MIN_SIMILARITY)
        standing = hit.salience * hit.recency * hit.decay
        assert hit.relevance == pytest.approx(semantic, rel=1e-5)
        assert hit.score == pytest.approx(semantic * (FLOOR + (1 - FLOOR) * standing), rel=1e-5)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_memories_no_nearer_than_the_similarity_floor_come_last_nearest_first(smem: Memory) -> None:
    hits = smem.recall("zzzqqq xxkcd", rank="semantic", limit=10)
    assert len(hits) == len(MEMORIES)
    below = [hit for hit in hits if hit.similarity <= MIN_SIMILARITY]
    assert below and all(hit.score == 0 for hit in below) and hits[-len(below):] == below
    assert [h.similarity for h in below] == sorted((h.similarity for h in below), reverse=True)


def test_context_query_puts_the_memory_nearest_in_meaning_first(smem: Memory) -> None:
    block = smem.context_block(8192, query="how do I publish a new version", rank="hybrid")
    pieces = block.split("## Memory files", 1)[1]
    assert pieces.index("(`deploy.md`)") < min(pieces.index(f"(`{k}.md`)") for k in ("reel", "drinks", "team"))


def test_the_default_ranking_is_hybrid_with_the_extra(smem: Memory) -> None:
    assert smem.ranking_for(None) == "hybrid"


def test_without_the_extra_the_default_is_salience_and_semantic_is_a_usage_error_naming_it(
    tree: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "wordllama", None)  # importlib.util.find_spec answers None for it
    monkeypatch.delenv("BUNDLEKIT_EMBEDDER", raising=False)
    mem = write_memories(Memory(tree, clock=clock), ("reel",))
    assert mem.ranking_for(None) == "salience"
    assert [h.key for h in mem.recall("clips")] == ["reel"]
    with pytest.raises(UsageError, match="'semantic'"):
        mem.recall("clips", rank="semantic")


def _kettles(tree: Path, clock: Clock) -> Memory:
    """Five memories that all name the kettle; one of them names the zebra too."""
    mem = Memory(tree, clock=clock)
    for at in range(5):
        body = "the zebra mug beside the kettle" if at == 2 else f"kettle number {at} descaled monthly"
        mem.write(f"k{at}", name=f"Kettle {at}", description="kitchen kettles", type="project", body=body)
    return mem


def test_a_word_in_more_than_half_the_memories_never_reaches_the_bm25_match(tree: Path, clock: Clock) -> None:
    mem = _kettles(tree, clock)
    catalog = mem._index.refresh()
    with catalog.reading():
        found = catalog.search.lexical("kettle zebra")
        assert (found.searched, found.skipped, found.scored) == (("zebra",), ("kettle",), 1)
        assert catalog.search.lexical("kettles") == ({}, 0, (), ("kettles",))  # stemmed as the index stems it


def test_a_query_whose_every_word_is_in_every_memory_scores_no_row(tree: Path, clock: Clock) -> None:
    mem = _kettles(tree, clock)
    catalog = mem._index.refresh()
    with catalog.reading():
        assert catalog.search.lexical("Kettle kitchen kettles descaled?").scored == 0  # "descaled": 4 of 5
        assert catalog.search.lexical("kettle kitchen").scored == 0


def test_bm25_finds_a_word_in_another_form_and_weighs_the_name_over_the_body(tree: Path, clock: Clock) -> None:
    mem = Memory(tree, clock=clock)
    mem.write("a", name="Plumbing", description="who fixes leaks", type="reference", body="Call João.")
    mem.write("b", name="Garden", description="balcony plants", type="project", body="A leaking hose; plumbing later.")
    for at in range(3):
        mem.write(f"c{at}", name=f"Other {at}", description="unrelated", type="project", body="Nothing here.")
    assert [h.key for h in mem.recall("plumbing leaking", rank="relevance")][:2] == ["a", "b"]


def test_an_edit_of_one_memory_embeds_only_it_and_the_query(smem: Memory, embedder: CountingEmbedder) -> None:
    smem.recall("videos", rank="hybrid")
    before = sum(len(batch) for batch in embedder.batches)
    smem.write("drinks", name="Drinks", description="what the user likes", type="project", body="Espresso all day.")
    smem.recall("videos", rank="hybrid")
    assert sum(len(batch) for batch in embedder.batches) - before == 3  # one memory's text and head, one query


@pytest.mark.parametrize("rank", ["relevance", "semantic", "hybrid"])
def test_ranking_is_deterministic_for_a_fixed_tree_and_query(smem: Memory, tree: Path, rank: str) -> None:
    first = [(h.key, h.score) for h in smem.recall("who ships the release videos", limit=10, rank=rank)]
    smem.close()
    again = Memory(tree, clock=lambda: smem._tree.now())
    assert [(h.key, h.score) for h in again.recall("who ships the release videos", limit=10, rank=rank)] == first
