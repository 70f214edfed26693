"""Multi-pinner orchestration: concurrency, --require all|any, the CID equality check."""

from __future__ import annotations

import threading
from typing import BinaryIO

import pytest

from bundlekit.errors import PinUnavailable, UsageError
from bundlekit.ipld.cid import cid_to_str
from bundlekit.pinning.orchestrate import pin_all
from bundlekit.pinning.protocol import FAILED, PINNED, BasePinner, PinResult
from pinners.memory import MemoryPinner

from .conftest import Car


class Failing(BasePinner):
    name = "failing"

    def pin(self, car: BinaryIO, root: bytes, *, name: str | None = None, size: int | None = None) -> PinResult:
        raise PinUnavailable("failing: service down; retry later")

    def status(self, cid: bytes) -> PinResult:
        return PinResult(self.name, cid_to_str(cid), FAILED)

    def unpin(self, cid: bytes) -> None:
        pass


class Liar(Failing):
    """Reports a different CID than the root it was given."""

    name = "liar"

    def __init__(self, cid: str) -> None:
        self.cid = cid

    def pin(self, car: BinaryIO, root: bytes, *, name: str | None = None, size: int | None = None) -> PinResult:
        car.read()
        return PinResult(self.name, self.cid, PINNED)


class Recorder(Failing):
    """Records which thread and file handle it got."""

    name = "recorder"

    def __init__(self, barrier: threading.Barrier) -> None:
        self.barrier = barrier
        self.handle: int | None = None

    def pin(self, car: BinaryIO, root: bytes, *, name: str | None = None, size: int | None = None) -> PinResult:
        self.handle = id(car)
        self.barrier.wait(timeout=10)  # both pinners must be running at once
        car.read()
        return PinResult(self.name, cid_to_str(root), PINNED)


def test_require_all_fails_when_one_pinner_fails(car: Car) -> None:
    report = pin_all(car.path, car.root, [MemoryPinner(), Failing()], require="all")
    assert not report.ok
    assert [p.status for p in report.pins] == [PINNED, FAILED]
    assert "service down" in (report.pins[1].error or "")


def test_require_any_succeeds_when_one_pinner_fails(car: Car) -> None:
    report = pin_all(car.path, car.root, [MemoryPinner(), Failing()], require="any")
    assert report.ok


def test_require_any_fails_when_every_pinner_fails(car: Car) -> None:
    assert not pin_all(car.path, car.root, [Failing()], require="any").ok


def test_a_reported_cid_other_than_the_root_is_a_failed_mismatch(car: Car, other_car: Car) -> None:
    report = pin_all(car.path, car.root, [Liar(other_car.root_text)])
    assert report.pins[0].status == FAILED
    assert "local root is" in (report.pins[0].error or "")


def test_pinners_run_concurrently_each_on_its_own_handle(car: Car) -> None:
    barrier = threading.Barrier(2)
    a, b = Recorder(barrier), Recorder(barrier)
    report = pin_all(car.path, car.root, [a, b])
    assert report.ok
    assert a.handle != b.handle


def test_progress_counts_every_byte_each_pinner_reads(car: Car) -> None:
    seen: dict[str, int] = {}

    def progress(pinner: str, n: int) -> None:
        seen[pinner] = seen.get(pinner, 0) + n

    pin_all(car.path, car.root, [MemoryPinner()], progress=progress)
    assert seen == {"memory": car.size}


def test_json_shape_lists_every_pin(car: Car) -> None:
    data = pin_all(car.path, car.root, [MemoryPinner()]).to_json()
    assert data == {"root": car.root_text, "pins": [
        {"pinner": "memory", "cid": car.root_text, "status": PINNED, "url": f"memory://{car.root_text}", "error": None}
    ]}


def test_unknown_require_mode_is_a_usage_error(car: Car) -> None:
    with pytest.raises(UsageError):
        pin_all(car.path, car.root, [MemoryPinner()], require="most")


def test_cid_equality_accepts_v0_for_the_same_dag_pb_block_only() -> None:
    from bundlekit.ipld.cid import DAG_PB, RAW, cid_from_digest
    from bundlekit.pinning.orchestrate import same_cid

    digest = bytes(range(32))
    v1 = cid_from_digest(1, DAG_PB, digest)
    v0 = cid_from_digest(0, DAG_PB, digest)
    assert same_cid(cid_to_str(v0), v1) and same_cid(cid_to_str(v1), v0)
    assert not same_cid(cid_to_str(cid_from_digest(1, RAW, digest)), v1)
    assert not same_cid("not-a-cid", v1)
