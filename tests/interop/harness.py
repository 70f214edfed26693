"""Run the same tree through bundlekit and through the reference tools; compare CIDs.

A ``Config`` is one way of importing: a bundlekit profile with overrides on
one side, and the reference-tool job that must give the same CIDs on the
other (``reference.mjs`` documents the job format). The mapping:

* ``unixfs-v1-2025`` / ``unixfs-v0-2015``: ipfs-unixfs-importer 17 with that
  ``profile`` option; ``kubo-cidv1``: the importer's defaults.
* ``ipfs-car``: ipfs-car 3.1.0 (its library path in-process, or its command
  line).
* Overrides: ``chunk_size`` -> ``fixedSize({chunkSize})``, ``max_links`` ->
  ``balanced({maxChildrenPerNode})``, ``cid_version`` -> ``cidVersion``,
  ``raw_leaves`` -> ``rawLeaves``, ``hamt_threshold`` ->
  ``shardSplitThresholdBytes`` (not a user option of bundlekit: it lets small
  directories exercise deep HAMTs). For ``ipfs-car`` only ``chunk_size`` and
  ``max_links`` exist (its chunker and layout width).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bundlekit.ipld.cid import cid_to_str
from bundlekit.unixfs.importer import NullSink, import_path
from bundlekit.unixfs.profiles import Profile, get_profile

HERE = Path(__file__).resolve().parent
REQUIRED = {"ipfs-car": "3.1.0", "ipfs-unixfs-importer": "17.1.1"}


def _reference_tools() -> Any:
    """``tests/reference_tools.py``, loaded by its path (this module is loaded by path too, by scripts)."""
    spec = importlib.util.spec_from_file_location("reference_tools", HERE.parent / "reference_tools.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def find_reference() -> tuple[str, Path] | str:
    """``(node, node_modules)`` when the reference tools can run, else the reason they cannot."""
    found: tuple[str, Path] | str = _reference_tools().find(REQUIRED)
    return found


@dataclass(frozen=True)
class Config:
    """One import configuration: a profile name and overrides."""

    profile: str
    overrides: tuple[tuple[str, Any], ...] = ()
    hidden: bool = False

    @property
    def label(self) -> str:
        parts = [self.profile] + [f"{k}={str(v).lower()}" for k, v in self.overrides]
        if self.hidden:
            parts.append("hidden")
        return " ".join(parts)

    def bundlekit_profile(self) -> Profile:
        opts = dict(self.overrides)
        threshold = opts.pop("hamt_threshold", None)
        profile = get_profile(self.profile, **opts)
        if threshold is not None:
            profile = dataclasses.replace(profile, hamt_threshold=threshold)
        return profile

    def job(self, job_id: str, tree: Path) -> dict[str, Any]:
        opts = dict(self.overrides)
        if self.profile == "ipfs-car":
            extra = set(opts) - {"chunk_size", "max_links"}
            if extra:
                raise ValueError(f"ipfs-car cannot express {sorted(extra)}")
            job: dict[str, Any] = {"id": job_id, "tool": "ipfs-car", "dir": str(tree), "hidden": self.hidden}
            if "chunk_size" in opts:
                job["chunkSize"] = opts["chunk_size"]
            if "max_links" in opts:
                job["width"] = opts["max_links"]
            return job
        options: dict[str, Any] = {}
        if self.profile in ("unixfs-v1-2025", "unixfs-v0-2015"):
            options["profile"] = self.profile
        names = {
            "chunk_size": "chunkSize",
            "max_links": "maxLinks",
            "cid_version": "cidVersion",
            "raw_leaves": "rawLeaves",
            "hamt_threshold": "shardSplitThresholdBytes",
        }
        for key, value in opts.items():
            options[names[key]] = value
        return {"id": job_id, "tool": "importer", "dir": str(tree), "hidden": self.hidden, "options": options}


def cfg(profile: str, hidden: bool = False, **overrides: Any) -> Config:
    return Config(profile, tuple(sorted(overrides.items())), hidden)


def ours(tree: Path, config: Config) -> dict[str, str]:
    """Every path's CID as bundlekit computes it ("" = the root)."""
    result = import_path(tree, NullSink(), config.bundlekit_profile(), hidden=config.hidden)
    return {e.path: cid_to_str(e.cid) for e in result.entries}


@dataclass
class Reference:
    """A runnable reference-tool installation."""

    node: str
    modules: Path
    runs: int = field(default=0)

    def run(self, jobs: list[dict[str, Any]], timeout: float = 600) -> dict[str, Any]:
        """Run ``reference.mjs`` over ``jobs`` in one node process; return its JSON."""
        with tempfile.TemporaryDirectory(prefix="bk-ref-") as scratch:
            work = Path(scratch)
            (work / "node_modules").symlink_to(self.modules.resolve(), target_is_directory=True)
            shutil.copy(HERE / "reference.mjs", work / "reference.mjs")
            (work / "jobs.json").write_text(json.dumps({"jobs": jobs}), encoding="utf-8")
            proc = subprocess.run(
                [self.node, str(work / "reference.mjs"), str(work / "jobs.json")],
                cwd=work,
                capture_output=True,
                timeout=timeout,
                check=False,
            )
            self.runs += 1
            if os.environ.get("REFERENCE_TIMING"):
                sys.stderr.write(proc.stderr.decode(errors="replace"))
            if proc.returncode != 0:
                raise RuntimeError(
                    f"reference.mjs failed ({proc.returncode}): {proc.stderr.decode(errors='replace')[-2000:]}"
                )
            out: dict[str, Any] = json.loads(proc.stdout)
            return out


def diff(expected: dict[str, str], got: dict[str, str]) -> list[str]:
    """Readable differences between two path -> CID maps (empty when equal)."""
    lines = []
    for path in sorted(set(expected) | set(got)):
        e, g = expected.get(path), got.get(path)
        if e != g:
            lines.append(f"{path or '<root>'!r}: reference {e}, bundlekit {g}")
    return lines
