"""Benchmark: the memory commands as agents run them, a fresh CLI process per call, at 1,000 and 10,000 memories
(and 100,000 with ``--large``), on realistic trees (``bench/trees.py``).

Everything is measured against baselines taken in the same run, so the ratios
mean something on a loaded or slower machine; wall and CPU time (ours plus the
child processes') are both printed, and the targets apply to the CPU ratios,
which a machine shared with other work distorts least:

* each of ``memory recall``, ``list``, ``show``, ``context``, ``write``, ``forget``,
  ``note`` and ``init`` as a whole CLI process (``python -m bundlekit ...``), cold
  (the first command on a tree with no derived index: it builds the index) and
  warm (median of ``--repeat`` runs), against ``python -m bundlekit --help``, with
  each one's peak RSS (the largest of its runs, ``wait4``'s ``ru_maxrss``).
  Target: warm at most 2x ``--help`` at 10,000 and 3x at 100,000 (issue 37;
  ``export`` and ``import`` carry the whole tree by design and are not timed);
* in-process warm ``recall`` (one ``Memory`` reused). Target: under 10 ms at 10,000;
* the first open of an unindexed tree in process (``Memory(root).list()``).
  Target: under 3 s at 10,000;
* ``bundlekit build`` of the tree against ``bundlekit pack`` of the same
  directory, both CLI processes. Target: at most 3x;
* the secret guard over every memory file's bytes (what a build still pays
  with the index: reported, no target);
* recall by meaning (with the ``semantic`` extra; ``--no-meaning`` skips it):
  embedding the whole tree into the index (once; a second pass computes
  nothing), in-process warm ``recall --rank hybrid`` (target: under 10 ms at
  10,000 once the model is loaded), the MCP ``memory_recall`` round trip
  (hybrid, its default) over stdio, and a fresh ``recall --rank hybrid``
  process against ``--help``, with the model's share (that process less a
  ``--rank salience`` one). The plain lines above rank by ``salience``.

    python bench/memory.py [--counts 1000 10000] [--large] [--repeat 5] [--no-meaning]

``--large`` adds 100,000 memories (about 1 GB of files and index; generating takes minutes).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
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

from bench.trees import generate_tree
from bundlekit._secrets import find_secrets
from bundlekit.memory import Memory
from bundlekit.memory.naming import HIDDEN_DIR
from bundlekit.memory.record import MEMORY_TYPES
from bundlekit.memory.timefmt import format_timestamp
from _home import own_home  # bench/_home.py: never the user's data directory

NOW = datetime(2026, 4, 14, 12, 0, 0, tzinfo=UTC)
WORDS = "kick pass drill knee tournament saturday tone pacing clip reel striker volley rondo sprint cooldown".split()  # noqa: SIM905
CLI_RATIO = 2.0
LARGE_CLI_RATIO = 3.0
LARGE = 100_000
TIME = shutil.which("time", path="/usr/bin:/bin")  # GNU time, for each process's peak RSS (none: not printed)
RECALL_MS = 10.0
FIRST_OPEN_S = 3.0
BUILD_RATIO = 3.0


def generate(root: Path, count: int, seed: int = 7) -> list[str]:
    """A realistic tree of ``count`` memories at ``root`` (``bench.trees``), left unindexed (the first command
    builds the index, the "cold" line); its keys, sorted."""
    keys = generate_tree(root, count, seed=seed)
    shutil.rmtree(root / HIDDEN_DIR, ignore_errors=True)
    return keys


def target(count: int) -> float | None:
    """The warm ratio a memory command must meet at ``count`` memories (None: no target below 10,000)."""
    return LARGE_CLI_RATIO if count >= LARGE else CLI_RATIO if count >= 10_000 else None


CPU: dict[str, float] = {}  # the median CPU time (ours plus our children's) of the last wall() call
PEAK: dict[str, float] = {}  # the largest peak RSS (MB) of the child processes since the last wall() call began


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def wall(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``repeat`` calls, in milliseconds (median CPU time kept in ``CPU["last"]``).

    CPU time is printed too: on a loaded machine wall time mostly measures the
    wait for a core, and CPU time is close to what an idle machine shows.
    """
    times, cpu = [], []
    PEAK["last"] = 0.0
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), _cpu()
        fn()
        times.append((time.perf_counter() - start) * 1000)
        cpu.append((_cpu() - start_cpu) * 1000)
    CPU["last"] = statistics.median(cpu)
    return statistics.median(times)


