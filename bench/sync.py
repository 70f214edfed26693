"""Benchmark: `sync` of a 10,000-memory tree in which 10 memories changed, against a full `pin`.

    python bench/sync.py                       # 10,000 memories, 10 changed
    python bench/sync.py --memories 2000 --changed 5

Set-up (not timed): a tree of ``--memories`` memories, synced once by a writer (first
publish: built, pinned to the local store, published under a name) and once by a
follower (a second tree). Then ``--changed`` memories are rewritten in the writer's
tree, and each side is timed:

1. ``writer sync``: ``bundlekit.sync`` (resolve, the merge skipped as the tree
   descends from the name's root, build, local pin, publish).
2. ``full pin``: what publishing costs without sync: build the same tree and pin it
   with the local pinner into a fresh, empty store.
3. ``follower sync``: the follower, on its own store, resolves the new record through a
   loopback gateway (``gateway.serve_in_thread`` over the writer's store) and merges it:
   the blocks its store lacks fetched one by one and kept (``Gateways(keep=True)``), the
   base read from its store, three-way merge, the changed files written.
4. ``fresh load``: ``load_bundle`` of the new root from the same gateway into a new
   directory (one CAR request, nothing kept: a follower without a store would do this).

Gateway traffic: the blocks (and their bytes) the gateway read from its store to answer
the follower's sync and the fresh load; the follower's first follow (set-up, its store
empty: one CAR, every block kept) is printed too.

Blocks transferred: the blocks the store gained (what a pinner that holds the previous
bundle, as the local store, kubo or a cluster do, receives) and the blocks a full pin
writes; the CAR sync builds is still whole (its size is printed: a pinner that takes
whole CARs, as a Pinning Service, is sent all of it). Prints times, ratios and the
load average. It asserts nothing: timing targets live here, never in tests.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bundlekit.blockstore import BlockStore
from bundlekit.bundle.build import build_bundle
from bundlekit.bundle.load import load_bundle
from bundlekit.bundle.sources import Gateways
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.gateway.server import serve_in_thread
from bundlekit.memory import Memory, render_memory_file
from bundlekit.names.record import name_from_key
from bundlekit.pinning.orchestrate import pin_all
from bundlekit.syncer import sync
from pinners.local import LocalPinner

T0 = datetime(2026, 4, 14, 12, 0, 0, tzinfo=UTC)


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _memory(key: str, body: str, when: datetime, revision: int) -> str:
    meta = {"name": key, "description": f"what {key} holds", "type": "project", "created": _stamp(T0),
            "updated": _stamp(when), "revision": revision}
    return render_memory_file(meta, body)


def make_tree(root: Path, count: int) -> None:
    """``count`` memories written straight as files (a few seconds instead of a minute of API writes)."""
    root.mkdir(parents=True)
    (root / "timeline").mkdir()
    for i in range(count):
        key = f"project_{i:05d}"
        (root / f"{key}.md").write_text(_memory(key, f"Memory {i}: " + "words " * 40, T0, 1), "utf-8")
    Memory(root).init()


def change(root: Path, changed: int, count: int) -> None:
    mem = Memory(root, clock=lambda: T0 + timedelta(days=1))
    step = max(1, count // changed)
    for i in range(0, step * changed, step):
        key = f"project_{i:05d}"
        mem.write(key, name=key, description=f"what {key} holds", type="project", body=f"Changed memory {i}.")


def _timed(label: str, fn: object) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()  # type: ignore[operator]
    took = time.perf_counter() - start
    print(f"  {label:<16} {took:8.2f} s", flush=True)
    return took, out


def _blocks(store: BlockStore) -> int:
    return sum(1 for _ in store.iter_blocks())


class CountingStore(BlockStore):
    """A store as a gateway serves it, counting the blocks and bytes it hands out."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.blocks = self.bytes = 0

    def get(self, cid: bytes) -> bytes:
        data = super().get(cid)
        self.blocks += 1
        self.bytes += len(data)
        return data

    def take(self) -> tuple[int, int]:
        """The blocks and bytes served since the last call."""
        out = (self.blocks, self.bytes)
        self.blocks = self.bytes = 0
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--changed", type=int, default=10)
    args = parser.parse_args()
    signer = Ed25519Signer.from_seed(bytes([28]) * 32)
    with tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp:
        work = Path(tmp)
        os.environ["BUNDLEKIT_HOME"] = str(work / "home")
        for var in ("BUNDLEKIT_GATEWAYS", "BUNDLEKIT_KUBO_URL", "SOURCE_DATE_EPOCH"):
            os.environ.pop(var, None)
        store = BlockStore()
        writer, follower = work / "writer", work / "follower"
        print(f"set-up: {args.memories} memories, first publish and first follow ...", flush=True)
        make_tree(writer, args.memories)
        (follower / "timeline").mkdir(parents=True)
        Memory(follower).init()
        sync(writer, name_key=signer, pinners=[LocalPinner(store)])
        served = CountingStore(store.root)
        with serve_in_thread(served) as server:
            follows = Gateways([server.url], store=BlockStore(work / "follower-home"))
            t_first, _ = _timed("first follow", lambda: sync(follower, name=name_from_key(signer.public),
                                                            source=follows))
            first = served.take()
            change(writer, args.changed, args.memories)
            print(f"timed ({args.changed} memories changed):", flush=True)
            before = _blocks(store)
            t_sync, report = _timed("writer sync",
                                    lambda: sync(writer, name_key=signer, pinners=[LocalPinner(store)]))
            gained = _blocks(store) - before

            fresh = BlockStore(work / "fresh")

            def full_pin() -> int:
                built = build_bundle(writer, work / "full.car")
                pin_all(built.car, built.root, [LocalPinner(fresh)])
                return built.bytes

            t_pin, car_bytes = _timed("full pin", full_pin)
            written = _blocks(fresh)
            served.take()
            t_follow, _ = _timed("follower sync", lambda: sync(follower, name=name_from_key(signer.public),
                                                               source=follows))
            delta = served.take()
            root = report.root  # type: ignore[attr-defined]
            t_load, _ = _timed("fresh load", lambda: load_bundle(f"ipfs://{root}", source=Gateways([server.url]),
                                                                out_dir=work / "loaded"))
            whole = served.take()
        same = sorted(p.name for p in follower.glob("*.md")) == sorted(p.name for p in writer.glob("*.md"))
    load1, load5, _ = os.getloadavg()
    print(f"blocks: sync added {gained} to a store holding the previous bundle; a full pin writes {written} "
          f"({written / max(gained, 1):.0f}x); the CAR built is whole either way: {car_bytes:,} bytes")
    print(f"writer: sync {t_sync:.2f} s vs full pin {t_pin:.2f} s = {t_sync / t_pin:.2f}x")
    print(f"follower: sync {t_follow:.2f} s vs fresh load {t_load:.2f} s = {t_follow / t_load:.2f}x; "
          f"trees hold the same memories: {same}")
    print(f"gateway: follower sync fetched {delta[0]} blocks, {delta[1]:,} bytes; a fresh load {whole[0]} blocks, "
          f"{whole[1]:,} bytes ({whole[0] / max(delta[0], 1):.0f}x blocks, {whole[1] / max(delta[1], 1):.0f}x bytes); "
          f"the first follow (empty store: one CAR, its blocks kept) {first[0]} blocks, {first[1]:,} bytes "
          f"in {t_first:.2f} s")
    print(f"load average {load1:.2f} {load5:.2f} (1, 5 min); python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
