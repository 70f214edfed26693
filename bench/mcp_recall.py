"""Benchmark: the round trip of ``memory_recall`` over stdio, at 1,000 memories.

An agent's MCP client keeps one ``bundlekit mcp`` process and calls tools on
it; the baseline is what an agent without MCP pays for the same answer: a
fresh ``bundlekit memory recall --json`` process on the same tree, in the same
run. Printed as milliseconds and as a ratio, never asserted.

    python bench/mcp_recall.py [--count 1000] [--repeat 20]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
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
