"""``_fs.TreeFiles``: a load's files written into its private temp tree through folders opened once (issue 37, a
first follow's 10,090 files): the same bytes, folders and modes as ``open(path, "wb")`` gave, never through a link."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from bundlekit import _fs


def test_files_land_in_their_folders_with_their_bytes_and_the_umask_mode(tmp_path: Path) -> None:
    out = _fs.TreeFiles(tmp_path)
    try:
        out.write("a.md", b"alpha\n")
        out.write("timeline/2026-01-01.jsonl", b"{}\n")
        out.write("timeline/2026-01-02.jsonl", b"")
        out.write("deep/er/x.bin", bytes(range(256)) * 4096)
    finally:
        out.close()
    assert (tmp_path / "a.md").read_bytes() == b"alpha\n"
    assert (tmp_path / "timeline" / "2026-01-01.jsonl").read_bytes() == b"{}\n"
    assert (tmp_path / "timeline" / "2026-01-02.jsonl").read_bytes() == b""
    assert (tmp_path / "deep" / "er" / "x.bin").read_bytes() == bytes(range(256)) * 4096
    probe = tmp_path / "probe"
    probe.write_bytes(b"")  # what a plain open() makes here
    assert stat.S_IMODE((tmp_path / "a.md").stat().st_mode) == stat.S_IMODE(probe.stat().st_mode)


def test_a_name_written_twice_holds_the_second_bytes(tmp_path: Path) -> None:
    out = _fs.TreeFiles(tmp_path)
    try:
        out.write("a.md", b"a longer first text\n")
        out.write("a.md", b"short\n")
    finally:
        out.close()
    assert (tmp_path / "a.md").read_bytes() == b"short\n"


def test_a_symbolic_link_at_a_name_is_not_written_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_bytes(b"kept\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.md").symlink_to(outside)
    out = _fs.TreeFiles(tree)
    try:
        with pytest.raises(OSError):
            out.write("a.md", b"through the link\n")
    finally:
        out.close()
    assert outside.read_bytes() == b"kept\n"


def test_close_closes_every_folder_opened(tmp_path: Path) -> None:
    before = len(os.listdir("/proc/self/fd")) if Path("/proc/self/fd").is_dir() else None
    out = _fs.TreeFiles(tmp_path)
    for day in range(5):
        out.write(f"d{day}/f", b"x")
    out.close()
    out.close()  # idempotent
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) == before


@pytest.mark.parametrize("parent", ["timeline", "deep/er"])
def test_a_symbolic_link_at_a_folder_of_the_tree_is_not_written_through(tmp_path: Path, parent: str) -> None:
    # Found by attack (issue 37 round): the folder was made with mkdir(exist_ok=True) and opened by path, both
    # following a link planted in the temp tree, so a load wrote its files outside it.
    outside = tmp_path / "outside"
    outside.mkdir()
    tree = tmp_path / "tree"
    (tree / parent).parent.mkdir(parents=True)
    (tree / parent).symlink_to(outside)
    out = _fs.TreeFiles(tree)
    try:
        with pytest.raises(OSError):
            out.write(f"{parent}/2026-01-01.jsonl", b"through the link\n")
    finally:
        out.close()
    assert list(outside.iterdir()) == []
