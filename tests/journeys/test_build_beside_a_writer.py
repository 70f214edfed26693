"""Journey: a build right after the tree changed never waits for, or fails on, the tree's lock.

A person's agent has just written (the directory's stamp is racy: changed within the timestamp tick a later
edit could hide in), so ``bundlekit build`` takes the tree's lock before it lists, to list the tree once
(``Indexer._lockable``). That lock only saves a listing: when another process holds it (a sync round
publishing) or it cannot be opened (a folder planted where the lock file lives), the build reads without it,
as it does a calm tree; before, it waited out the lock's 30 s and failed (exit 1, "could not lock"), or
failed at once naming the lock. The writes still refuse the lock they cannot take.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from bundlekit.memory.lock import TreeLock
from tests.journeys.football_tree import football_tree
from tests.journeys.typed import machine_env, set_up, typed


def _just_changed(root: Path) -> None:
    """The tree's directory stamped a minute ahead (a clock step, or a write this tick): racy whatever the load."""
    ahead = time.time_ns() + 60_000_000_000
    os.utime(root, ns=(ahead, ahead))


def test_a_build_while_another_process_holds_the_lock_reads_without_waiting(tmp_path: Path) -> None:
    root = football_tree(tmp_path / "memory")
    env = machine_env(tmp_path)
    set_up(f"bundlekit memory -d {root} list", cwd=tmp_path, env=env)  # the index and MEMORY.md written
    _just_changed(root)
    with TreeLock(root).hold():  # another process's writer (its own open of the lock file: flock excludes it)
        done = typed(f"bundlekit build -d {root} -o {tmp_path / 'out.car'}", cwd=tmp_path, env=env)
    assert done.stdout.startswith("bafy") and (tmp_path / "out.car").stat().st_size > 0


def test_a_build_reads_a_tree_whose_lock_is_a_planted_folder_and_a_write_names_it(tmp_path: Path) -> None:
    root = football_tree(tmp_path / "memory")
    env = machine_env(tmp_path)
    set_up(f"bundlekit memory -d {root} list", cwd=tmp_path, env=env)
    lock = root / ".bundlekit" / "lock"
    lock.unlink(missing_ok=True)
    lock.mkdir()
    _just_changed(root)
    done = typed(f"bundlekit build -d {root} -o {tmp_path / 'out.car'}", cwd=tmp_path, env=env)
    assert done.stdout.startswith("bafy")
    refused = typed(f"bundlekit memory -d {root} forget user_role", cwd=tmp_path, env=env, code=1)
    assert f"cannot lock the memory tree {root}" in refused.stderr
