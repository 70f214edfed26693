from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from bundlekit.errors import LockTimeoutError
from bundlekit.memory import Memory
from bundlekit.memory.lock import TreeLock

from .conftest import fields

WORKERS = 3
PER_WORKER = 100


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    # Spawned children import the worker module by its top-level name.
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    import memory_workers  # type: ignore[import-not-found]

    return memory_workers


def _run(target: object, args_list: list[tuple[object, ...]]) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=target, args=args) for args in args_list]  # type: ignore[attr-defined]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=300)
        assert proc.exitcode == 0


@pytest.mark.slow
def test_processes_writing_at_once_lose_nothing(tree: Path, workers) -> None:  # type: ignore[no-untyped-def]
    _run(workers.write_many, [(str(tree), w, PER_WORKER) for w in range(WORKERS)])
    memory = Memory(tree)
    keys = {r.key for r in memory.list()}
    assert keys == {f"w{w}_{i:03d}" for w in range(WORKERS) for i in range(PER_WORKER)} | {"shared"}
    shared_writes = WORKERS * len(range(0, PER_WORKER, workers.SHARED_EVERY))
    assert memory.read("shared").revision == shared_writes  # type: ignore[union-attr]
    assert all(r.revision == 1 for r in memory.list() if r.key != "shared")
    assert (tree / "MEMORY.md").read_text(encoding="utf-8") == memory.index_text()
    lines = [
        json.loads(line) for f in sorted((tree / "timeline").iterdir()) for line in f.read_text().splitlines()
    ]
    assert sorted((e["worker"], e["i"]) for e in lines) == [
        (w, i) for w in range(WORKERS) for i in range(PER_WORKER)
    ]
    assert not [p for p in tree.iterdir() if p.name.endswith(".tmp")]


def test_expected_revision_counter_across_processes_counts_every_increment(
    tree: Path,
    workers,  # type: ignore[no-untyped-def]
) -> None:
    Memory(tree).write("counter", **fields(type="project", body="0"))
    _run(workers.increment, [(str(tree), 25) for _ in range(WORKERS)])
    counter = Memory(tree).read("counter")
    assert counter is not None
    assert counter.body == str(WORKERS * 25) and counter.revision == WORKERS * 25 + 1


def test_lock_held_elsewhere_times_out_and_changes_nothing(tree: Path) -> None:
    tree.mkdir()
    with TreeLock(tree).hold(), pytest.raises(LockTimeoutError, match="could not lock"):
        Memory(tree, lock_timeout=0.2).write("k", **fields())
    assert not (tree / "k.md").exists()


def test_lock_is_reentrant_for_one_memory(tree: Path) -> None:
    memory = Memory(tree)
    memory.write("k", **fields())
    memory.forget("k")  # forget takes the lock and notes under it again
    assert memory.timeline()[-1]["type"] == "forgot"
