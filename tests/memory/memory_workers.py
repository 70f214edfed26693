"""Worker functions for the multi-process tests (spawned children import this module by name)."""

from __future__ import annotations

import os

from bundlekit.errors import ConflictError
from bundlekit.memory import Memory

SHARED_EVERY = 5


def write_many(root: str, worker: int, count: int) -> None:
    """Write ``count`` own memories, note each one, and rewrite a shared memory every fifth step."""
    memory = Memory(root)
    for i in range(count):
        memory.write(
            f"w{worker}_{i:03d}",
            name=f"Worker {worker} item {i}",
            description=f"written by worker {worker}",
            type="project",
            body=f"item {i}",
        )
        memory.note("wrote", worker=worker, i=i)
        if i % SHARED_EVERY == 0:
            memory.write(
                "shared",
                name="Shared",
                description="every worker writes it",
                type="user",
                body=f"{worker}/{i}",
            )


def increment(root: str, count: int) -> None:
    """Compare-and-swap a counter ``count`` times with expected_revision, retrying on conflict."""
    memory = Memory(root)
    done = 0
    while done < count:
        current = memory.read("counter")
        assert current is not None
        value = int(current.body)
        try:
            memory.write(
                "counter",
                name="Counter",
                description="incremented with expected_revision",
                type="project",
                body=str(value + 1),
                expected_revision=current.revision,
            )
        except ConflictError:
            continue
        done += 1


def read_many(root: str, rounds: int) -> None:
    """List and recall ``rounds`` times while others write: every answer is whole and parses."""
    memory = Memory(root)
    for _ in range(rounds):
        records = memory.list()
        assert all(r.name and r.raw.startswith("---") for r in records)
        memory.recall("worker")
        memory.context_block(512)


def write_acknowledged(root: str, worker: int, ack_path: str) -> None:
    """Write memories for ever; after each write returns, append its key to ``ack_path`` (fsynced)."""
    memory = Memory(root)
    with open(ack_path, "a", encoding="utf-8") as ack:
        for i in range(100_000):
            key = f"k{worker}_{i:05d}"
            memory.write(key, name=f"Item {i}", description=f"by {worker}", type="project", body=f"body {i} " * 20)
            ack.write(key + "\n")
            ack.flush()
            os.fsync(ack.fileno())
