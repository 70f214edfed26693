"""Benchmark (issue 37): bundlekit's sync against git on the same trees and the same edits, in one run.

    python bench/sync_vs_git.py                # 1,000 and 10,000 memories, k = 10
    python bench/sync_vs_git.py --100k         # and 100,000 (the follower's time there against 10,000)
    python bench/sync_vs_git.py --sizes 1000 --runs 3
    python bench/sync_vs_git.py --python /tmp/venv/bin/python   # bundlekit run by another interpreter

``--python`` names the interpreter that runs bundlekit's commands (this checkout, through ``PYTHONPATH``), for
instance a virtual environment made with ``python -m venv V && V/bin/pip install .``: what a user's install
imports, without the packages a development machine adds beside it (here ``trio``, which httpcore imports when
it is installed, and ``rich``/``pygments``, which httpx's command-line module does). The report names it.

Per size (``bench.trees``: realistic trees, the same bytes for both tools), set-up, not timed: a writer's tree
published once (``bundlekit sync --name-key``, local pinner, into the writer's store) and the same files committed
to a bare git repository over ``file://`` and pushed. Timed, as fresh processes (``PYTHONDONTWRITEBYTECODE``
unset):

* first follow: ``bundlekit sync --name N --gateway URL`` into an empty tree and store (the gateway: a
  loopback ``gateway.serve_in_thread`` over the writer's store, counting the bytes it serves) vs ``git clone``,
  ``--first`` pairs (default 3), the order alternated (bundlekit first, then git first), each into a new folder
  kept until the end, each follow through a gateway of its own (cold, as git's ``upload-pack`` is at each
  clone): both create ~10,000 files, and on ext4 without a journal (this machine's ``/``) every new inode
  skips each inode of its block group freed in the last 60 to 360 seconds (``fs/ext4/ialloc.c``,
  ``recently_deleted``), a kernel cost of several seconds that falls on whichever tool creates its files
  first after a burst of deletions (a previous size's temporary folder, a test run's): one pair measured
  bundlekit in that state and git after it;
* then ``--runs`` rounds, interleaved: the same k memories rewritten in both trees (``bench.trees.edit_tree``,
  one seed per round), the writer's ``bundlekit sync --name-key`` vs ``git commit -qam && git push -q``, the
  follower's ``bundlekit sync --name`` vs ``git pull -q``, and the bytes each follower downloaded (bundlekit:
  what the gateway served; git: what the clone's object store grew by).

Prints medians and ratios against the targets (writer <= 5x, follower <= 5x, bytes <= 20x, first follow <= 3x,
the follower at 100,000 within 1.5x of 10,000) and the load average. It asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.trees import edit_tree, generate_tree  # noqa: E402 - after the repository is on the path
from bundlekit.blockstore import BlockStore  # noqa: E402
from bundlekit.gateway.server import serve_in_thread  # noqa: E402

TARGETS = {"writer": 5.0, "follower": 5.0, "bytes": 20.0, "first follow": 3.0}


class CountingStore(BlockStore):
    """The writer's store as the gateway serves it, counting the bytes it hands out."""

    served = 0

    def get(self, cid: bytes) -> bytes:
        data = super().get(cid)
        CountingStore.served += len(data)
        return data


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "BUNDLEKIT_GATEWAYS")}
    env.update(BUNDLEKIT_HOME=str(home), PYTHONPATH=str(REPO))
    return env


