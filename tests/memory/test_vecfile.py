"""The vector file (``memory/vecfile``): what recall by meaning ranks with, packed beside the derived index, read
back exactly, and when it is not a file of the index's state (cut short, damaged, of another version, swapped
for another tree's) read from the index and written again, never trusted and never a crash."""

from __future__ import annotations

import math
import os
import sqlite3
import shutil
import struct
from pathlib import Path

import pytest

from bundlekit.memory import Memory, vecfile
from bundlekit.memory.bymeaning import VectorCache
from bundlekit.memory.catalog import Catalog
from bundlekit.memory.naming import HIDDEN_DIR
from tests.embed.counting import CountingEmbedder
from tests.embed.trees import MEMORIES, write_memories

from .conftest import Clock

QUERY = "who ships the release videos"


@pytest.fixture
def smem(tree: Path, clock: Clock) -> Memory:
    mem = write_memories(Memory(tree, clock=clock, embedder=CountingEmbedder()))
    mem.recall(QUERY, rank="hybrid")
    return mem


def _file(tree: Path) -> Path:
    return tree / HIDDEN_DIR / vecfile.VECTOR_FILE


def _ranked(tree: Path, clock: Clock, embedder: CountingEmbedder | None = None) -> list[tuple[str, float]]:
    mem = Memory(tree, clock=clock, embedder=embedder or CountingEmbedder())
    try:
        return [(h.key, h.score) for h in mem.recall(QUERY, limit=10, rank="hybrid")]
    finally:
        mem.close()


def _from_index(tree: Path) -> tuple[vecfile.Stamp, vecfile.Columns]:
    catalog = Catalog(tree / HIDDEN_DIR / "index.sqlite")
    try:
        with catalog.reading():
            cache = VectorCache()
            _file(tree).unlink(missing_ok=True)
            return catalog.vectors.stamp(), cache.load(catalog, 256)
    finally:
        catalog.close()


def test_the_first_recall_by_meaning_writes_the_file_and_it_reads_back_as_the_index_holds_it(smem: Memory, tree: Path) -> None:
    stamp, columns = _from_index(tree)
    read = vecfile.read(_file(tree), stamp, 256, len(MEMORIES))
    assert read is not None and read.complete
    assert (read.keys, read.ids, read.salience, read.updated, read.horizon, read.pieces) == (
        columns.keys, columns.ids, columns.salience, columns.updated, columns.horizon, columns.pieces)
    assert bytes(read.vectors) == bytes(columns.vectors) and bytes(read.heads) == bytes(columns.heads)
    assert len(read.keys) == len(MEMORIES) and any(bytes(read.vectors))


def test_a_file_of_another_state_model_or_dimension_or_of_more_rows_than_the_index_s_last_id_is_not_read(smem: Memory, tree: Path) -> None:
    stamp, _columns = _from_index(tree)
    gen, vec_gen, model, written = stamp
    for other in ((gen + 1, vec_gen, model, written), (gen, vec_gen + 1, model, written),
                  (gen, vec_gen, "other#256", written), (gen, vec_gen, model, written + 1)):
        assert vecfile.read(_file(tree), other, 256, len(MEMORIES)) is None
    assert vecfile.read(_file(tree), stamp, 128, len(MEMORIES)) is None
    assert vecfile.read(_file(tree), stamp, 256, len(MEMORIES) - 1) is None
    assert vecfile.read(_file(tree), stamp, 256, len(MEMORIES) + 1) is not None


def _cut(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 100])


def _grown(path: Path) -> None:
    with path.open("ab") as file:
        file.write(b"\0" * 8)


def _version(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[8:12] = struct.pack("<I", vecfile.FORMAT + 1)
    path.write_bytes(bytes(data))


def _keys(path: Path) -> None:  # the keys' bytes made invalid UTF-8 (the header still agrees)
    data = bytearray(path.read_bytes())
    model_len = struct.unpack_from("<I", data, 48)[0]
    data[56 + model_len] = 0xFF
    path.write_bytes(bytes(data))


def _header_only(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:20])


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _link(path: Path) -> None:
    target = path.with_name("elsewhere.bin")
    path.rename(target)
    path.symlink_to(target)


@pytest.mark.parametrize("damage", [_cut, _grown, _version, _keys, _header_only, _fifo, _link],
                         ids=["cut short", "grown", "another version", "keys not UTF-8", "header only", "a FIFO", "a symlink"])
def test_a_damaged_file_is_read_from_the_index_instead_and_written_again(
    smem: Memory, tree: Path, clock: Clock, damage: object,
) -> None:
    expected = _ranked(tree, clock)
    damage(_file(tree))  # type: ignore[operator]
    embedder = CountingEmbedder()
    assert _ranked(tree, clock, embedder) == expected
    assert embedder.texts == 1  # the query only: the index's vectors were not computed again
    stamp, _columns = _from_index(tree)
    _ranked(tree, clock)
    assert vecfile.read(_file(tree), stamp, 256, len(MEMORIES)) is not None  # written again, a regular file


