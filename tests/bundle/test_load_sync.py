"""A loaded tree is made durable in one flush before it is renamed into place, not an fsync per file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

import bundlekit._fs as fs
from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.bundle.load import load_bundle

from .conftest import CREATED


def test_a_loaded_tree_is_flushed_once_before_it_is_renamed_into_place(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    car = build_bundle(tree, tmp_path / "b.car", options=BuildOptions(created=CREATED)).car
    dest = tmp_path / "out"
    flushes: list[tuple[bool, bool]] = []
    monkeypatch.setattr(fs, "sync_tree", lambda p, **_opened: flushes.append((dest.exists(), (Path(p) / "MEMORY.md").exists())))
    load_bundle(str(car), out_dir=dest)
    assert flushes == [(False, True)]
    assert (dest / "MEMORY.md").is_file()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="names an open descriptor through /proc")
def test_no_loaded_memory_file_is_fsynced_on_its_own(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    car = build_bundle(tree, tmp_path / "b.car", options=BuildOptions(created=CREATED)).car
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            synced.append(os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    load_bundle(str(car), out_dir=tmp_path / "out")
    loaded = {p.name for p in (tmp_path / "out").rglob("*") if p.is_file()}
    assert len(loaded) >= 5 and not loaded & set(synced)
