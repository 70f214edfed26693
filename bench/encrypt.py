"""Benchmark: what encryption costs, as ratios measured against a baseline in the same run.

    python bench/encrypt.py                 # the benchmark tree: 10,000 files of ~2 KB + 50 of 5 MB
    python bench/encrypt.py --scale 0.1     # a tenth of it, for a quick look
    python bench/encrypt.py --keep DIR      # build (or reuse) the tree in DIR

Three measurements, each the best of ``--repeat`` alternating runs:

1. ``encrypt``: ``crypto.encrypt_bytes`` and ``encrypt_stream`` alone over every file (throughput).
2. ``import``: the UnixFS importer over the files, plain vs encrypt-then-import
   (the cost encryption adds to the hashing and block building).
3. ``build``: ``bundle.build_bundle`` of the tree into a CAR, without a key vs with
   a raw key file (the end-to-end figure; target <= 1.3x).

It prints numbers and ratios; it asserts nothing (timing targets live here, never in tests).
"""

from __future__ import annotations

import argparse
import io
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from bundlekit import crypto
from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.crypto._keys import RawKeyFile
from bundlekit.unixfs.importer import NullSink, import_tree
from bundlekit.unixfs.profiles import get_profile
from _home import own_home  # bench/_home.py: never the user's data directory

WORDS = (
    "drill session knee bike cool-down season focus tempo recovery coach week plan sprint "
    "stretch match review tactics squad pass press shape width depth rest hydration sleep"
).split()
TYPES = ("user", "feedback", "project", "reference")


def _body(rng: random.Random, size: int) -> str:
    lines, have = [], 0
    while have < size:
        line = " ".join(rng.choice(WORDS) for _ in range(12)) + ".\n"
        lines.append(line)
        have += len(line)
    return "".join(lines)[:size]


def _memory_file(key: str, rng: random.Random, size: int) -> str:
    return (
        "---\n"
        f"name: Note {key}\n"
        f"description: benchmark memory {key}\n"
        f"type: {TYPES[hash(key) % len(TYPES)]}\n"
        "created: '2026-04-05T10:30:00Z'\n"
        "updated: '2026-04-05T10:30:00Z'\n"
        "revision: 1\n"
        "---\n\n" + _body(rng, size) + "\n"
    )


def make_tree(root: Path, small: int, large: int, small_size: int, large_size: int) -> None:
    """Write the benchmark memory tree (deterministic content, no timeline)."""
    rng = random.Random(1)
    root.mkdir(parents=True, exist_ok=True)
    for i in range(small):
        (root / f"note_{i:05d}.md").write_text(_memory_file(f"note_{i:05d}", rng, small_size))
    for i in range(large):
        (root / f"big_{i:02d}.md").write_text(_memory_file(f"big_{i:02d}", rng, large_size))


def best(fns: Sequence[Callable[[], object]], repeat: int) -> list[float]:
    """The best time of each of ``fns`` over ``repeat`` rounds; every round runs them in turn,
    so warm-up and drift fall on both sides of a ratio alike."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, spent in zip(fns, times):
            start = time.perf_counter()
            fn()
            spent.append(time.perf_counter() - start)
    return [min(spent) for spent in times]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the benchmark tree")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="build the tree in (or reuse it from) this directory")
    parser.add_argument("--no-build", action="store_true", help="skip the (slow) end-to-end build measurement")
    args = parser.parse_args(argv)

    small, large = max(1, round(10_000 * args.scale)), max(1, round(50 * args.scale))
    with tempfile.TemporaryDirectory(prefix="bundlekit-bench-") as scratch:
        own_home(Path(scratch))
        tree = args.keep or Path(scratch) / "tree"
        if not (tree / "note_00000.md").exists():
            print(f"writing the tree: {small} files of ~2 KB + {large} of 5 MB ...", file=sys.stderr)
            make_tree(tree, small, large, 2_000, 5 * 1024 * 1024)
        files = [(p.name, p.read_bytes()) for p in sorted(tree.glob("*.md"))]
        total = sum(len(d) for _, d in files)
        key, _params = RawKeyFile(os.urandom(32)).new_bundle_key("bench")
        print(f"tree: {len(files)} files, {total / 1e6:.1f} MB", file=sys.stderr)

        def encrypt_all() -> list[tuple[str, bytes]]:
            out = []
            for name, data in files:
                out.append((name + ".enc", crypto.encrypt_bytes(data, key, "memory/" + name + ".enc")))
            return out

        def encrypt_streaming() -> None:
            for name, data in files:
                crypto.encrypt_stream(io.BytesIO(data), io.BytesIO(), key, "memory/" + name + ".enc")

        large = [(name, data) for name, data in files if len(data) >= 1_000_000]
        large_total = sum(len(d) for _, d in large)
        aead = AESGCM(os.urandom(32))

        def aes_gcm_floor() -> None:
            # The hardware baseline: one AES-256-GCM call over each whole file, no chunking.
            for _name, data in large:
                aead.encrypt(bytes(12), data, None)

        def encrypt_large_streaming() -> None:
            for name, data in large:
                crypto.encrypt_stream(io.BytesIO(data), io.BytesIO(), key, "memory/" + name + ".enc")

        t_enc, t_stream, t_floor, t_large = best(
            [encrypt_all, encrypt_streaming, aes_gcm_floor, encrypt_large_streaming], args.repeat
        )
        print(f"encrypt (bytes)    {t_enc:8.3f} s   {total / t_enc / 1e6:8.1f} MB/s   (all files)")
        print(f"encrypt (stream)   {t_stream:8.3f} s   {total / t_stream / 1e6:8.1f} MB/s   (all files)")
        if large:
            floor_rate = large_total / t_floor / 1e6
            rate = large_total / t_large / 1e6
            print(f"AES-256-GCM floor  {t_floor:8.3f} s   {floor_rate:8.1f} MB/s   ({len(large)} files of 5 MB, one call each)")
            print(
                f"encrypt (stream)   {t_large:8.3f} s   {rate:8.1f} MB/s   ({len(large)} files of 5 MB; "
                f"{rate / floor_rate:.2f}x the floor's speed; target >= 1000 MB/s)"
            )

        profile = get_profile()
        t_plain, t_both = best(
            [lambda: import_tree(iter(files), NullSink(), profile),
             lambda: import_tree(iter(encrypt_all()), NullSink(), profile)],
            args.repeat,
        )
        print(f"import plain       {t_plain:8.3f} s")
        print(f"encrypt + import   {t_both:8.3f} s   ratio {t_both / t_plain:.2f}x (target <= 1.30x)")

        if args.no_build:
            return 0
        spec = RawKeyFile(os.urandom(32))
        car = Path(scratch) / "out.car"
        t_build_plain, t_build_enc = best(
            [lambda: build_bundle(tree, car, options=BuildOptions(namespace="bench")),
             lambda: build_bundle(tree, car, key=spec, options=BuildOptions(namespace="bench"))],
            args.repeat,
        )
        print(f"build plain        {t_build_plain:8.3f} s")
        print(f"build encrypted    {t_build_enc:8.3f} s   ratio {t_build_enc / t_build_plain:.2f}x (target <= 1.30x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
