"""Benchmark: recall and context_block over 10,000 memories.

Targets on the development machine: recall < 200 ms, context_block < 300 ms
(warm: the in-process parse cache is filled by the first call, which is
reported separately as "cold"). As a same-run baseline the script also times
the bare minimum any recall must do: list the directory, stat and read every
file, and search the bytes (no YAML). Ratios against it are printed so the
numbers mean something on a loaded or slower machine.

    python bench/memory.py [--count 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bundlekit.memory import Memory
from bundlekit.memory.record import MEMORY_TYPES
from bundlekit.memory.timefmt import format_timestamp

NOW = datetime(2026, 4, 14, 12, 0, 0, tzinfo=UTC)
WORDS = "kick pass drill knee tournament saturday tone pacing clip reel striker volley rondo sprint cooldown".split()  # noqa: SIM905
TARGETS_MS = {"recall": 200.0, "context_block": 300.0}


def generate(root: Path, count: int, seed: int = 7) -> None:
    """Write ``count`` valid memory files straight to ``root`` (text built directly, for speed)."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        updated = NOW - timedelta(minutes=rng.randrange(0, 60 * 24 * 120))
        created = updated - timedelta(days=rng.randrange(0, 30))
        tags = rng.sample(WORDS, k=rng.randrange(0, 4))
        lines = [
            "---",
            f"name: Memory {i}",
            f"description: {' '.join(rng.choices(WORDS, k=6))}",
            f"type: {MEMORY_TYPES[i % 4]}",
            f"created: '{format_timestamp(created)}'",
            f"updated: '{format_timestamp(updated)}'",
            f"revision: {1 + rng.randrange(5)}",
        ]
        if i % 7 == 0:
            lines.append("decay: 30d")
        if tags:
            lines.append("tags:")
            lines.extend(f"- {tag}" for tag in tags)
        body = "\n".join(" ".join(rng.choices(WORDS, k=12)) for _ in range(rng.randrange(2, 12)))
        (root / f"mem_{i:05d}.md").write_text("\n".join(lines) + f"\n---\n\n{body}\n", encoding="utf-8")
    for day in range(5):
        memory = Memory(root, clock=lambda day=day: NOW - timedelta(days=day))
        for n in range(40):
            memory.note("tick", n=n, text=" ".join(rng.choices(WORDS, k=5)))


def time_ms(fn: Callable[[], object], repeat: int) -> tuple[float, float, float]:
    """(median wall, best wall, median CPU) in milliseconds.

    CPU time is printed too because on a loaded machine wall time mostly measures
    the wait for a core; for this CPU-bound work CPU time is close to the wall
    time an idle machine would show.
    """
    times, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        times.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return statistics.median(times), min(times), statistics.median(cpu)


def baseline_scan(root: Path, needle: bytes) -> int:
    """List, stat, read and search every memory file: the floor for an uncached recall."""
    hits = 0
    for entry in os.scandir(root):
        if entry.name.endswith(".md"):
            entry.stat()
            with open(entry.path, "rb") as handle:
                hits += needle in handle.read().lower()
    return hits


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "memory"
        start = time.perf_counter()
        generate(root, args.count)
        print(f"generated {args.count} memories in {time.perf_counter() - start:.1f} s")
        memory = Memory(root, clock=lambda: NOW)

        start = time.perf_counter()
        memory.check()  # parses and validates every file, fills the cache
        cold = (time.perf_counter() - start) * 1000
        base_med, _, base_cpu = time_ms(lambda: baseline_scan(root, b"knee"), args.repeat)
        results = {
            "recall": time_ms(lambda: memory.recall("rondo sprint"), args.repeat),
            "context_block": time_ms(lambda: memory.context_block(8192), args.repeat),
        }
        print(f"cold check (parses every file): {cold:8.1f} ms")
        print(f"baseline scan (read + search, no YAML): {base_med:8.1f} ms  cpu {base_cpu:8.1f} ms")
        print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus")
        failed = False
        for name, (median, best, cpu) in results.items():
            target = TARGETS_MS[name]
            ok = median < target
            failed |= not ok
            print(
                f"{name:14s} median {median:8.1f} ms  best {best:8.1f} ms  cpu {cpu:8.1f} ms  target < {target:.0f} ms  "
                f"{'OK' if ok else 'MISSED'}  ratio to baseline {median / base_med:5.2f}"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
