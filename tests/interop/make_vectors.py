#!/usr/bin/env python3
"""Regenerate tests/interop/vectors/*.json: reference-tool CIDs for seeded trees.

Each scenario names a ``treegen`` builder and its arguments (the tree is a
pure function of them), and the configurations to record. The CIDs come from
ipfs-unixfs-importer 17.1.1 / ipfs-car 3.1.0 through ``reference.mjs``; the
regression tests (``test_vectors.py``) rebuild each tree and compare without
node. Large trees record the root CID and a SHA-256 over every
``path<TAB>cid`` line (sorted) instead of listing thousands of paths.

    python tests/interop/make_vectors.py

The reference tools are the ones ``npm ci`` installs in ``tests/`` (``tests/package.json``).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
VECTORS = HERE / "vectors"
#: Trees with more paths than this record a digest of their entries instead of the list.
MAX_LISTED = 64


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"interop_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def entries_digest(entries: dict[str, str]) -> str:
    """SHA-256 over ``path\\tcid\\n`` lines sorted by path: one value for a whole tree."""
    text = "".join(f"{p}\t{c}\n" for p, c in sorted(entries.items()))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _c(profile: str, hidden: bool = False, **overrides: Any) -> dict[str, Any]:
    return {"profile": profile, "hidden": hidden, "overrides": overrides}


T = 262144
ALL4 = [_c("unixfs-v1-2025"), _c("unixfs-v0-2015"), _c("kubo-cidv1"), _c("ipfs-car")]

SCENARIOS: list[dict[str, Any]] = []

# ipfs-car: HAMT above 1000 entries; sub-directories count, dropped empty ones and dot-files do not.
for n, subdirs, empty in ((1000, 0, 0), (1000, 5, 0), (1001, 0, 0), (1001, 5, 0), (1001, 0, 1), (1002, 0, 2)):
    SCENARIOS.append(
        {
            "name": f"count-{n}-sub{subdirs}-empty{empty}",
            "description": f"{n} entries ({subdirs} non-empty sub-directories, {empty} empty ones) plus a dot-file",
            "build": "count_dir",
            "args": {"seed": n * 10 + subdirs + empty, "entries": n, "subdirs": subdirs, "empty_dirs": empty},
            "configs": [_c("ipfs-car"), _c("ipfs-car", hidden=True), _c("unixfs-v1-2025"), _c("kubo-cidv1")],
        }
    )

# unixfs-v1-2025: the exact flat block size, one byte under, on, and over 256 KiB.
for target in (T - 1, T, T + 1):
    SCENARIOS.append(
        {
            "name": f"block-bytes-{target}",
            "description": f"flat block of exactly {target} bytes (raw leaves, Tsize varints of 1 and 2 bytes)",
            "build": "size_threshold_dir",
            "args": {
                "seed": target,
                "measure": "block-bytes",
                "target": target,
                "cid_len": 36,
                "count": 1100,
                "sizes": [0, 1, 127, 128, 5000],
            },
            "configs": [_c("unixfs-v1-2025")],
        }
    )
    SCENARIOS.append(
        {
            "name": f"block-bytes-{target}-empty-dir-and-subdir",
            "description": f"flat block of exactly {target} bytes counting an empty directory; "
            "a non-empty sub-directory is not counted (the importer decides before it has a CID)",
            "build": "size_threshold_dir",
            "args": {
                "seed": target + 7,
                "measure": "block-bytes",
                "target": target,
                "cid_len": 36,
                "count": 1000,
                "sizes": [0, 200],
                "subdir": True,
                "empty_dir_cid_len": 36,
            },
            "configs": [_c("unixfs-v1-2025")],
        }
    )
    SCENARIOS.append(
        {
            "name": f"block-bytes-{target}-dagpb-leaves",
            "description": f"flat block of exactly {target} bytes with CIDv1 dag-pb leaves (Tsize = leaf block length)",
            "build": "size_threshold_dir",
            "args": {
                "seed": target + 11,
                "measure": "block-bytes",
                "target": target,
                "cid_len": 36,
                "count": 1100,
                "sizes": [0, 1, 120, 130],
                "dagpb_leaves": True,
            },
            "configs": [_c("unixfs-v1-2025", raw_leaves=False)],
        }
    )

# kubo's estimate (name bytes + CID bytes) on and over 256 KiB, for 36-byte and 34-byte CIDs.
for target in (T, T + 1):
    for profile, cid_len in (("kubo-cidv1", 36), ("unixfs-v0-2015", 34)):
        SCENARIOS.append(
            {
                "name": f"links-bytes-{target}-{profile}",
                "description": f"kubo link estimate of exactly {target} under {profile} ({cid_len}-byte CIDs), "
                "an empty directory counted, a non-empty sub-directory not",
                "build": "size_threshold_dir",
                "args": {
                    "seed": target + cid_len,
                    "measure": "links-bytes",
                    "target": target,
                    "cid_len": cid_len,
                    "count": 1100,
                    "sizes": [0, 3],
                    "subdir": True,
                    "empty_dir_cid_len": cid_len,
                },
                "configs": [_c(profile)],
            }
        )

# Random trees with deep balanced layouts and every override the tools express.
for seed, chunk, max_links in ((1, 1, 2), (2, 7, 3), (3, 100, 4), (4, 1000, 5), (5, 4096, 2)):
    configs = ALL4 + [_c(p, hidden=True) for p in ("unixfs-v1-2025", "ipfs-car")]
    configs.append(_c("ipfs-car", chunk_size=chunk, max_links=max_links))
    for profile in ("unixfs-v1-2025", "unixfs-v0-2015", "kubo-cidv1"):
        for cv in (0, 1):
            for rl in (True, False):
                configs.append(
                    _c(profile, chunk_size=chunk, max_links=max_links, cid_version=cv, raw_leaves=rl)
                )
    SCENARIOS.append(
        {
            "name": f"random-{seed}",
            "description": f"random nested tree (unicode names, dot-files, empty dirs), sizes around {chunk}-byte chunks "
            f"and {max_links}-link levels",
            "build": "random_tree",
            "args": {"seed": seed, "chunk": chunk, "max_links": max_links},
            "configs": configs,
        }
    )

# Size thresholds under 4 bytes (not reachable through bundlekit's options): the
# importer writes an empty directory flat whatever the threshold; bundlekit
# measures its block as 4 bytes and shards it. Recorded as a known mismatch.
SCENARIOS.append(
    {
        "name": "empty-dirs-size-threshold-under-4",
        "description": "nested tree with empty directories under a size threshold of 0, 1 and 3 bytes",
        "build": "random_tree",
        "args": {"seed": 1011, "chunk": 64, "max_links": 3},
        "configs": [_c("unixfs-v1-2025", hamt_threshold=t) for t in (0, 1, 3)],
    }
)


def config_of(harness: ModuleType, c: dict[str, Any]) -> Any:
    return harness.cfg(c["profile"], hidden=c["hidden"], **c["overrides"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="regenerate only scenarios whose name starts with this")
    args = parser.parse_args()
    harness = _load("harness")
    treegen = _load("treegen")
    found = harness.find_reference()
    if isinstance(found, str):
        print(f"error: {found}", file=sys.stderr)
        return 1
    ref = harness.Reference(*found)
    VECTORS.mkdir(exist_ok=True)
    scenarios = [s for s in SCENARIOS if not args.only or s["name"].startswith(args.only)]
    with tempfile.TemporaryDirectory(prefix="bk-vectors-") as scratch:
        jobs = []
        for s in scenarios:
            tree = Path(scratch) / s["name"]
            kwargs = dict(s["args"])
            getattr(treegen, s["build"])(tree, kwargs.pop("seed"), **kwargs)
            for i, c in enumerate(s["configs"]):
                jobs.append(config_of(harness, c).job(f"{s['name']}|{i}", tree))
        results = ref.run(jobs)
    for s in scenarios:
        records = []
        for i, c in enumerate(s["configs"]):
            r = results[f"{s['name']}|{i}"]
            record: dict[str, Any] = {"config": c, "label": config_of(harness, c).label, "root": r["root"]}
            if len(r["entries"]) <= MAX_LISTED:
                record["entries"] = r["entries"]
            else:
                record["paths"] = len(r["entries"])
                record["entries_sha256"] = entries_digest(r["entries"])
            records.append(record)
        out = {
            "name": s["name"],
            "description": s["description"],
            "tools": {"ipfs-unixfs-importer": "17.1.1", "ipfs-car": "3.1.0"},
            "build": s["build"],
            "args": s["args"],
            "results": records,
        }
        if "known_mismatch" in s:
            out["known_mismatch"] = s["known_mismatch"]
        (VECTORS / f"{s['name']}.json").write_text(
            json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        print(f"{s['name']}: {len(records)} configurations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
