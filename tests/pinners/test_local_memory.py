"""The local and memory pinners: real CIDs, verification, no duplicate pins."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.errors import BlockMismatch, PinRejected
from bundlekit.pinning.protocol import MISSING, PINNED
from pinners.local import LocalPinner
from pinners.memory import MemoryPinner

from .conftest import Car, build_car


def test_memory_pin_keeps_every_block_and_reports_the_root(car: Car) -> None:
    pinner = MemoryPinner()
    with car.open() as fh:
        result = pinner.pin(fh, car.root, name="r1")
    assert (result.cid, result.status) == (car.root_text, PINNED)
    assert car.root in pinner.blocks and len(pinner.blocks) == 3


def test_memory_pin_twice_leaves_one_pin(car: Car) -> None:
    pinner = MemoryPinner()
    for _ in range(2):
        with car.open() as fh:
            pinner.pin(fh, car.root)
    assert list(pinner.pins) == [car.root]


def test_memory_rejects_a_root_the_car_does_not_name(car: Car, other_car: Car) -> None:
    with car.open() as fh, pytest.raises(PinRejected, match="do not include"):
        MemoryPinner().pin(fh, other_car.root)


def test_memory_rejects_a_tampered_block(car: Car) -> None:
    data = bytearray(car.path.read_bytes())
    data[-1] ^= 0xFF
    car.path.write_bytes(bytes(data))
    with car.open() as fh, pytest.raises(BlockMismatch):
        MemoryPinner().pin(fh, car.root)


def test_memory_status_and_unpin(car: Car) -> None:
    pinner = MemoryPinner()
    with car.open() as fh:
        pinner.pin(fh, car.root)
    assert pinner.status(car.root).status == PINNED
    pinner.unpin(car.root)
    assert pinner.status(car.root).status == MISSING


def test_local_pin_imports_into_the_store_and_pins_with_the_name(car: Car, store_home: Path) -> None:
    pinner = LocalPinner.from_env({"BUNDLEKIT_HOME": str(store_home)})
    with car.open() as fh:
        result = pinner.pin(fh, car.root, name="release-1")
    assert result.url == f"ipfs://{car.root_text}"
    store = BlockStore(store_home)
    assert store.has(car.root)
    assert [meta["name"] for meta in store.pins().values()] == ["release-1"]


def test_local_pin_twice_creates_one_pin(car: Car, store_home: Path) -> None:
    pinner = LocalPinner.from_env({"BUNDLEKIT_HOME": str(store_home)})
    for _ in range(2):
        with car.open() as fh:
            pinner.pin(fh, car.root)
    assert len(BlockStore(store_home).pins()) == 1


def test_local_status_then_unpin(car: Car, store_home: Path) -> None:
    pinner = LocalPinner.from_env({"BUNDLEKIT_HOME": str(store_home)})
    with car.open() as fh:
        pinner.pin(fh, car.root)
    assert pinner.status(car.root).status == PINNED
    pinner.unpin(car.root)
    pinner.unpin(car.root)  # absent: no error
    assert pinner.status(car.root).status == MISSING


def test_local_rejects_a_car_for_another_root(tmp_path: Path, car: Car, store_home: Path) -> None:
    other = build_car(tmp_path / "x.car", [b"x"])
    with other.open() as fh, pytest.raises(PinRejected):
        LocalPinner.from_env({"BUNDLEKIT_HOME": str(store_home)}).pin(fh, car.root)


def test_local_leaves_no_pin_behind_for_a_car_of_another_root(tmp_path: Path, car: Car, store_home: Path) -> None:
    other = build_car(tmp_path / "y.car", [b"y"])
    with other.open() as fh, pytest.raises(PinRejected):
        LocalPinner.from_env({"BUNDLEKIT_HOME": str(store_home)}).pin(fh, car.root)
    assert BlockStore(store_home).pins() == {}
