"""A memory write sweeps the temps a killed writer left in the tree (issue 12, item 8; review).

``_fs.sweep_stale_temps`` decides which temps are stale (pid gone, untouched
for a minute); the memory store runs it at its first write under the lock, in
the root, ``timeline/`` and ``.bundlekit/``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bundlekit._fs import DEAD_TEMP_AGE
from bundlekit.errors import MemoryStoreError
from bundlekit.memory import Memory


@pytest.fixture(scope="module")
def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    return int(child.stdout)


def _temp(path: Path, *, age: float) -> Path:
    path.write_bytes(b"half a memory")
    then = time.time() - age
    os.utime(path, (then, then))
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "mem"
    Memory(root).write("a", name="A", description="d", type="user", body="b")
    return root


def _killed_writers_temps(tree: Path, pid: int, age: float) -> list[Path]:
    (tree / "timeline").mkdir(exist_ok=True)
    return [
        _temp(tree / f".a.md.{pid}.0123abcd.tmp", age=age),
        _temp(tree / f".MEMORY.md.{pid}.0123abcd.tmp", age=age),
        _temp(tree / "timeline" / f".2026-01-01.jsonl.{pid}.0123abcd.tmp", age=age),
        _temp(tree / ".bundlekit" / f".x.{pid}.0123abcd.tmp", age=age),
    ]


def test_the_next_write_removes_a_dead_writers_old_temps(tree: Path, dead_pid: int) -> None:
    temps = _killed_writers_temps(tree, dead_pid, DEAD_TEMP_AGE + 5)
    Memory(tree).write("b", name="B", description="d", type="user", body="b")
    assert [t for t in temps if t.exists()] == []


def test_a_note_removes_them_too(tree: Path, dead_pid: int) -> None:
    temps = _killed_writers_temps(tree, dead_pid, DEAD_TEMP_AGE + 5)
    Memory(tree).note("event", what="x")
    assert [t for t in temps if t.exists()] == []


def test_a_recent_temp_of_a_dead_writer_is_kept(tree: Path, dead_pid: int) -> None:
    temps = _killed_writers_temps(tree, dead_pid, 1.0)
    Memory(tree).write("b", name="B", description="d", type="user", body="b")
    assert [t for t in temps if not t.exists()] == []


def test_a_live_writers_temp_is_kept(tree: Path) -> None:
    temps = _killed_writers_temps(tree, os.getppid(), DEAD_TEMP_AGE + 5)
    Memory(tree).write("b", name="B", description="d", type="user", body="b")
    assert [t for t in temps if not t.exists()] == []


def test_the_sweep_never_reaches_through_a_planted_timeline_link(tmp_path: Path, dead_pid: int) -> None:
    root = tmp_path / "mem"
    Memory(root).write("a", name="A", description="d", type="user", body="b")
    outside = tmp_path / "outside"
    outside.mkdir()
    theirs = _temp(outside / f".data.{dead_pid}.0123abcd.tmp", age=DEAD_TEMP_AGE + 5)
    if (root / "timeline").exists():
        (root / "timeline").rmdir()
    (root / "timeline").symlink_to(outside)
    with pytest.raises(MemoryStoreError, match="symbolic link"):
        Memory(root).write("b", name="B", description="d", type="user", body="b")
    assert theirs.exists()
