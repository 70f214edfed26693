#!/usr/bin/env python3
"""Benchmark ``bundlekit store verify`` (``BlockStore.verify``) on a large store.

    python bench/store_verify.py [--blocks 20000] [--pins 20]

Builds a scratch store of ``--blocks`` raw blocks of 1 KiB (``fsync=False``), ``--pins`` of them pinned
under small directory nodes, then measures, in the same run:

* the baseline: every block read back through ``BlockStore.get`` (re-hashed) over ``iter_blocks``, the
  way a caller checked a store before ``verify`` existed;
* ``verify()`` (blocks re-hashed, pins walked, records checked).

It prints seconds, the ratio, and the peak of memory traced for each (tracemalloc): the point is that
``verify``'s peak does not grow with the store (no list of every CID). It asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from bundlekit.blockstore import BlockStore
from bundlekit.ipld.cid import DAG_PB, RAW, make_cid
from bundlekit.ipld.dagpb import PBLink, encode_node
from _home import own_home  # bench/_home.py: never the user's data directory


def make_store(root: Path, blocks: int, pins: int) -> BlockStore:
    store = BlockStore(root, fsync=False)
    batch: list[tuple[bytes, bytes]] = []
    leaves: list[bytes] = []
    for i in range(blocks):
        data = i.to_bytes(8, "big") * 128
        cid = make_cid(1, RAW, data)
        batch.append((cid, data))
        if i < pins * 10:
            leaves.append(cid)
        if len(batch) == 1024:
            store.put_many(batch)
            batch = []
    store.put_many(batch)
    for p in range(pins):
        node = encode_node([PBLink(c, f"f{n}".encode(), 1024) for n, c in enumerate(leaves[p * 10:(p + 1) * 10])], None)
        root_cid = make_cid(1, DAG_PB, node)
        store.put(root_cid, node)
        store.pin(root_cid, f"pin{p}")
    return store


def read_every_block(store: BlockStore) -> None:
    for cid in store.iter_blocks():
        store.get(cid)


def measured(run: Callable[[], object]) -> tuple[float, int]:
    tracemalloc.start()
    started = time.perf_counter()
    try:
        run()
        elapsed = time.perf_counter() - started
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return elapsed, peak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", type=int, default=20_000)
    parser.add_argument("--pins", type=int, default=20)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-store-verify-") as scratch:
        own_home(Path(scratch))
        store = make_store(Path(scratch), args.blocks, args.pins)
        base_s, base_peak = measured(lambda: read_every_block(store))
        verify_s, verify_peak = measured(store.verify)
    print(f"blocks {args.blocks}, pins {args.pins}")
    print(f"baseline (get every block over iter_blocks): {base_s:.2f} s, peak {base_peak / 1e6:.1f} MB")
    print(f"store verify:                                {verify_s:.2f} s, peak {verify_peak / 1e6:.1f} MB")
    print(f"ratio verify / baseline: time {verify_s / base_s:.2f}x, peak {verify_peak / max(base_peak, 1):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
