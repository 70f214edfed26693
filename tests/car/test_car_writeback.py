"""CarFileWriter's background writeback (early fdatasync) never changes the bytes or breaks abort."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import bundlekit.car.writer as car
from bundlekit.bundle.merge import build_tree
from bundlekit.car.reader import read_car
from bundlekit.car.writer import CarFileWriter, CarWriter
from bundlekit.cli import cli
from bundlekit.errors import CARFileError
from bundlekit.ipld.cid import RAW, make_cid
from bundlekit.memory import Memory


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


def _synced_cars(monkeypatch: pytest.MonkeyPatch, directory: Path) -> list[str]:
    """The names of the CAR temps in ``directory`` synced to the disk from now on (fsync or fdatasync)."""
    synced: list[str] = []
    for name in ("fsync", "fdatasync"):
        real = getattr(os, name)

        def record(fd: int, real: Any = real) -> None:
            path = Path(os.readlink(f"/proc/self/fd/{fd}"))
            if path.parent == directory.resolve() and ".car" in path.name:
                synced.append(path.name)
            real(fd)

        monkeypatch.setattr(f"os.{name}", record)
    return synced


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to name a synced descriptor")
def test_the_car_a_user_asks_for_is_synced_and_only_a_sync_rounds_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # attack39w: BuildOptions.scratch_car (no fsync) is sync's alone; `bundlekit build -o` gets a durable CAR
    mem = Memory(tmp_path / "memory", namespace="agent")
    mem.init()
    mem.write("note", name="Note", description="about", type="project", body="body")
    out = tmp_path / "out"
    out.mkdir()
    synced = _synced_cars(monkeypatch, out)
    result = CliRunner().invoke(cli, ["build", str(tmp_path / "memory"), "-o", str(out / "user.car")],
                                env={"BUNDLEKIT_HOME": str(tmp_path / "home")}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert synced, "the user's CAR was never synced to the disk"
    synced.clear()
    build_tree(tmp_path / "memory", out / "round.car", parents=[])
    assert synced == [] and (out / "round.car").is_file()
