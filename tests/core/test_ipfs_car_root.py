"""The ipfs-car profile roots a pack at the deepest directory holding every file, as `ipfs-car pack` does."""

from __future__ import annotations

from pathlib import Path

from bundlekit.unixfs.importer import NullSink, import_path
from bundlekit.unixfs.profiles import get_profile


def _root(path: Path, profile: str, hidden: bool = False) -> bytes:
    return import_path(path, NullSink(), get_profile(profile), hidden=hidden).root


def _write(path: Path, data: bytes = b"x") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_every_file_under_one_subdirectory_roots_there(tmp_path: Path) -> None:
    _write(tmp_path / "top" / "sub" / "deeper" / "f", b"f")
    _write(tmp_path / "top" / "sub" / "g", b"g")
    (tmp_path / "top" / "empty").mkdir()
    _write(tmp_path / "top" / ".hidden", b"h")
    assert _root(tmp_path / "top", "ipfs-car") == _root(tmp_path / "top" / "sub", "ipfs-car")


def test_descends_through_several_single_directories(tmp_path: Path) -> None:
    _write(tmp_path / "top" / "a" / "b" / "c.txt", b"c")
    assert _root(tmp_path / "top", "ipfs-car") == _root(tmp_path / "top" / "a" / "b", "ipfs-car")


def test_a_file_at_the_top_keeps_the_root(tmp_path: Path) -> None:
    _write(tmp_path / "top" / "sub" / "f", b"f")
    _write(tmp_path / "top" / "readme", b"r")
    assert _root(tmp_path / "top", "ipfs-car") != _root(tmp_path / "top" / "sub", "ipfs-car")


def test_hidden_files_count_with_hidden(tmp_path: Path) -> None:
    _write(tmp_path / "top" / "sub" / "f", b"f")
    _write(tmp_path / "top" / ".config", b"c")
    assert _root(tmp_path / "top", "ipfs-car", hidden=True) != _root(tmp_path / "top" / "sub", "ipfs-car", hidden=True)


def test_other_profiles_always_root_at_the_directory(tmp_path: Path) -> None:
    _write(tmp_path / "top" / "sub" / "f", b"f")
    for profile in ("unixfs-v1-2025", "unixfs-v0-2015", "kubo-cidv1"):
        assert _root(tmp_path / "top", profile) != _root(tmp_path / "top" / "sub", profile)
