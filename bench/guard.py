#!/usr/bin/env python3
"""Benchmark the secret guard (``bundlekit._secrets.find_secrets``).

    python bench/guard.py [--files 10000] [--repeat 5]

Scans the benchmark memory text (bench/encrypt.py's generator: front matter and
prose, ~2 KB a file) two ways, each the best of ``--repeat`` runs:

* per file, as a build calls the guard (one call per memory);
* as one text (all the files joined).

The baseline, measured in the same run, is the scan before issue 16: every
rule's pattern over the whole text. It prints MB/s and ratios; it asserts
nothing. Target (issue 16): at least 300 MB/s.
"""

from __future__ import annotations

import argparse
import random
import sys

from encrypt import _memory_file, best

from bundlekit._secrets import SECRET_RULES, find_secrets


def plain_scan(text: str) -> int:
    """The pre-trigger scan: every pattern over the whole text (the baseline)."""
    found = 0
    for rule in SECRET_RULES:
        for match in rule.pattern.finditer(text):
            if rule.accept(match.group(0)):
                text.count("\n", 0, match.start())
                found += 1
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    rng = random.Random(1)
    files = [_memory_file(f"note_{i:05d}", rng, 2_000) for i in range(args.files)]
    text = "".join(files)
    mb = len(text.encode()) / 1e6
    print(f"text: {len(files)} memories, {mb:.1f} MB")
    for label, new, old in (
        ("per file", lambda: [find_secrets(f) for f in files], lambda: [plain_scan(f) for f in files]),
        ("one text", lambda: find_secrets(text), lambda: plain_scan(text)),
    ):
        t_new, t_old = best([new, old], args.repeat)
        print(
            f"guard {label:9s} {mb / t_new:7.0f} MB/s (target >= 300)   "
            f"plain scan {mb / t_old:6.0f} MB/s   {t_old / t_new:4.1f}x faster"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
