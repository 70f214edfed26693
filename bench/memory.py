"""Benchmark: the memory commands as agents run them, a fresh CLI process per call, at 1,000 and 10,000 memories.

Everything is measured against baselines taken in the same run, so the ratios
mean something on a loaded or slower machine:

* each of ``memory recall``, ``list``, ``show``, ``context`` and ``write`` as a
  whole CLI process (``python -m bundlekit ...``), cold (the first command on a
  tree with no derived index: it builds the index) and warm (median of
  ``--repeat`` runs), against ``python -m bundlekit --help``. Target: warm at
  most 2x ``--help`` at 10,000;
* in-process warm ``recall`` (one ``Memory`` reused). Target: under 10 ms at 10,000;
* the first open of an unindexed tree in process (``Memory(root).list()``).
  Target: under 3 s at 10,000;
* ``bundlekit build`` of the tree against ``bundlekit pack`` of the same
  directory, both CLI processes. Target: at most 3x;
* the secret guard over every memory file's bytes (what a build still pays
  with the index: reported, no target).

    python bench/memory.py [--counts 1000 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bundlekit.memory import Memory  # noqa: E402
from bundlekit.memory.naming import HIDDEN_DIR  # noqa: E402
from bundlekit.memory.record import MEMORY_TYPES  # noqa: E402
from bundlekit.memory.secrets import find_secrets  # noqa: E402
from bundlekit.memory.timefmt import format_timestamp  # noqa: E402

NOW = datetime(2026, 4, 14, 12, 0, 0, tzinfo=UTC)
WORDS = "kick pass drill knee tournament saturday tone pacing clip reel striker volley rondo sprint cooldown".split()  # noqa: SIM905
CLI_RATIO = 2.0
RECALL_MS = 10.0
FIRST_OPEN_S = 3.0
BUILD_RATIO = 3.0


def generate(root: Path, count: int, seed: int = 7) -> None:
    """Write ``count`` valid memory files of about 1.5 KB straight to ``root``, plus a few timeline days."""
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
        body = "\n".join(" ".join(rng.choices(WORDS, k=12)) for _ in range(rng.randrange(12, 26)))
        (root / f"mem_{i:05d}.md").write_text("\n".join(lines) + f"\n---\n\n{body}\n", encoding="utf-8")
    for day in range(5):
        memory = Memory(root, clock=lambda day=day: NOW - timedelta(days=day))
        for n in range(40):
            memory.note("tick", n=n, text=" ".join(rng.choices(WORDS, k=5)))
    shutil.rmtree(root / HIDDEN_DIR, ignore_errors=True)  # notes made the index; start unindexed


def wall(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``repeat`` calls, in milliseconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def cli(args: Sequence[str], cwd: Path) -> Callable[[], object]:
    """A call that runs ``python -m bundlekit ARGS`` as a fresh process and checks it succeeded."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def run() -> None:
        subprocess.run([sys.executable, "-m", "bundlekit", *args], cwd=cwd, env=env, check=True, capture_output=True)

    return run


def line(name: str, ms: float, base: float, target: float | None, unit: str = "x --help") -> bool:
    ratio = ms / base
    ok = target is None or ratio <= target
    verdict = "" if target is None else f"  target <= {target:g}{unit[0]}  {'OK' if ok else 'MISSED'}"
    print(f"  {name:26s} {ms:9.1f} ms  {ratio:6.2f} {unit}{verdict}")
    return ok


def bench_count(count: int, repeat: int, work: Path) -> bool:
    root = work / f"tree{count}"
    start = time.perf_counter()
    generate(root, count)
    size = sum(p.stat().st_size for p in root.glob("mem_*.md")) / count
    print(f"\n{count} memories (mean {size / 1024:.2f} KB), generated in {time.perf_counter() - start:.1f} s")
    ok = True
    tree = ["-d", str(root)]
    help_ms = wall(cli(["--help"], work), repeat)
    print(f"  {'bundlekit --help':26s} {help_ms:9.1f} ms  (baseline)")
    # Cold: the first command on a tree with no derived index builds it.
    cold = wall(cli(["memory", "recall", "rondo sprint", *tree], work), 1)
    line("recall, cold (builds index)", cold, help_ms, None)
    commands = {
        "recall": ["memory", "recall", "rondo sprint", *tree],
        "list": ["memory", "list", *tree],
        "show": ["memory", "show", "mem_00042", *tree],
        "context": ["memory", "context", *tree],
    }
    for name, args in commands.items():
        ok &= line(f"{name}, warm", wall(cli(args, work), repeat), help_ms, CLI_RATIO if count >= 10_000 else None)
    counter = iter(range(10**6))

    def write() -> None:
        cli(["memory", "write", f"new_{next(counter)}", "--name", "New", "--description", "fresh",
             "--type", "project", "--body", "a new memory", *tree], work)()

    ok &= line("write (new key), warm", wall(write, repeat), help_ms, CLI_RATIO if count >= 10_000 else None)
    rewrite = cli(["memory", "write", "mem_00042", "--name", "Memory 42", "--description", "rewritten",
                   "--type", "reference", "--body", "changed", *tree], work)
    line("write (same key), warm", wall(rewrite, repeat), help_ms, None)

    memory = Memory(root, clock=lambda: NOW)
    memory.recall("rondo sprint")
    recall_ms = wall(lambda: memory.recall("rondo sprint"), max(repeat, 20))
    target_ok = recall_ms < RECALL_MS or count < 10_000
    ok &= target_ok
    print(f"  {'recall in process, warm':26s} {recall_ms:9.1f} ms  target < {RECALL_MS:g} ms  {'OK' if target_ok else 'MISSED'}")
    memory.close()

    shutil.rmtree(root / HIDDEN_DIR)
    start = time.perf_counter()
    Memory(root).list()
    first = time.perf_counter() - start
    first_ok = first < FIRST_OPEN_S or count < 10_000
    ok &= first_ok
    print(f"  {'first open (index build)':26s} {first * 1000:9.1f} ms  target < {FIRST_OPEN_S:g} s  {'OK' if first_ok else 'MISSED'}")

    texts = [p.read_text(encoding="utf-8") for p in root.glob("*.md")]
    guard_ms = wall(lambda: [find_secrets(t) for t in texts], 1)
    print(f"  {'secret guard on the bytes':26s} {guard_ms:9.1f} ms  (what build still pays per run)")

    pack_ms = wall(cli(["pack", str(root), "-o", str(work / "pack.car")], work), max(1, repeat // 2))
    build_ms = wall(cli(["build", str(root), "-o", str(work / "bundle.car")], work), max(1, repeat // 2))
    print(f"  {'pack':26s} {pack_ms:9.1f} ms  (baseline)")
    ok &= line("build", build_ms, pack_ms, BUILD_RATIO if count >= 10_000 else None, unit="x pack")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cpus")
    with tempfile.TemporaryDirectory() as tmp:
        ok = all([bench_count(count, args.repeat, Path(tmp)) for count in args.counts])
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
