"""Attacks on how a pack index is read since issue 37 (``blockstore._index_of``: one read sized by ``fstat``,
then on to the bound; the rules checked in C, ``bundlekit/_packscan.c``, or the interpreter's loops): an index
whose size moved between the ``fstat`` and the read (grown, cut), a sparse one far past the 64 MiB bound, one
read from a store already open and then replaced. Each runs with the compiled check and without it: the same
verdict, a refused index finds none of its blocks, ``store verify`` names it and ``store gc`` clears it, and a
block served is always the block its CID names."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bundlekit import blockstore
from bundlekit.blockstore import BlockStore
from bundlekit.errors import BlockMismatch, MissingBlock
from bundlekit.ipld.cid import RAW, make_cid


@pytest.fixture(params=["compiled", "interpreted"])
def check(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "compiled" and getattr(blockstore, "_packscan") is None:
        pytest.skip("bundlekit._packscan is not built")
    if request.param == "interpreted":
        monkeypatch.setattr(blockstore, "_packscan", None)
    yield request.param


def _blocks(first: int, count: int) -> list[tuple[bytes, bytes]]:
    return [(make_cid(1, RAW, b"block %d" % n), b"block %d" % n) for n in range(first, first + count)]


def _packed(store: BlockStore, blocks: list[tuple[bytes, bytes]]) -> Path:
    writer = store.pack(blocks[0][0])
    for cid, data in blocks:
        writer.put(cid, data)
    writer.commit()
    return max((store.root / "packs").glob("*.idx"), key=lambda p: p.stat().st_mtime_ns)


def _sized(monkeypatch: pytest.MonkeyPatch, index: Path, size: int) -> None:
    """``fstat`` of ``index`` reports ``size`` bytes (the file grew or was cut between the ``fstat`` and the read)."""
    real, ino = os.fstat, index.stat().st_ino

    def fstat(fd: int) -> os.stat_result:
        info = real(fd)
        if info.st_ino != ino:
            return info
        fields = list(info)
        fields[6] = size  # st_size
        return os.stat_result(fields)

    monkeypatch.setattr(os, "fstat", fstat)


@pytest.mark.parametrize("reported", [0, 1, 23, 100, 10**12])
def test_an_index_whose_size_moved_between_fstat_and_the_read_is_read_whole_to_its_end(
        store: BlockStore, check: str, monkeypatch: pytest.MonkeyPatch, reported: int) -> None:
    blocks = _blocks(0, 40)
    index = _packed(store, blocks)
    _sized(monkeypatch, index, reported)
    fresh = BlockStore(store.root, fsync=False)
    assert [fresh.get(cid) for cid, _data in blocks] == [data for _cid, data in blocks]
    assert fresh.verify().ok


def test_a_sparse_index_far_past_the_bound_is_refused_after_reading_at_most_the_bound(
        store: BlockStore, check: str, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = _blocks(0, 3)
    index = _packed(store, blocks)
    with open(index, "r+b") as fh:
        fh.truncate(1 << 30)  # 1 GiB of entries of zeros after the real ones: no disk, one read of it bounded
    asked: list[int] = []
    real = os.read

    def read(fd: int, size: int) -> bytes:
        asked.append(size)
        return real(fd, size)

    monkeypatch.setattr(os, "read", read)
    fresh = BlockStore(store.root, fsync=False)
    assert not any(fresh.has(cid) for cid, _data in blocks)
    with pytest.raises(MissingBlock):
        fresh.get(blocks[0][0])
    assert sum(asked) <= blockstore._INDEX_MAX + 1
    monkeypatch.setattr(os, "read", real)
    report = fresh.verify()
    assert [bad.index.name for bad in report.bad_packs] == [index.name]
    fresh.gc()
    assert not index.exists() and BlockStore(store.root, fsync=False).verify().ok


def test_an_index_replaced_by_another_packs_after_it_was_read_never_serves_a_wrong_block(
        store: BlockStore, check: str) -> None:
    """A store already open read the index of pack A; A's pack is then replaced by pack B's bytes under A's name
    (its index checked against a pack of another size and other blocks): what is served hashes to its CID."""
    ours, theirs = _blocks(0, 6), _blocks(100, 6)
    index_a = _packed(store, ours)
    reader = BlockStore(store.root, fsync=False)
    assert reader.get(ours[0][0]) == ours[0][1]  # A's index read and held
    index_b = _packed(store, theirs)
    pack_a, pack_b = (p.with_suffix(".pack") for p in (index_a, index_b))
    os.replace(pack_b, pack_a)
    os.replace(index_b, index_a.with_name("zz-other.idx"))
    for cid, data in ours[1:]:
        try:
            assert reader.get(cid) == data
        except (BlockMismatch, MissingBlock):
            pass
    for cid, _data in theirs:
        with pytest.raises(MissingBlock):
            reader.get(cid)