def cli(args: Sequence[str], cwd: Path) -> Callable[[], object]:
    """A call that runs ``python -m bundlekit ARGS`` as a fresh process and checks it succeeded.

    Compiled bytecode is cached (in ``cwd``, outside the repository) whatever
    ``PYTHONDONTWRITEBYTECODE`` says, as for an installed package: else every
    process, the baseline too, compiles each module it imports again.
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           "PYTHONPYCACHEPREFIX": str(cwd / "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    def run() -> None:
        # GNU time reports the command's own peak RSS: a child's ru_maxrss on Linux starts from the RSS of
        # the process that forked it (this benchmark, holding a tree), so it is measured from a small parent.
        with tempfile.NamedTemporaryFile("r") as peak:
            command = [sys.executable, "-m", "bundlekit", *args]
            timed = [TIME, "-f", "%M", "-o", peak.name, *command] if TIME else command
            subprocess.run(timed, cwd=cwd, env=env, check=True, capture_output=True)
            found = peak.read().strip().splitlines()
        if found and found[-1].isdigit():
            PEAK["last"] = max(PEAK.get("last", 0.0), int(found[-1]) / 1024)  # kilobytes

    return run


def line(name: str, ms: float, base: tuple[float, float], target: float | None, unit: str = "x --help") -> bool:
    """Print wall and CPU time with their ratios to ``base`` (wall, CPU); the target applies to the CPU ratio."""
    cpu = CPU["last"]
    ratio, cpu_ratio = ms / base[0], cpu / base[1]
    ok = target is None or cpu_ratio <= target
    verdict = "" if target is None else f"  target <= {target:g}x  {'OK' if ok else 'MISSED'}"
    rss = f"  rss {PEAK.get('last', 0.0):6.1f} MB" if PEAK.get("last") else ""
    print(f"  {name:28s} wall {ms:8.1f} ms {ratio:6.2f}   cpu {cpu:8.1f} ms {cpu_ratio:6.2f} {unit}{rss}{verdict}")
    return ok


def recalls_in_process(memory: Memory, queries: Sequence[str], rank: str, count: int, repeat: int) -> bool:
    """Warm in-process recall of each query (one ``Memory`` reused), against the 10 ms target at 10,000."""
    ok = True
    for query in queries:
        memory.recall(query, rank=rank)
        recall_ms = wall(lambda query=query: memory.recall(query, rank=rank), max(repeat, 20))
        target_ok = CPU["last"] < RECALL_MS or count < 10_000
        ok &= target_ok
        print(
            f"  {rank + ' ' + repr(query[:14]) + ' in process':28s} wall {recall_ms:8.1f} ms          cpu {CPU['last']:8.1f} ms"
            f"  target < {RECALL_MS:g} ms  {'OK' if target_ok else 'MISSED'}"
        )
    return ok


def bench_meaning(root: Path, count: int, repeat: int, work: Path, help_base: tuple[float, float]) -> bool:
    """Recall by meaning at ``count`` memories: embedding, in-process hybrid recall, MCP, a fresh process."""
    ok = True
    memory = Memory(root, clock=lambda: NOW)
    memory.meaning.embedder().embed(["load the model"])  # the model's load is not the tree's embedding
    start_cpu, start = _cpu(), time.perf_counter()
    computed = memory.meaning.embed_tree()
    embed_ms, embed_cpu = (time.perf_counter() - start) * 1000, (_cpu() - start_cpu) * 1000
    print(f"  {f'embed the tree ({computed} vectors)':28s} wall {embed_ms:8.1f} ms          cpu {embed_cpu:8.1f} ms")
    again_ms = wall(memory.meaning.embed_tree, 1)
    print(f"  {f'embed again ({memory.meaning.embed_tree()} vectors)':28s} wall {again_ms:8.1f} ms          cpu {CPU['last']:8.1f} ms")
    ok &= recalls_in_process(memory, ("which drills help a tired striker", "1092"), "hybrid", count, repeat)
    memory.close()
    try:
        from bench.mcp_recall import mcp_round_trips
    except ImportError:
        print("  mcp memory_recall            (skipped: the mcp extra is not installed)")
    else:
        import asyncio

        first, trips = asyncio.run(mcp_round_trips(root, max(repeat, 10), query="which drills help a tired striker"))
        print(f"  {'mcp memory_recall (hybrid)':28s} wall {statistics.median(trips) * 1000:8.1f} ms"
              f"          (server start + model + first call {first * 1000:.0f} ms)")
    tree = ["-d", str(root)]
    plain = wall(cli(["memory", "recall", "tired striker", "--rank", "salience", *tree], work), repeat)
    plain_cpu = CPU["last"]
    hybrid = wall(cli(["memory", "recall", "which drills help a tired striker", "--rank", "hybrid", *tree], work), repeat)
    line("recall --rank hybrid, warm", hybrid, help_base, None)
    print(f"  {'  model and vectors share':28s} wall {hybrid - plain:8.1f} ms          cpu {CPU['last'] - plain_cpu:8.1f} ms"
          "  (less a --rank salience process)")
    return ok


def bench_commands(tree: list[str], key: str, count: int, repeat: int, work: Path,
                   help_base: tuple[float, float]) -> bool:
    """Each memory command, warm, as a fresh process against ``--help``: the ratio, the peak RSS, the target."""
    ok = True
    commands = {
        "recall": ["memory", "recall", "release branch", "--rank", "salience", *tree],
        "list": ["memory", "list", *tree],
        "show": ["memory", "show", key, *tree],
        "context": ["memory", "context", *tree],
        "note": ["memory", "note", "tick", "text=a line", *tree],
        "init (existing tree)": ["memory", "init", *tree],
    }
    for name, args in commands.items():
        ok &= line(f"{name}, warm", wall(cli(args, work), repeat), help_base, target(count))
    counter = iter(range(10**6))

    def write() -> None:
        cli(["memory", "write", f"new_{next(counter)}", "--name", "New", "--description", "fresh",
             "--type", "project", "--body", "a new memory", *tree], work)()

    ok &= line("write (new key), warm", wall(write, repeat), help_base, target(count))
    gone = iter(range(10**6))

    def forget() -> None:  # the memories write() made, in order
        cli(["memory", "forget", f"new_{next(gone)}", *tree], work)()

    ok &= line("forget, warm", wall(forget, repeat), help_base, target(count))
    rewrite = cli(["memory", "write", key, "--name", "Rewritten", "--description", "rewritten",
                   "--type", "reference", "--body", "changed", *tree], work)
    line("write (same key), warm", wall(rewrite, repeat), help_base, None)
    return ok


def bench_count(count: int, repeat: int, work: Path, meaning: bool = True) -> bool:
    root = work / f"tree{count}"
    start = time.perf_counter()
    keys = generate(root, count)
    size = sum(p.stat().st_size for p in root.glob("*.md")) / count
    print(f"\n{count} memories (mean {size / 1024:.2f} KB), generated in {time.perf_counter() - start:.1f} s")
    ok = True
    tree = ["-d", str(root)]
    help_ms = wall(cli(["--help"], work), repeat)
    help_base = (help_ms, CPU["last"])
    print(f"  {'bundlekit --help (baseline)':28s} wall {help_ms:8.1f} ms          cpu {CPU['last']:8.1f} ms"
          f"  rss {PEAK['last']:6.1f} MB")
    # Cold: the first command on a tree with no derived index builds it.
    cold = wall(cli(["memory", "recall", "release branch", "--rank", "salience", *tree], work), 1)
    line("recall, cold (builds index)", cold, help_base, None)
    ok &= bench_commands(tree, keys[42 % len(keys)], count, repeat, work, help_base)
    memory = Memory(root, clock=lambda: NOW)
    # "release branch" matches many of these memories (a few hundred words); "1092" (4242 in hex) one key.
    ok &= recalls_in_process(memory, ("release branch", "1092"), "salience", count, repeat)
    memory.close()

    if meaning:
        ok &= bench_meaning(root, count, repeat, work, help_base)

    shutil.rmtree(root / HIDDEN_DIR)
    first = wall(lambda: Memory(root).list(), 1)
    first_ok = CPU["last"] < FIRST_OPEN_S * 1000 or count < 10_000
    ok &= first_ok
    print(
        f"  {'first open (index build)':28s} wall {first:8.1f} ms          cpu {CPU['last']:8.1f} ms"
        f"  target < {FIRST_OPEN_S:g} s  {'OK' if first_ok else 'MISSED'}"
    )

    texts = [p.read_text(encoding="utf-8") for p in root.glob("*.md")]
    guard_ms = wall(lambda: [find_secrets(t) for t in texts], 1)
    print(f"  {'secret guard on the bytes':28s} wall {guard_ms:8.1f} ms          cpu {CPU['last']:8.1f} ms  (build still pays it)")

    pack_ms = wall(cli(["pack", str(root), "-o", str(work / "pack.car")], work), max(1, repeat // 2))
    pack_base = (pack_ms, CPU["last"])
    print(f"  {'pack (baseline)':28s} wall {pack_ms:8.1f} ms          cpu {CPU['last']:8.1f} ms")
    build_ms = wall(cli(["build", str(root), "-o", str(work / "bundle.car")], work), max(1, repeat // 2))
    ok &= line("build", build_ms, pack_base, BUILD_RATIO if count >= 10_000 else None, unit="x pack")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--large", action="store_true", help=f"also {LARGE:,} memories (target {LARGE_CLI_RATIO:g}x)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-meaning", dest="meaning", action="store_false", help="skip recall by meaning")
    args = parser.parse_args()
    if args.large and LARGE not in args.counts:
        args.counts.append(LARGE)
    from bundlekit.embed.protocol import semantic_installed

    if args.meaning and not semantic_installed():
        print("recall by meaning: skipped (the semantic extra is not installed)")
        args.meaning = False
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cpus")
    from bundlekit.memory import backend

    listing = "C (bundlekit/memory/_statscan.c)" if backend._c_listing() else "Python (_statscan not built: pip install -e .)"
    print(f"tree listing: {listing}")
    with tempfile.TemporaryDirectory() as tmp:
        own_home(Path(tmp))
        results = [bench_count(count, args.repeat, Path(tmp), args.meaning) for count in args.counts]  # every count
    ok = all(results)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
