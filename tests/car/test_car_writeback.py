"""CarFileWriter's background writeback (early fdatasync) never changes the bytes or breaks abort."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

import bundlekit.car.writer as car
from bundlekit.car.reader import read_car
from bundlekit.car.writer import CarFileWriter, CarWriter
from bundlekit.errors import CARFileError
from bundlekit.ipld.cid import RAW, make_cid


def _blocks(n: int) -> list[tuple[bytes, bytes]]:
    out = []
    for i in range(n):
        data = (f"block {i} ".encode() * 50)[: 300 + i]
        out.append((make_cid(1, RAW, data), data))
    return out


def _write(path: Path, blocks: list[tuple[bytes, bytes]], root: bytes, *, durable: bool = True) -> None:
    with CarFileWriter(path, durable=durable) as writer:
        for cid, data in blocks:
            writer.put(cid, data)
        writer.finish(root)


def test_a_car_written_across_many_writebacks_equals_the_streamed_car(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(car, "_WRITEBACK_EVERY", 1000)
    blocks = _blocks(200)
    root = blocks[-1][0]
    _write(tmp_path / "out.car", blocks, root)
    expected = io.BytesIO()
    streamed = CarWriter(expected, [root])
    for cid, data in blocks:
        streamed.put(cid, data)
    assert (tmp_path / "out.car").read_bytes() == expected.getvalue()
    roots, it = read_car(io.BytesIO(expected.getvalue()))
    assert roots == [root] and len(list(it)) == 200


def test_abort_after_writebacks_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(car, "_WRITEBACK_EVERY", 1000)
    writer = CarFileWriter(tmp_path / "out.car")
    for cid, data in _blocks(50):
        writer.put(cid, data)
    writer.abort()
    assert list(tmp_path.iterdir()) == []


def test_writeback_works_where_the_os_has_no_fdatasync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # macOS and Windows have no os.fdatasync: the background sync falls back to fsync.
    monkeypatch.delattr(car.os, "fdatasync", raising=False)
    synced: list[int] = []
    monkeypatch.setattr(car.os, "fsync", lambda fd: synced.append(fd))
    monkeypatch.setattr(car, "_WRITEBACK_EVERY", 1000)
    blocks = _blocks(20)
    with CarFileWriter(tmp_path / "out.car") as writer:
        for cid, data in blocks:
            writer.put(cid, data)
        writer.finish(blocks[-1][0])
    roots, it = read_car(io.BytesIO((tmp_path / "out.car").read_bytes()))
    assert roots == [blocks[-1][0]] and len(list(it)) == 20
    assert len(synced) >= 2  # at least one background sync and the final one


def test_a_temp_file_that_cannot_be_prepared_is_a_car_error_and_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(fd: int, mode: str) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(car.os, "fdopen", refuse)
    with pytest.raises(CARFileError, match="cannot write .*out.car: Operation not permitted"):
        CarFileWriter(tmp_path / "out.car")
    assert list(tmp_path.iterdir()) == []


def test_a_scratch_car_is_the_same_bytes_and_never_synced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = _blocks(30)
    root = blocks[-1][0]
    _write(tmp_path / "durable.car", blocks, root)
    synced: list[int] = []
    for name in ("fsync", "fdatasync"):
        monkeypatch.setattr(f"os.{name}", lambda fd: synced.append(fd))
    _write(tmp_path / "scratch.car", blocks, root, durable=False)
    assert synced == []
    assert (tmp_path / "scratch.car").read_bytes() == (tmp_path / "durable.car").read_bytes()