def test_another_tree_s_file_put_in_its_place_is_not_read(smem: Memory, tree: Path, tmp_path: Path, clock: Clock) -> None:
    other = tmp_path / "other"
    mem = Memory(other, clock=clock, embedder=CountingEmbedder())
    mem.init()
    mem.write("lone", name="Lone", description="a single memory", type="project", body="Nothing about videos.")
    mem.recall(QUERY, rank="hybrid")
    mem.close()
    expected = _ranked(tree, clock)
    shutil.copyfile(_file(other), _file(tree))
    assert _ranked(tree, clock) == expected


def test_vectors_planted_in_the_file_cannot_break_recall(smem: Memory, tree: Path, clock: Clock) -> None:
    path = _file(tree)
    data = bytearray(path.read_bytes())
    vectors_at = len(data) - 2 * 2 * 256 * len(MEMORIES)
    data[vectors_at : vectors_at + 512] = b"\xff" * 512  # NaN: the row counts as a zero vector
    data[vectors_at + 512 : vectors_at + 1024] = struct.pack("<256e", *([60000.0] * 256))  # far from unit length
    path.write_bytes(bytes(data))
    hits = Memory(tree, clock=clock, embedder=CountingEmbedder()).recall(QUERY, limit=len(MEMORIES), rank="hybrid")
    assert len(hits) == len(MEMORIES) and all(0.0 <= h.score <= 1.1 and -1.0 <= (h.similarity or 0.0) <= 1.0 for h in hits)


def test_an_edit_recomputes_one_memory_s_vectors_and_the_file_follows(smem: Memory, tree: Path, clock: Clock) -> None:
    before = _file(tree).stat()
    smem.write("drinks", name="Drinks", description="what the user likes", type="project", body="Release videos, daily.")
    embedder = CountingEmbedder()
    hits = Memory(tree, clock=clock, embedder=embedder).recall(QUERY, limit=10, rank="hybrid")
    assert sum(len(batch) for batch in embedder.batches) == 3  # the edited memory's text and head, then the query
    assert (_file(tree).stat().st_ino, _file(tree).stat().st_mtime_ns) != (before.st_ino, before.st_mtime_ns)
    stamp, columns = _from_index(tree)
    _ranked(tree, clock)
    read = vecfile.read(_file(tree), stamp, 256, len(MEMORIES) + 1)  # the edited memory's row is a new one: id 5
    assert read is not None and bytes(read.vectors) == bytes(columns.vectors) and "drinks" in [h.key for h in hits]


def test_a_tree_whose_index_cannot_be_written_to_ranks_without_the_file(smem: Memory, tree: Path, clock: Clock) -> None:
    expected = _ranked(tree, clock)
    _file(tree).unlink()
    (tree / HIDDEN_DIR).chmod(0o555)
    try:
        if os.access(tree / HIDDEN_DIR, os.W_OK):
            pytest.skip("this user writes through permissions (root)")
        assert _ranked(tree, clock) == expected and not _file(tree).exists()
    finally:
        (tree / HIDDEN_DIR).chmod(0o755)


def test_a_fresh_ranking_streams_the_vectors_and_a_second_one_holds_them(smem: Memory, tree: Path, clock: Clock) -> None:
    mem = Memory(tree, clock=clock, embedder=CountingEmbedder())
    first = [(h.key, h.score) for h in mem.recall(QUERY, limit=10, rank="hybrid")]
    cache = mem.meaning._vectors
    assert cache is not None and cache.columns is not None and cache.columns.stored is not None  # left in the file
    assert [(h.key, h.score) for h in mem.recall(QUERY, limit=10, rank="hybrid")] == first
    assert cache.columns.stored is None and len(bytes(cache.columns.vectors)) == 512 * len(MEMORIES)  # held now
    mem.close()


