"""Worker functions for the multi-process tests (spawned children import this module by name)."""

from __future__ import annotations

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
