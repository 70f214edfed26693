"""Temps of dead writers are swept by pid and age (issue 12, item 8; ``_fs.sweep_stale_temps``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bundlekit._fs import DEAD_TEMP_AGE, atomic_directory, sweep_stale_temps
from bundlekit.blockstore import BlockStore
from bundlekit.car.writer import CarFileWriter
from bundlekit.errors import CARError
from bundlekit.ipld.cid import RAW, make_cid


@pytest.fixture(scope="module")
def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    return int(child.stdout)


def _temp(directory: Path, pid: int, *, age: float, is_dir: bool = False) -> Path:
    path = directory / f".out.car.{pid}.0123abcd.tmp"
    if is_dir:
        path.mkdir()
        (path / "partial").write_bytes(b"x")
    else:
        path.write_bytes(b"half a CAR")
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def test_a_dead_writers_old_temp_is_removed(tmp_path: Path, dead_pid: int) -> None:
    temp = _temp(tmp_path, dead_pid, age=DEAD_TEMP_AGE + 5)
    assert sweep_stale_temps(tmp_path) == 1
    assert not temp.exists()


def test_a_dead_writers_temp_directory_is_removed_whole(tmp_path: Path, dead_pid: int) -> None:
    temp = _temp(tmp_path, dead_pid, age=DEAD_TEMP_AGE + 5, is_dir=True)
    sweep_stale_temps(tmp_path)
    assert not temp.exists()


def test_a_live_writers_temp_is_kept_however_old(tmp_path: Path) -> None:
    temp = _temp(tmp_path, os.getpid(), age=10 * DEAD_TEMP_AGE)
    assert sweep_stale_temps(tmp_path) == 0
    assert temp.exists()


def test_a_fresh_temp_is_kept_even_when_its_pid_is_gone(tmp_path: Path, dead_pid: int) -> None:
    temp = _temp(tmp_path, dead_pid, age=0)
    sweep_stale_temps(tmp_path)
    assert temp.exists()


def test_other_files_are_never_touched(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("x")
    (tmp_path / ".hidden.tmp").write_text("x")
    for name in ("MEMORY.md", ".hidden.tmp"):
        os.utime(tmp_path / name, (0, 0))
    sweep_stale_temps(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".hidden.tmp", "MEMORY.md"]


def test_a_directory_write_sweeps_its_parent(tmp_path: Path, dead_pid: int) -> None:
    temp = _temp(tmp_path, dead_pid, age=DEAD_TEMP_AGE + 5, is_dir=True)  # a killed unpack's tree
    with atomic_directory(tmp_path / "out", error=CARError) as tree:
        (tree / "a").write_bytes(b"a")
    assert not temp.exists()


def test_writing_a_car_file_sweeps_beside_it(tmp_path: Path, dead_pid: int) -> None:
    temp = _temp(tmp_path, dead_pid, age=DEAD_TEMP_AGE + 5)  # a killed pack -o
    with CarFileWriter(tmp_path / "out.car") as writer:
        cid = make_cid(1, RAW, b"x")
        writer.put(cid, b"x")
        writer.finish(cid)
    assert not temp.exists()


def test_store_gc_sweeps_a_dead_writers_temp_before_the_hour(tmp_path: Path, dead_pid: int) -> None:
    store = BlockStore(tmp_path / "store")
    cid = make_cid(1, RAW, b"x")
    store.put(cid, b"x")
    shard = next(p for p in store.blocks_dir.iterdir() if p.is_dir())
    temp = _temp(shard, dead_pid, age=DEAD_TEMP_AGE + 5)
    store.gc()
    assert not temp.exists()


@pytest.mark.parametrize("folder", [".", "ipns"])
def test_store_gc_sweeps_a_dead_writers_temp_of_the_pins_or_an_ipns_record(
    tmp_path: Path, dead_pid: int, folder: str
) -> None:
    store = BlockStore(tmp_path / "store")
    store.put(make_cid(1, RAW, b"x"), b"x")
    (store.root / folder).mkdir(exist_ok=True)
    temp = _temp(store.root / folder, dead_pid, age=DEAD_TEMP_AGE + 5)
    store.gc()
    assert not temp.exists()
