from __future__ import annotations

import json
import multiprocessing
import threading
import time
from pathlib import Path

import pytest

from bundlekit.errors import LockTimeoutError
from bundlekit.memory import Memory
from bundlekit.memory.files import read_tree_files
from bundlekit.memory.index import render_index
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


def test_readers_run_while_processes_write(tree: Path, workers) -> None:  # type: ignore[no-untyped-def]
    Memory(tree).init()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=workers.write_many, args=(str(tree), w, 20)) for w in range(2)]
    procs += [ctx.Process(target=workers.read_many, args=(str(tree), 30)) for _ in range(2)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=300)
        assert proc.exitcode == 0
    memory = Memory(tree)
    assert len(memory.list()) == 2 * 20 + 1
    assert (tree / "MEMORY.md").read_text(encoding="utf-8") == memory.index_text()


@pytest.mark.parametrize("round_", range(3))
def test_kill_9_of_writers_loses_no_acknowledged_write_and_the_next_command_repairs(
    tree: Path, tmp_path: Path, workers, round_: int  # type: ignore[no-untyped-def]
) -> None:
    Memory(tree).init()
    ctx = multiprocessing.get_context("spawn")
    acks = [tmp_path / f"ack{w}" for w in range(2)]
    procs = [ctx.Process(target=workers.write_acknowledged, args=(str(tree), w, str(acks[w]))) for w in range(2)]
    for proc in procs:
        proc.start()
    deadline = time.monotonic() + 60
    while not all(a.exists() and a.stat().st_size > 0 for a in acks) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05 * (round_ + 1))
    for proc in procs:
        proc.kill()  # SIGKILL: no cleanup, at whatever step the write was
        proc.join()
    acknowledged = {key for a in acks for key in a.read_text(encoding="utf-8").split()}
    assert acknowledged
    memory = Memory(tree)
    keys = {r.key for r in memory.list()}  # the next command: every file parses (no torn file)
    assert acknowledged <= keys
    assert len(keys - acknowledged) <= 2  # at most one unacknowledged write per killed writer
    on_disk = read_tree_files({p.name: p.read_bytes() for p in tree.glob("*.md")}).records
    assert [r.raw for r in memory.list()] == [on_disk[k].raw for k in sorted(on_disk)]
    assert (tree / "MEMORY.md").read_text(encoding="utf-8") == render_index(on_disk.values())


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


def test_threads_share_one_memory_and_its_index(tree: Path) -> None:
    memory = Memory(tree)
    memory.write("seed", **fields(body="kick"))
    errors: list[Exception] = []

    def work(n: int) -> None:
        try:
            for i in range(15):
                memory.write(f"t{n}_{i}", **fields(body=f"kick {n} {i}"))
                memory.recall("kick")
                memory.context_block(256)
        except Exception as exc:  # noqa: BLE001 - any failure in a thread is reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(memory.list()) == 46
