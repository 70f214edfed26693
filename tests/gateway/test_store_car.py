"""BlockStore CAR import and export, and crash-safety of block writes."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from bundlekit._fs import is_temp_name
from bundlekit.blockstore import BlockStore
from bundlekit.car.reader import read_car
from bundlekit.car.writer import CarWriter
from bundlekit.errors import BlockMismatch, CARError, MissingBlock
from bundlekit.ipld.cid import RAW, make_cid


def _temp_files(directory: Path) -> list[Path]:
    """Temp files the shared write helper left under ``directory`` (a crash's leftovers)."""
    return [p for p in directory.rglob(".*") if is_temp_name(p.name)]


def car_bytes(roots: list[bytes], blocks: list[tuple[bytes, bytes]]) -> bytes:
    out = io.BytesIO()
    writer = CarWriter(out, roots)
    for cid, data in blocks:
        writer.put(cid, data)
    writer.close()
    return out.getvalue()


def test_import_car_stores_every_block_and_returns_the_roots(store: BlockStore, sample_dag) -> None:  # type: ignore[no-untyped-def]
    roots = store.import_car(io.BytesIO(car_bytes([sample_dag.root], list(sample_dag.blocks.items()))))
    assert roots == [sample_dag.root]
    assert all(store.get(cid) == data for cid, data in sample_dag.blocks.items())


def test_import_car_with_pin_pins_the_roots(store: BlockStore, sample_dag) -> None:  # type: ignore[no-untyped-def]
    store.import_car(
        io.BytesIO(car_bytes([sample_dag.root], list(sample_dag.blocks.items()))), pin=True, name="b"
    )
    assert store.pins()[sample_dag.root]["name"] == "b"


def test_import_car_refuses_an_incomplete_dag(store: BlockStore, sample_dag) -> None:  # type: ignore[no-untyped-def]
    leaf = sample_dag.entries["memory/a.md"][0]
    blocks = [(cid, data) for cid, data in sample_dag.blocks.items() if cid != leaf]
    with pytest.raises(MissingBlock):
        store.import_car(io.BytesIO(car_bytes([sample_dag.root], blocks)), pin=True)
    assert store.pins() == {}


def test_import_car_accepts_an_incomplete_dag_when_allowed(store: BlockStore, sample_dag) -> None:  # type: ignore[no-untyped-def]
    leaf = sample_dag.entries["memory/a.md"][0]
    blocks = [(cid, data) for cid, data in sample_dag.blocks.items() if cid != leaf]
    assert store.import_car(io.BytesIO(car_bytes([sample_dag.root], blocks)), allow_incomplete=True) == [
        sample_dag.root
    ]
    assert store.has(sample_dag.root)


def test_import_car_refuses_a_tampered_block(store: BlockStore) -> None:
    cid = make_cid(1, RAW, b"honest")
    with pytest.raises(BlockMismatch):
        store.import_car(io.BytesIO(car_bytes([cid], [(cid, b"forged")])))
    assert not store.has(cid)


def test_import_car_refuses_a_truncated_car(store: BlockStore, sample_dag) -> None:  # type: ignore[no-untyped-def]
    data = car_bytes([sample_dag.root], list(sample_dag.blocks.items()))
    with pytest.raises(CARError):
        store.import_car(io.BytesIO(data[:-3]))


def test_export_then_import_round_trips_the_dag(filled_store: BlockStore, sample_dag, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = io.BytesIO()
    filled_store.export_car(sample_dag.root, out)
    other = BlockStore(tmp_path / "other", fsync=False)
    assert other.import_car(io.BytesIO(out.getvalue())) == [sample_dag.root]
    assert {cid: other.get(cid) for cid in sample_dag.blocks} == sample_dag.blocks


def test_export_writes_one_root_and_parents_before_children(filled_store: BlockStore, sample_dag) -> None:  # type: ignore[no-untyped-def]
    out = io.BytesIO()
    filled_store.export_car(sample_dag.root, out)
    roots, blocks = read_car(io.BytesIO(out.getvalue()))
    cids = [cid for cid, _ in blocks]
    assert roots == [sample_dag.root]
    assert cids[0] == sample_dag.root
    assert sorted(cids) == sorted(sample_dag.blocks)


def test_export_of_an_incomplete_dag_raises_missing_block(filled_store: BlockStore, sample_dag) -> None:  # type: ignore[no-untyped-def]
    leaf = next(c for c in sample_dag.blocks if c[1] == RAW)
    filled_store.path_for(leaf).unlink()
    with pytest.raises(MissingBlock):
        filled_store.export_car(sample_dag.root, io.BytesIO())


def test_a_put_interrupted_before_its_rename_leaves_no_block(
    store: BlockStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid = make_cid(1, RAW, b"data")

    def killed(src: str, dst: str) -> None:
        raise KeyboardInterrupt  # stands in for the process dying between write and rename

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        store.put(cid, b"data")
    monkeypatch.undo()
    assert not store.has(cid)
    assert _temp_files(store.blocks_dir) == []


def test_a_killed_writer_leaves_only_a_temp_file_that_gc_ignores_and_get_misses(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    root = tmp_path / "store"
    # The child writes its temp file, then is killed before the rename.
    script = f"""
import os, signal
from bundlekit.blockstore import BlockStore
from bundlekit.ipld.cid import make_cid, RAW

s = BlockStore({str(root)!r})
def die(*a): os.kill(os.getpid(), signal.SIGKILL)
os.replace = die
s.put(make_cid(1, RAW, b"payload"), b"payload")
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, check=False)
    assert proc.returncode == -signal.SIGKILL
    store = BlockStore(root)
    assert len(_temp_files(store.blocks_dir)) == 1
    assert list(store.iter_blocks()) == []
    with pytest.raises(MissingBlock):
        store.get(make_cid(1, RAW, b"payload"))


def test_import_in_several_batches_stores_everything_and_leaves_no_temp_files(
    store: BlockStore,
    sample_dag,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    import bundlekit.blockstore

    monkeypatch.setattr(bundlekit.blockstore, "IMPORT_BATCH", 3)
    durable = BlockStore(store.root, fsync=True)  # exercise the parallel fsync path too
    durable.import_car(io.BytesIO(car_bytes([sample_dag.root], list(sample_dag.blocks.items()))), pin=True)
    assert sorted(durable.iter_blocks()) == sorted(sample_dag.blocks)
    assert _temp_files(durable.blocks_dir) == []


def test_an_import_that_fails_midway_leaves_no_temp_files(store: BlockStore, sample_dag) -> None:  # type: ignore[no-untyped-def]
    good = list(sample_dag.blocks.items())
    bad_cid = make_cid(1, RAW, b"honest")
    with pytest.raises(BlockMismatch):
        store.import_car(io.BytesIO(car_bytes([sample_dag.root], good + [(bad_cid, b"forged")])))
    assert _temp_files(store.blocks_dir) == []
    assert not store.has(bad_cid)
