"""Block sources: CAR files read on demand, and chains of sources."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.errors import BlockMismatch, MissingBlock
from bundlekit.gateway.server import ServedRoot, make_source, served_roots
from bundlekit.gateway.sources import CarFileSource, ChainSource, MemorySource
from bundlekit.ipld.cid import DAG_PB, RAW, cid_to_str, make_cid
from bundlekit.ipld.getter import HeldRoot


def test_car_file_source_serves_every_block_verified(sample_car: Path, sample_dag) -> None:  # type: ignore[no-untyped-def]
    source = CarFileSource(sample_car)
    try:
        assert [root.cid for root in source.roots()] == [sample_dag.root]
        assert all(source.get(cid) == data for cid, data in sample_dag.blocks.items())
    finally:
        source.close()


NODE = b"\x0a\x02\x08\x01"


def _one_block_car(path: Path, cid_version: int) -> Path:
    """A CAR holding the dag-pb node NODE under its CID of ``cid_version``."""
    from bundlekit.car.writer import CarWriter

    with path.open("wb") as fh:
        writer = CarWriter(fh, [make_cid(cid_version, DAG_PB, NODE)])
        writer.put(make_cid(cid_version, DAG_PB, NODE), NODE)
        writer.close()
    return path


def test_car_file_source_answers_cidv0_for_a_cidv1_block(tmp_path: Path) -> None:
    source = CarFileSource(_one_block_car(tmp_path / "one.car", 1))
    try:
        assert source.get(make_cid(0, DAG_PB, NODE)) == NODE
    finally:
        source.close()


def test_car_file_source_reports_a_block_changed_after_indexing(sample_car: Path, sample_dag) -> None:  # type: ignore[no-untyped-def]
    source = CarFileSource(sample_car)
    try:
        data = bytearray(sample_car.read_bytes())
        data[-1] ^= 0xFF  # the sample CAR ends with the root block
        sample_car.write_bytes(bytes(data))
        with pytest.raises(BlockMismatch):
            source.get(sample_dag.root)
    finally:
        source.close()


def test_car_file_source_misses_blocks_it_does_not_hold(sample_car: Path) -> None:
    source = CarFileSource(sample_car)
    try:
        assert not source.has(make_cid(1, RAW, b"other"))
        with pytest.raises(MissingBlock):
            source.get(make_cid(1, RAW, b"other"))
    finally:
        source.close()


def test_chain_source_falls_through_to_the_next_source(sample_car: Path, store: BlockStore) -> None:
    extra = make_cid(1, RAW, b"only in the store")
    store.put(extra, b"only in the store")
    car = CarFileSource(sample_car)
    try:
        chain = ChainSource([car, store])
        assert chain.get(extra) == b"only in the store"
        with pytest.raises(MissingBlock):
            chain.get(make_cid(1, RAW, b"nowhere"))
    finally:
        car.close()


def test_make_source_uses_the_store_only_when_no_car_is_given(sample_car: Path, tmp_path: Path) -> None:
    assert isinstance(make_source(tmp_path / "s"), BlockStore)
    only_car = make_source(None, [sample_car])
    assert isinstance(only_car, CarFileSource)
    only_car.close()


def test_car_file_source_reads_through_a_car_index(sample_car: Path, sample_dag) -> None:  # type: ignore[no-untyped-def]
    from bundlekit.car.index import CarIndex

    source = CarFileSource(sample_car)
    try:
        assert isinstance(source._index, CarIndex)
        assert source.blocks == len(source._index) == len(sample_dag.blocks)
    finally:
        source.close()


def test_car_file_source_answers_cidv1_for_a_cidv0_block(tmp_path: Path) -> None:
    source = CarFileSource(_one_block_car(tmp_path / "one.car", 0))
    try:
        assert source.has(make_cid(1, DAG_PB, NODE))
        assert source.get(make_cid(1, DAG_PB, NODE)) == NODE
    finally:
        source.close()


def test_car_file_source_says_no_to_a_malformed_cid(sample_car: Path) -> None:
    source = CarFileSource(sample_car)
    try:
        assert not source.has(b"\x01\x02not a cid")
        with pytest.raises(MissingBlock):
            source.get(b"\x01\x02not a cid")
    finally:
        source.close()


def test_each_served_source_names_the_roots_it_holds_and_a_chain_lists_theirs_in_order(
    sample_car: Path, sample_dag, tmp_path: Path  # type: ignore[no-untyped-def]
) -> None:
    # served_roots asks each source for its roots (ServedBlocks.roots) instead of telling their kinds apart.
    times = iter([datetime(2026, 1, 2, tzinfo=UTC), datetime(2026, 1, 1, tzinfo=UTC)])
    store = BlockStore(tmp_path / "store", fsync=False, clock=lambda: next(times))
    newer, older = make_cid(1, RAW, b"newer"), make_cid(1, RAW, b"older")
    store.put(newer, b"newer")
    store.put(older, b"older")
    store.pin(newer, "later")
    store.pin(older)
    held = MemorySource({}, [older], "fetched")
    car = CarFileSource(sample_car)
    try:
        assert car.roots() == [HeldRoot(sample_dag.root, str(sample_car))]
        assert held.roots() == [HeldRoot(older, "fetched")]
        assert store.roots() == [HeldRoot(older, "store"), HeldRoot(newer, "store", "later")]  # oldest pin first
        assert ChainSource([car, held, store]).roots() == car.roots() + held.roots() + store.roots()
        assert served_roots(ChainSource([car, store])) == [
            ServedRoot(cid_to_str(sample_dag.root), str(sample_car)),
            ServedRoot(cid_to_str(older), "store"),
            ServedRoot(cid_to_str(newer), "store", "later"),
        ]
    finally:
        car.close()


def test_get_many_of_every_served_source_returns_the_blocks_it_holds_and_leaves_out_the_rest(
    sample_car: Path, sample_dag, store: BlockStore  # type: ignore[no-untyped-def]
) -> None:
    # One getter protocol on both sides (ipld.getter.BlockGetter): a served source batches as a load's session does,
    # as boxo's BlockGetter.GetBlocks returns what it finds (github.com/ipfs/boxo blockservice/blockservice.go,
    # commit 61104bddadd5a655555b1159592bafdb56276120).
    absent = make_cid(1, RAW, b"nowhere")
    wanted = [*list(sample_dag.blocks)[:3], absent]
    expected = {cid: sample_dag.blocks[cid] for cid in wanted[:3]}
    for cid, data in sample_dag.blocks.items():
        store.put(cid, data)
    car = CarFileSource(sample_car)
    try:
        for source in (car, MemorySource(sample_dag.blocks, [sample_dag.root], "fetched"), store,
                       ChainSource([MemorySource({}, [], "empty"), car])):
            assert source.get_many(wanted, 8) == expected
    finally:
        car.close()