def _timed(args: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - start


#: The interpreter that runs bundlekit's commands (``--python``).
PYTHON = sys.executable


def _bk(*args: str) -> list[str]:
    return [PYTHON, "-m", "bundlekit", *args]


def _git(*args: str) -> list[str]:
    return ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", *args]


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _copy_files(src: Path, dst: Path) -> None:
    """The tree's memory files and timeline (what git tracks), without the derived index."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".bundlekit*", "MEMORY.md"), dirs_exist_ok=True)


def bench_size(n: int, k: int, runs: int, work: Path, first: int = 3) -> dict[str, float]:
    """Every figure of one size: medians of ``first`` first-follow pairs and ``runs`` interleaved rounds
    (seconds, bytes)."""
    writer, wgit, bare = work / "w", work / "wgit", work / "bare.git"
    keys = generate_tree(writer, n)
    key, home_w, home_f = work / "name.key", work / "home-w", work / "home-f"
    name = subprocess.run(_bk("name", "create", "--name-key", str(key)), env=_env(home_w), check=True,
                          capture_output=True, text=True).stdout.strip()
    subprocess.run(_bk("sync", "-d", str(writer), "--name-key", str(key)), env=_env(home_w), check=True,
                   capture_output=True)
    _copy_files(writer, wgit)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-qm", "initial"),
                 ("remote", "add", "origin", f"file://{bare}"), ("push", "-q", "-u", "origin", "main")):
        subprocess.run(_git(*args), cwd=wgit, check=True)
    out: dict[str, list[float]] = {}

    def note(what: str, value: float) -> None:
        out.setdefault(what, []).append(value)

    for pair in range(first):
        # Pair 0's follower and clone take the rounds; the others stay untouched until the end (no deletion).
        tag = "" if pair == 0 else f"-{pair}"
        follower, clone, env_f = work / f"f{tag}", work / f"fgit{tag}", _env(work / f"home-f{tag}")
        follower.mkdir()
        subprocess.run(_bk("memory", "init", "-d", str(follower)), env=env_f, check=True, capture_output=True)
        for tool in (("bk", "git") if pair % 2 == 0 else ("git", "bk")):
            if tool == "git":
                note("git clone", _timed(["git", "clone", "-q", f"file://{bare}", str(clone)]))
                note("git clone bytes", _du(clone / ".git"))
                continue
            # A gateway of its own, cold as git's upload-pack is at each clone (it keeps the CARs it sends).
            with serve_in_thread(store=CountingStore(home_w)) as server:
                CountingStore.served = 0
                note("bk first follow", _timed(_bk("sync", "-d", str(follower), "--name", name, "--gateway",
                                                   server.url), env=env_f))
                note("bk first follow bytes", CountingStore.served)
    with serve_in_thread(store=CountingStore(home_w)) as server:
        follower, env_f = work / "f", _env(home_f)
        for run in range(runs):
            edit_tree(writer, keys, k, seed=100 + run)
            edit_tree(wgit, keys, k, seed=100 + run)
            note("bk writer", _timed(_bk("sync", "-d", str(writer), "--name-key", str(key)), env=_env(home_w)))
            start = time.perf_counter()
            subprocess.run(_git("commit", "-qam", f"round {run}"), cwd=wgit, check=True)
            subprocess.run(_git("push", "-q"), cwd=wgit, check=True)
            note("git commit+push", time.perf_counter() - start)
            CountingStore.served = 0
            note("bk follower", _timed(_bk("sync", "-d", str(follower), "--name", name, "--gateway", server.url),
                                       env=env_f))
            note("bk follower bytes", CountingStore.served)
            before = _du(work / "fgit" / ".git" / "objects")
            note("git pull", _timed(_git("pull", "-q"), cwd=work / "fgit"))
            note("git pull bytes", max(1, _du(work / "fgit" / ".git" / "objects") - before))
    return {what: statistics.median(values) for what, values in out.items()}


def report(n: int, m: dict[str, float]) -> None:
    rows: list[tuple[str, float, str, float, str]] = [
        ("writer sync vs commit && push", m["bk writer"], "s", m["git commit+push"], "writer"),
        ("follower sync vs pull", m["bk follower"], "s", m["git pull"], "follower"),
        ("follower bytes vs git's objects", m["bk follower bytes"], "B", m["git pull bytes"], "bytes"),
        ("first follow vs clone", m["bk first follow"], "s", m["git clone"], "first follow"),
        ("first follow bytes vs clone", m["bk first follow bytes"], "B", m["git clone bytes"], ""),
    ]
    print(f"\n{n:,} memories")
    print(f"| {'case':34} | {'bundlekit':>12} | {'git':>12} | {'ratio':>7} | target |")
    for label, ours, unit, theirs, target in rows:
        fmt: Callable[[float], str] = (lambda v: f"{v:.3f} s") if unit == "s" else (lambda v: f"{v:,.0f} B")
        goal = f"<= {TARGETS[target]:g}x" if target else ""
        print(f"| {label:34} | {fmt(ours):>12} | {fmt(theirs):>12} | {ours / theirs:6.1f}x | {goal:6} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000, 10_000])
    parser.add_argument("--100k", dest="big", action="store_true", help="also 100,000 memories")
    parser.add_argument("--changed", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--first", type=int, default=3,
                        help="first follow / clone pairs, the order alternated")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs bundlekit's commands")
    args = parser.parse_args()
    global PYTHON
    PYTHON = args.python
    print(f"bundlekit runs under {PYTHON}")
    sizes = [*args.sizes, *([100_000] if args.big else [])]
    results: dict[int, dict[str, float]] = {}
    # One folder for every size, removed at the end: a size's thousands of files deleted just before the next
    # size's first follow slowed its file creations by seconds (module docstring).
    with tempfile.TemporaryDirectory(prefix="bench-sync-git-") as work:
        for n in sizes:
            (Path(work) / str(n)).mkdir()
            results[n] = bench_size(n, args.changed, args.runs, Path(work) / str(n), args.first)
            report(n, results[n])
    if 10_000 in results and 100_000 in results:
        ratio = results[100_000]["bk follower"] / results[10_000]["bk follower"]
        print(f"\nfollower k={args.changed} at 100,000 vs 10,000: {ratio:.2f}x (target <= 1.5x)")
    with open("/proc/loadavg", encoding="ascii") as fh:
        print(f"\nload average: {fh.read().strip()}")


if __name__ == "__main__":
    main()
