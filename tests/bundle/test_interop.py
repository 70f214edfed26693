"""Interop with the reference tool: ipfs-car reads our bundle CAR and re-packs it to the same root."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bundlekit.bundle.build import BuildOptions, build_bundle
from tests import reference_tools

from .conftest import CREATED

IPFS_CAR = reference_tools.ipfs_car()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(isinstance(IPFS_CAR, str), reason=f"reference ipfs-car unavailable: {IPFS_CAR}"),
]


def _ipfs_car(*args: str) -> str:
    done = subprocess.run([*IPFS_CAR, *args], capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


def test_ipfs_car_lists_the_bundle_layout(tree: Path, tmp_path: Path) -> None:
    result = build_bundle(tree, tmp_path / "b.car", options=BuildOptions(created=CREATED))
    listed = {line.strip() for line in _ipfs_car("ls", str(result.car)).splitlines()}
    assert {"./manifest.json", "./memory/MEMORY.md", "./memory/user_role.md",
            "./memory/timeline/2026-04-14.jsonl"} <= listed
    assert _ipfs_car("roots", str(result.car)).split()[-1] == result.root_cid


def test_ipfs_car_repacks_the_unpacked_bundle_to_the_same_root(tree: Path, tmp_path: Path) -> None:
    result = build_bundle(tree, tmp_path / "b.car", options=BuildOptions(created=CREATED))
    _ipfs_car("unpack", str(result.car), "--output", str(tmp_path / "out"))
    repacked = _ipfs_car("pack", str(tmp_path / "out"), "--no-wrap", "--output", str(tmp_path / "x.car"))
    assert repacked.split()[-1] == result.root_cid