@pytest.mark.parametrize("change", ["replaced", "cut short", "removed"])
def test_a_file_changed_between_its_columns_and_its_vectors_is_read_from_the_index(
    smem: Memory, tree: Path, clock: Clock, change: str,
) -> None:
    expected = _ranked(tree, clock)
    mem = Memory(tree, clock=clock, embedder=CountingEmbedder())
    mem.meaning.embed_tree()  # the columns read, the vectors left in the file
    path = _file(tree)
    data = path.read_bytes()
    path.unlink()
    if change == "replaced":
        path.write_bytes(data)  # the same bytes, another inode: another process wrote this state's file too
    elif change == "cut short":
        path.write_bytes(data[: len(data) // 2])
    assert [(h.key, h.score) for h in mem.recall(QUERY, limit=10, rank="hybrid")] == expected
    mem.close()


def _plant(path: Path, column: int, value: float | int) -> None:
    """Every row's value of the column ``column`` (0 ids, 1 salience, 2 updated, 3 horizon, 4 pieces) set to
    ``value``; the header, size and keys still agree (a file edited by hand, or another program's)."""
    data = bytearray(path.read_bytes())
    fields = vecfile._HEADER.unpack_from(data)
    count, model_len, keys_len = fields[3], fields[8], fields[9]
    at = vecfile._HEADER.size + model_len + keys_len + (-keys_len % 8) + column * 8 * count
    for row in range(count):
        struct.pack_into("<q" if column in (0, 4) else "<d", data, at + 8 * row, value)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(("column", "value"), [(1, math.nan), (1, math.inf), (1, -math.inf), (2, math.nan), (2, math.inf)],
                         ids=["salience NaN", "salience infinite", "salience -infinite", "updated NaN", "updated infinite"])
def test_a_file_whose_salience_or_time_is_not_finite_is_read_from_the_index(
    smem: Memory, tree: Path, clock: Clock, column: int, value: float,
) -> None:
    # A NaN or infinite salience or time scored NaN or infinity: out of order, and "score": NaN in --json.
    expected = _ranked(tree, clock)
    _plant(_file(tree), column, value)
    ranked = _ranked(tree, clock)
    assert ranked == expected and all(math.isfinite(score) for _key, score in ranked)
    stamp, _columns = _from_index(tree)
    _ranked(tree, clock)
    assert vecfile.read(_file(tree), stamp, 256, len(MEMORIES)) is not None  # written again from the index


def test_an_index_row_edited_by_hand_to_a_salience_that_is_not_finite_is_rebuilt_from_the_files(
    smem: Memory, tree: Path, clock: Clock,
) -> None:
    expected = _ranked(tree, clock)
    _file(tree).unlink()
    with sqlite3.connect(tree / HIDDEN_DIR / "index.sqlite") as db:
        db.execute("UPDATE memory SET salience = 9e999")  # infinity
    db.close()
    mem = Memory(tree, clock=clock, embedder=CountingEmbedder())
    assert [(h.key, h.score) for h in mem.recall(QUERY, limit=10, rank="hybrid")] == expected
    mem.close()


@pytest.mark.parametrize("at", ["complete", "padding"])
def test_a_header_flag_or_padding_byte_that_is_not_the_format_s_is_not_read(smem: Memory, tree: Path, at: str) -> None:
    path = _file(tree)
    stamp, _columns = _from_index(tree)
    _ranked(tree, Clock())
    data = bytearray(path.read_bytes())
    fields = vecfile._HEADER.unpack_from(data)
    if at == "complete":
        struct.pack_into("<I", data, 20, 2)
    else:
        keys_end = vecfile._HEADER.size + fields[8] + fields[9]
        assert -fields[9] % 8, "the keys of this tree end on a multiple of 8 bytes"
        data[keys_end] = ord("x")
    path.write_bytes(bytes(data))
    assert vecfile.read(path, stamp, 256, len(MEMORIES)) is None


def test_a_directory_in_the_file_s_place_is_ranked_past_and_left_alone(smem: Memory, tree: Path, clock: Clock) -> None:
    # A file object refuses a directory's descriptor (IsADirectoryError): recall ended "internal error", exit 1.
    expected = _ranked(tree, clock)
    _file(tree).unlink()
    _file(tree).mkdir()
    assert _ranked(tree, clock) == expected == _ranked(tree, clock)
    assert _file(tree).is_dir()


def _rewrite_keys(tree: Path, keys: list[str]) -> None:
    """The vector file written again with ``keys`` in place of its own (every number the same: a file of this
    index's state, as a hand or another program may make it)."""
    stamp, _columns = _from_index(tree)
    _ranked(tree, Clock())
    columns = vecfile.read(_file(tree), stamp, 256, len(MEMORIES))
    assert columns is not None
    columns.keys = keys
    vecfile.write(_file(tree), stamp, 256, columns)
    assert vecfile.read(_file(tree), stamp, 256, len(MEMORIES)) is not None


@pytest.mark.parametrize("keys", [
    ["deploy"] * len(MEMORIES), ["reel", "drinks", "deploy", "tea"], ["drinks", "reel", "deploy", "team"],
], ids=["one key repeated", "a key renamed", "two rows swapped"])
def test_a_file_whose_keys_are_not_the_index_s_loses_no_memory_and_shows_none_twice(
    smem: Memory, tree: Path, clock: Clock, keys: list[str],
) -> None:
    # Its keys were trusted: one repeated left the others out of recall and put it in the context block again
    # and again; one renamed left that memory out of both (context's rest thought every memory ranked).
    expected = _ranked(tree, clock)
    _rewrite_keys(tree, keys)
    assert _ranked(tree, clock) == expected
    mem = Memory(tree, clock=clock, embedder=CountingEmbedder())
    block = mem.context_block(query=QUERY, max_tokens=4000, rank="hybrid")
    mem.close()
    assert all(block.count(f"(`{key}.md`)") == 1 for key in MEMORIES)
