"""Benchmark: the round trip of ``memory_recall`` over stdio, at 1,000 memories; with ``--targets``, issue 38's.

An agent's MCP client keeps one ``bundlekit mcp`` process and calls tools on
it; the baseline is what an agent without MCP pays for the same answer: a
fresh ``bundlekit memory recall --json`` process on the same tree, in the same
run. Printed as milliseconds and as a ratio, never asserted.

``--targets`` (issue 38, at ``--count`` memories, default 10,000 there, the
tree of ``bench/memory.py``, its index warm and its vectors computed): a fresh
``memory recall`` with the default ranking (target: at most 2x ``bundlekit
--help``, CPU) and ``memory context --query`` (at most 2.5x), each with its
peak RSS (target: at most 80 MB), against ``--help`` measured in the same run;
and the MCP ``memory_recall`` round trip over each of :data:`QUERIES`, the last
one made of words that are in every memory (targets: median under 10 ms, the
worst query's median under 20 ms). Benchmarks of fresh processes unset
``PYTHONDONTWRITEBYTECODE``.

    python bench/mcp_recall.py [--count 1000] [--repeat 20]
    python bench/mcp_recall.py --targets [--count 10000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcp import Client  # noqa: E402  (the bench needs the extra: pip install -e '.[mcp]')
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from bundlekit.memory import Memory  # noqa: E402
from _home import own_home  # noqa: E402  # bench/_home.py: never the user's data directory

QUERY = "drill"


def make_tree(root: Path, count: int) -> None:
    """``count`` memories of ~1.5 KB (one in ten mentions the query)."""
    mem = Memory(root, namespace="bench")
    mem.init()
    filler = "Notes on pacing, tone and the weekly plan. " * 32
    for i in range(count):
        topic = "drill" if i % 10 == 0 else "match"
        mem.write(f"memory_{i:05d}", name=f"Memory {i}", description=f"about the {topic} {i}",
                  type="project", body=f"{filler}\nThe {topic} of week {i}.")


def env() -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    out["CI"] = "true"
    return out


async def mcp_round_trips(tree: Path, repeat: int, query: str = QUERY) -> tuple[float, list[float]]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "bundlekit", "mcp", "--memory", str(tree)],
                                   env=env())
    started = time.perf_counter()
    async with Client(params, read_timeout_seconds=120) as client:
        await client.call_tool("memory_recall", {"query": query})  # first call: fills the parse cache
        first = time.perf_counter() - started
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            result = await client.call_tool("memory_recall", {"query": query, "limit": 5})
            times.append(time.perf_counter() - t0)
            assert not result.is_error, result.content
    return first, times


def cli_recall(tree: Path, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "bundlekit", "memory", "-d", str(tree), "recall", QUERY, "--json"],
                       env=env(), check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return times


# Issue 38's benchmark queries: questions in other words, a word query, and one whose every word is in every
# memory of bench/memory.py's tree (each body draws 144 or more words from its 15).
QUERIES = ("which drills help a tired striker", "knee pain after sprint", "rondo", "kick pass drill knee memory")
HELP_RATIO, CONTEXT_RATIO, PEAK_MB, MEDIAN_MS, WORST_MS = 2.0, 2.5, 80.0, 10.0, 20.0


def fresh(args: list[str], repeat: int) -> tuple[float, float, float]:
    """Median wall ms, median CPU ms (user + system) and the largest peak RSS (MB) of ``repeat`` fresh
    ``python -m bundlekit ARGS`` processes. Each runs under ``/usr/bin/time -f %M``: its peak RSS is its own
    (a child forked straight from this process would count this process's pages as its peak, before its
    exec), and ``os.wait4`` gives the CPU of ``time`` and its child."""
    environ = env()
    environ.pop("PYTHONDONTWRITEBYTECODE", None)
    walls, cpus, peak = [], [], 0.0
    with tempfile.NamedTemporaryFile("r") as report:
        for _ in range(repeat):
            t0 = time.perf_counter()
            child = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", report.name, sys.executable, "-m",
                                      "bundlekit", *args], env=environ, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
            _pid, status, usage = os.wait4(child.pid, 0)
            child.returncode = os.waitstatus_to_exitcode(status)
            walls.append((time.perf_counter() - t0) * 1000)
            if child.returncode != 0:
                raise SystemExit(f"bundlekit {' '.join(args)} exited {child.returncode}")
            cpus.append((usage.ru_utime + usage.ru_stime) * 1000)
            report.seek(0)
            peak = max(peak, int(report.read().split()[-1]) / 1024)
    return statistics.median(walls), statistics.median(cpus), peak


async def mcp_by_query(tree: Path, repeat: int) -> dict[str, list[float]]:
    """Warm round trips of ``memory_recall`` (default ranking) over stdio, ``repeat`` of each of :data:`QUERIES`."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "bundlekit", "mcp", "--memory", str(tree)],
                                   env=env())
    times: dict[str, list[float]] = {query: [] for query in QUERIES}
    async with Client(params, read_timeout_seconds=300) as client:
        await client.call_tool("memory_recall", {"query": QUERIES[0]})  # loads the model and the vectors
        for _ in range(repeat):
            for query in QUERIES:
                t0 = time.perf_counter()
                result = await client.call_tool("memory_recall", {"query": query, "limit": 5})
                times[query].append((time.perf_counter() - t0) * 1000)
                assert not result.is_error, result.content
    return times


def targets(count: int, repeat: int) -> None:
    """Issue 38's targets at ``count`` memories (see the module docstring)."""
    from bench.memory import generate

    with tempfile.TemporaryDirectory() as tmp:
        own_home(Path(tmp))
        tree = Path(tmp) / "memory"
        generate(tree, count)
        Memory(tree).recall(QUERIES[0], rank=Memory(tree).ranking_for(None))  # warm: index and vectors
        print(f"issue 38 targets at {count} memories, load average {os.getloadavg()[0]:.2f} (2 cores)")
        help_wall, help_cpu, help_peak = fresh(["--help"], repeat)
        print(f"  {'bundlekit --help (baseline)':34s} wall {help_wall:7.1f} ms  cpu {help_cpu:7.1f} ms  "
              f"peak {help_peak:5.1f} MB")
        for name, args, ratio in (
            ("memory recall (default ranking)", ["memory", "-d", str(tree), "recall", QUERIES[0]], HELP_RATIO),
            ("memory context --query", ["memory", "-d", str(tree), "context", "--query", QUERIES[0]], CONTEXT_RATIO),
        ):
            wall, cpu, peak = fresh(args, repeat)
            print(f"  {name:34s} wall {wall:7.1f} ms  cpu {cpu:7.1f} ms  peak {peak:5.1f} MB   "
                  f"{cpu / help_cpu:4.2f}x --help cpu ({wall / help_wall:4.2f}x wall; target {ratio}x, "
                  f"peak target {PEAK_MB:.0f} MB)")
        by_query = asyncio.run(mcp_by_query(tree, repeat * 3))
    medians = {query: statistics.median(times) for query, times in by_query.items()}
    for query, median in medians.items():
        print(f"  mcp memory_recall {query[:30]!r:34s} median {median:6.1f} ms  worst {max(by_query[query]):6.1f} ms")
    every = [t for times in by_query.values() for t in times]
    print(f"  mcp memory_recall: median {statistics.median(every):.1f} ms (target < {MEDIAN_MS:.0f}), worst query's "
          f"median {max(medians.values()):.1f} ms (target < {WORST_MS:.0f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=None, help="memories (default 1,000; 10,000 with --targets)")
    parser.add_argument("--repeat", type=int, default=None, help="runs of each (default 20; 7 with --targets)")
    parser.add_argument("--targets", action="store_true", help="issue 38's targets (see above)")
    args = parser.parse_args()
    if args.targets:
        targets(args.count or 10_000, args.repeat or 7)
        return
    args.count = args.count or 1000
    args.repeat = args.repeat or 20
    with tempfile.TemporaryDirectory() as tmp:
        own_home(Path(tmp))
        tree = Path(tmp) / "memory"
        make_tree(tree, args.count)
        first, warm = asyncio.run(mcp_round_trips(tree, args.repeat))
        cli = cli_recall(tree, max(3, args.repeat // 4))
    mcp_ms = statistics.median(warm) * 1000
    cli_ms = statistics.median(cli) * 1000
    print(f"load average: {os.getloadavg()[0]:.2f}")
    print(f"mcp memory_recall over stdio at {args.count} memories: {mcp_ms:.1f} ms median of {len(warm)} "
          f"(start + first call {first * 1000:.0f} ms)")
    print(f"baseline: a fresh `bundlekit memory recall --json` process: {cli_ms:.0f} ms median")
    print(f"ratio mcp/cli: {mcp_ms / cli_ms:.3f}x")


if __name__ == "__main__":
    main()
